//! GraphQL on GitHub's schema (#34, item 1): the same world REST answers, read and written
//! through `POST /graphql`, with GitHub's connections, global ids, errors and limits.

mod common;
use common::*;
use pome_twin_sdk::{Call, Method, Request, Twin, Value, json};
use twin_github::World;

/// One GraphQL request at `path`: the status, the body, the tape action, and how many changes it recorded.
fn gql_at(w: &mut World, path: &str, query: &str, vars: Value) -> (u16, Value, Option<String>, usize) {
    let mut req = Request::new(Method::Post, path);
    req.base_url = "http://h/s/ses_1/github".into();
    req = req.with_json(&json!({"query": query, "variables": vars}));
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    (r.status, r.json_body(), c.action.clone(), c.changes.len())
}

fn gql(w: &mut World, query: &str, vars: Value) -> Value {
    let (s, v, _, _) = gql_at(w, "/graphql", query, vars);
    assert_eq!(s, 200, "{v}");
    v
}

const REPO: &str = r#"query($o: String!, $n: String!) { repository(owner: $o, name: $n) { id databaseId nameWithOwner } }"#;

#[test]
fn viewer_is_the_user_rest_answers_for_user() {
    let mut w = world();
    let (_, rest) = get(&mut w, "/user");
    let v = gql(&mut w, "{ viewer { login id databaseId isViewer } }", json!({}));
    assert_eq!(v["data"]["viewer"], json!({"login": rest["login"], "id": rest["node_id"], "databaseId": rest["id"], "isViewer": true}));
}

#[test]
fn repository_ids_are_rests_node_ids() {
    let mut w = world();
    let (_, rest) = get(&mut w, "/repos/acme/api");
    let v = gql(&mut w, REPO, json!({"o": "acme", "n": "api"}));
    assert_eq!(v["data"]["repository"], json!({"id": rest["node_id"], "databaseId": rest["id"], "nameWithOwner": "acme/api"}));
}

#[test]
fn issues_connection_counts_and_titles_match_rest() {
    let mut w = world();
    let (_, rest) = get(&mut w, "/repos/acme/api/issues?state=all&per_page=100");
    let rest_issues: Vec<&Value> = rest.as_array().unwrap().iter().filter(|i| i.get("pull_request").is_none()).collect();
    let v = gql(&mut w, r#"{ repository(owner: "acme", name: "api") { issues(first: 100) { totalCount nodes { number title id state } } } }"#, json!({}));
    let conn = &v["data"]["repository"]["issues"];
    assert_eq!(conn["totalCount"], rest_issues.len());
    for i in &rest_issues {
        let node = conn["nodes"].as_array().unwrap().iter().find(|n| n["number"] == i["number"]).expect("every REST issue is a node");
        assert_eq!(node["title"], i["title"]);
        assert_eq!(node["id"], i["node_id"]);
        assert_eq!(node["state"], i["state"].as_str().unwrap().to_uppercase());
    }
    let open = gql(&mut w, r#"{ repository(owner: "acme", name: "api") { issues(states: OPEN) { totalCount } } }"#, json!({}));
    let rest_open = rest_issues.iter().filter(|i| i["state"] == "open").count();
    assert_eq!(open["data"]["repository"]["issues"]["totalCount"], rest_open);
}

#[test]
fn pages_follow_cursors_forwards_and_backwards() {
    let mut w = world();
    let q = r#"query($after: String, $before: String, $first: Int, $last: Int) { repository(owner: "acme", name: "api") { issues(first: $first, after: $after, last: $last, before: $before) { nodes { number } edges { cursor node { ... on Issue { number } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }"#;
    let one = gql(&mut w, q, json!({"first": 1}));
    let c = &one["data"]["repository"]["issues"];
    assert_eq!(c["nodes"], json!([{"number": 1}]));
    assert_eq!(c["pageInfo"]["hasNextPage"], true);
    assert_eq!(c["pageInfo"]["hasPreviousPage"], false);
    assert_eq!(c["edges"][0]["cursor"], c["pageInfo"]["endCursor"]);
    let two = gql(&mut w, q, json!({"first": 1, "after": c["pageInfo"]["endCursor"]}));
    let c2 = &two["data"]["repository"]["issues"];
    assert_eq!(c2["nodes"], json!([{"number": 2}]));
    assert_eq!(c2["pageInfo"]["hasPreviousPage"], true);
    let back = gql(&mut w, q, json!({"last": 1, "before": c2["pageInfo"]["startCursor"]}));
    assert_eq!(back["data"]["repository"]["issues"]["nodes"], json!([{"number": 1}]));
    let bad = gql(&mut w, q, json!({"first": 1, "after": "nonsense"}));
    assert_eq!(bad["errors"][0]["type"], "INVALID_CURSOR_ARGUMENTS");
}

#[test]
fn node_and_nodes_resolve_rest_node_ids() {
    let mut w = world();
    let (_, issue) = get(&mut w, "/repos/acme/api/issues/1");
    let (_, labels) = get(&mut w, "/repos/acme/api/labels");
    let (_, repo) = get(&mut w, "/repos/acme/api");
    let v = gql(&mut w, r#"query($id: ID!) { node(id: $id) { __typename id ... on Issue { number title } } }"#, json!({"id": issue["node_id"]}));
    assert_eq!(v["data"]["node"], json!({"__typename": "Issue", "id": issue["node_id"], "number": 1, "title": issue["title"]}));
    let ids = json!([labels[0]["node_id"], repo["node_id"], "bm9wZQ=="]);
    let v = gql(&mut w, r#"query($ids: [ID!]!) { nodes(ids: $ids) { __typename ... on Label { name } ... on Repository { name } } }"#, json!({"ids": ids}));
    assert_eq!(v["data"]["nodes"], json!([{"__typename": "Label", "name": labels[0]["name"]}, {"__typename": "Repository", "name": "api"}, null]));
    let v = gql(&mut w, r#"{ node(id: "bm9wZQ==") { id } }"#, json!({}));
    assert_eq!(v["errors"][0]["type"], "NOT_FOUND");
    assert_eq!(v["data"], json!({"node": null}));
}

#[test]
fn pull_requests_carry_their_refs_and_rest_ids() {
    let mut w = world();
    let (_, pulls) = get(&mut w, "/repos/acme/api/pulls?state=all");
    let p = &pulls[0];
    let v = gql(&mut w, r#"query($n: Int!) { repository(owner: "acme", name: "api") { pullRequest(number: $n) { id number title headRefName baseRefName state isDraft } pullRequests(first: 10) { totalCount } } }"#, json!({"n": p["number"]}));
    let pr = &v["data"]["repository"]["pullRequest"];
    assert_eq!(pr["id"], p["node_id"]);
    assert_eq!(pr["headRefName"], p["head"]["ref"]);
    assert_eq!(pr["baseRefName"], p["base"]["ref"]);
    assert_eq!(pr["title"], p["title"]);
    assert_eq!(v["data"]["repository"]["pullRequests"]["totalCount"], pulls.as_array().unwrap().len());
}

#[test]
fn a_missing_repository_is_githubs_not_found() {
    let mut w = world();
    let v = gql(&mut w, "{\n  repository(owner: \"acme\", name: \"nope\") { id }\n}", json!({}));
    assert_eq!(
        v,
        json!({"errors": [{"type": "NOT_FOUND", "path": ["repository"], "locations": [{"line": 2, "column": 3}], "message": "Could not resolve to a Repository with the name 'acme/nope'."}], "data": {"repository": null}})
    );
    let v = gql(&mut w, r#"{ repository(owner: "acme", name: "api") { issue(number: 999) { id } } }"#, json!({}));
    assert_eq!(v["errors"][0]["message"], "Could not resolve to an Issue with the number of 999.");
    assert_eq!(v["errors"][0]["path"], json!(["repository", "issue"]));
    assert_eq!(v["data"], json!({"repository": {"issue": null}}));
}

#[test]
fn validation_errors_are_githubs() {
    let mut w = world();
    let v = gql(&mut w, r#"{ repository(owner: "acme", name: "api") { foo } }"#, json!({}));
    assert_eq!(
        v,
        json!({"errors": [{"path": ["query"], "extensions": {"code": "undefinedField", "typeName": "Repository", "fieldName": "foo"}, "locations": [{"line": 1, "column": 44}], "message": "Field 'foo' doesn't exist on type 'Repository'"}]})
    );
    let v = gql(&mut w, "{ repository { id } }", json!({}));
    assert_eq!(v["errors"].as_array().unwrap().len(), 1);
    assert_eq!(v["errors"][0]["extensions"]["code"], "missingRequiredArguments");
    assert!(v["errors"][0]["message"].as_str().unwrap().starts_with("Field 'repository' is missing required arguments: "), "{v}");
    assert!(v.get("data").is_none());
}

#[test]
fn connections_need_first_or_last_up_to_100() {
    let mut w = world();
    let v = gql(&mut w, r#"{ repository(owner: "acme", name: "api") { issues { nodes { id } } } }"#, json!({}));
    assert_eq!(
        v,
        json!({"data": null, "errors": [{"type": "MISSING_PAGINATION_BOUNDARIES", "path": ["repository", "issues"], "locations": [{"line": 1, "column": 44}], "message": "You must provide a `first` or `last` value to properly paginate the `issues` connection."}]})
    );
    let v = gql(&mut w, r#"{ repository(owner: "acme", name: "api") { issues(first: 101) { nodes { id } } } }"#, json!({}));
    assert_eq!(v["errors"][0]["type"], "EXCESSIVE_PAGINATION");
    assert_eq!(v["errors"][0]["message"], "Requesting 101 records on the `issues` connection exceeds the `first` limit of 100 records.");
    let v = gql(&mut w, r#"{ repository(owner: "acme", name: "api") { issues(last: 100) { totalCount nodes { id } } } }"#, json!({}));
    assert!(v.get("errors").is_none(), "{v}");
}

#[test]
fn more_than_500000_possible_nodes_is_refused_before_running() {
    let mut w = world();
    let q = r#"{ viewer { repositories(first: 100) { nodes { issues(first: 100) { nodes { labels(first: 51) { nodes { name } } } } } } } }"#;
    let v = gql(&mut w, q, json!({}));
    assert_eq!(
        v,
        json!({"errors": [{"type": "MAX_NODE_LIMIT_EXCEEDED", "message": "By the time this query traverses to the labels connection, it is requesting up to 520,100 possible nodes which exceeds the maximum limit of 500,000."}]})
    );
    let ok = q.replace("first: 51", "first: 48");
    assert!(gql(&mut w, &ok, json!({})).get("errors").is_none());
}

#[test]
fn rate_limit_reports_the_querys_cost() {
    let mut w = world();
    let v = gql(&mut w, "{ rateLimit { limit cost remaining used } }", json!({}));
    assert_eq!(v["data"]["rateLimit"], json!({"limit": 5000, "cost": 1, "remaining": 4999, "used": 1}));
    // 1 + 100 issue pages: 101 requests, 2 points.
    let v = gql(&mut w, r#"{ rateLimit { cost } viewer { repositories(first: 100) { nodes { issues(first: 10) { totalCount } } } } }"#, json!({}));
    assert_eq!(v["data"]["rateLimit"]["cost"], 2);
}

#[test]
fn search_finds_what_rest_search_finds() {
    let mut w = world();
    let (_, rest) = get(&mut w, "/search/issues?q=repo:acme/api+is:open");
    let v = gql(&mut w, r#"{ search(query: "repo:acme/api is:open", type: ISSUE, first: 10) { issueCount nodes { ... on Issue { number } ... on PullRequest { number } } } }"#, json!({}));
    assert_eq!(v["data"]["search"]["issueCount"], rest["total_count"]);
    let numbers: Vec<&Value> = rest["items"].as_array().unwrap().iter().map(|i| &i["number"]).collect();
    let got: Vec<&Value> = v["data"]["search"]["nodes"].as_array().unwrap().iter().map(|n| &n["number"]).collect();
    assert_eq!(got, numbers);
}

#[test]
fn enterprise_path_serves_the_same_api() {
    let mut w = world();
    let (s, v, action, _) = gql_at(&mut w, "/api/graphql", "{ viewer { login } }", json!({}));
    assert_eq!((s, action.as_deref()), (200, Some("graphql.enterprise_post")));
    assert_eq!(v["data"]["viewer"]["login"], "pome-agent");
}

#[test]
fn mutations_write_the_world_as_rest_does_and_tape_the_rest_action() {
    let mut w = world();
    let (_, repo) = get(&mut w, "/repos/acme/api");
    let (_, labels) = get(&mut w, "/repos/acme/api/labels");
    let create = r#"mutation($r: ID!, $l: [ID!]) { createIssue(input: {repositoryId: $r, title: "From GraphQL", body: "b", labelIds: $l, clientMutationId: "x1"}) { clientMutationId issue { id number title labels(first: 5) { nodes { name } } } } }"#;
    let (s, v, action, changes) = gql_at(&mut w, "/graphql", create, json!({"r": repo["node_id"], "l": [labels[0]["node_id"]]}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(action.as_deref(), Some("issues.create"));
    assert!(changes > 0);
    let issue = &v["data"]["createIssue"]["issue"];
    assert_eq!(v["data"]["createIssue"]["clientMutationId"], "x1");
    let n = issue["number"].as_u64().unwrap();
    let (_, rest) = get(&mut w, &format!("/repos/acme/api/issues/{n}"));
    assert_eq!(rest["title"], "From GraphQL");
    assert_eq!(rest["node_id"], issue["id"]);
    assert_eq!(rest["labels"][0]["name"], labels[0]["name"]);

    let comment = r#"mutation($id: ID!) { addComment(input: {subjectId: $id, body: "hello"}) { commentEdge { node { id body author { login } } } subject { id } } }"#;
    let (_, v, action, _) = gql_at(&mut w, "/graphql", comment, json!({"id": issue["id"]}));
    assert_eq!(action.as_deref(), Some("issues.create_comment"));
    let (_, comments) = get(&mut w, &format!("/repos/acme/api/issues/{n}/comments"));
    assert_eq!(comments[0]["body"], "hello");
    assert_eq!(v["data"]["addComment"]["commentEdge"]["node"]["id"], comments[0]["node_id"]);

    let close = r#"mutation($id: ID!) { closeIssue(input: {issueId: $id, stateReason: NOT_PLANNED}) { issue { state stateReason closed } } }"#;
    let (_, v, action, _) = gql_at(&mut w, "/graphql", close, json!({"id": issue["id"]}));
    assert_eq!(action.as_deref(), Some("issues.update"));
    assert_eq!(v["data"]["closeIssue"]["issue"], json!({"state": "CLOSED", "stateReason": "NOT_PLANNED", "closed": true}));
    assert_eq!(get(&mut w, &format!("/repos/acme/api/issues/{n}")).1["state_reason"], "not_planned");
    let reopen = r#"mutation($id: ID!) { reopenIssue(input: {issueId: $id}) { issue { state } } }"#;
    assert_eq!(gql(&mut w, reopen, json!({"id": issue["id"]}))["data"]["reopenIssue"]["issue"]["state"], "OPEN");

    let update = r#"mutation($id: ID!) { updateIssue(input: {id: $id, title: "Renamed"}) { issue { title } } }"#;
    assert_eq!(gql(&mut w, update, json!({"id": issue["id"]}))["data"]["updateIssue"]["issue"]["title"], "Renamed");
    let add = r#"mutation($id: ID!, $l: [ID!]!) { addLabelsToLabelable(input: {labelableId: $id, labelIds: $l}) { labelable { ... on Issue { labels(first: 10) { totalCount } } } } }"#;
    let (_, v, action, _) = gql_at(&mut w, "/graphql", add, json!({"id": issue["id"], "l": [labels[1]["node_id"]]}));
    assert_eq!(action.as_deref(), Some("issues.add_labels"));
    assert_eq!(v["data"]["addLabelsToLabelable"]["labelable"]["labels"]["totalCount"], 2);
    assert_eq!(get(&mut w, &format!("/repos/acme/api/issues/{n}")).1["labels"].as_array().unwrap().len(), 2);
}

#[test]
fn a_mutation_on_a_missing_node_changes_nothing() {
    let mut w = world();
    let before = w.state_json();
    let (_, v, action, changes) = gql_at(&mut w, "/graphql", r#"mutation { addComment(input: {subjectId: "bm9wZQ==", body: "x"}) { subject { id } } }"#, json!({}));
    assert_eq!(v["errors"][0]["type"], "NOT_FOUND");
    assert_eq!(v["data"], json!({"addComment": null}));
    assert_eq!((action.as_deref(), changes), (Some("graphql.post"), 0));
    assert_eq!(w.state_json(), before);
}

/// GitHub's published schema is valid but for one upstream slip: two fields of
/// `EnterpriseOwnerInfo` are declared twice (identically). The engine keeps the first.
#[test]
fn github_schema_parses_and_validates_but_for_its_duplicate_fields() {
    let errs = pome_graphql::apollo_compiler::Schema::parse_and_validate(twin_github::graphql::TABLES.text, "schema.graphql").err().map(|e| e.errors).expect("the upstream duplicates");
    let messages: Vec<String> = errs.iter().map(|e| e.error.to_string()).collect();
    assert_eq!(
        messages,
        [
            "duplicate definitions for the `repositoryDeployKeySetting` field of object type `EnterpriseOwnerInfo`",
            "duplicate definitions for the `repositoryDeployKeySettingOrganizations` field of object type `EnterpriseOwnerInfo`"
        ]
    );
}

/// Codegen tools introspect: `__type` answers from GitHub's whole schema, descriptions included.
#[test]
fn introspection_answers_from_githubs_schema() {
    let mut w = world();
    let v = gql(&mut w, r#"{ __type(name: "Issue") { name kind description fields { name } } }"#, json!({}));
    let t = &v["data"]["__type"];
    assert_eq!((t["name"].as_str(), t["kind"].as_str()), (Some("Issue"), Some("OBJECT")));
    assert!(t["description"].as_str().unwrap().starts_with("An Issue is a place to discuss"), "{t}");
    let names: Vec<&str> = t["fields"].as_array().unwrap().iter().filter_map(|f| f["name"].as_str()).collect();
    for f in ["number", "title", "stateReason", "timelineItems"] {
        assert!(names.contains(&f), "{f} missing");
    }
}
