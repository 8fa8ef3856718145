//! Native tests: the twin's GraphQL behaviour, its seeds, its checks, run without WebAssembly.

use pome_twin_sdk::{Call, CheckWorld, Method, Params, Request, Twin, Value, json};

use crate::World;

const TASK24: &str = include_str!("../../../tests/tasks-compat/bundled/24-linear-issue-triage.seed.json");
const TASK25: &str = include_str!("../../../tests/tasks-compat/bundled/25-linear-comment-label-triage.seed.json");
const TASK26: &str = include_str!("../../../tests/tasks-compat/bundled/26-github-linear-handoff.seed.json");
const TASK24_MD: &str = include_str!("../../../tests/tasks-compat/bundled/24-linear-issue-triage.md");
const TASK25_MD: &str = include_str!("../../../tests/tasks-compat/bundled/25-linear-comment-label-triage.md");
const TASK26_MD: &str = include_str!("../../../tests/tasks-compat/bundled/26-github-linear-handoff.md");
const SDK_DOCS: &str = include_str!("../../../tests/specs/linear/sdk-documents.graphql");

fn seeded(text: &str) -> World {
    let v: Value = serde_json::from_str(text).unwrap();
    let v = v.get("linear").cloned().unwrap_or(v);
    World::init(Some(v)).unwrap()
}

fn post(w: &mut World, query: &str, vars: Value) -> (u16, Value, Call) {
    let req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": query, "variables": vars}));
    let mut call = Call::new(req);
    let resp = World::router().dispatch(w, &mut call);
    (resp.status, resp.json_body(), call)
}

fn data(w: &mut World, query: &str, vars: Value) -> Value {
    let (status, body, _) = post(w, query, vars);
    assert_eq!(status, 200, "{body}");
    assert!(body.get("errors").is_none(), "{body}");
    body["data"].clone()
}

fn check(seed: &World, fin: &World, sentence: &str) -> bool {
    let decls = World::checks();
    let d = decls.iter().find(|d| d.fits(sentence)).unwrap_or_else(|| panic!("no check fits {sentence:?}"));
    let params: Params = d.bind(sentence).unwrap();
    d.validate(&params).unwrap();
    let (s, f) = (seed.state(), fin.state());
    let world = CheckWorld { seed: &s, state: &f, tape: &[] };
    World::evaluate_check(&d.id, &params, &world).unwrap().holds
}

fn criteria(md: &str) -> Vec<String> {
    md.lines()
        .filter_map(|l| l.strip_prefix("- [code:linear] ").or_else(|| l.strip_prefix("- [code] ")))
        .map(String::from)
        .collect()
}

#[test]
fn the_bundled_linear_tasks_seed_and_bind_every_code_criterion() {
    for (seed, md) in [(TASK24, TASK24_MD), (TASK25, TASK25_MD), (TASK26, TASK26_MD)] {
        seeded(seed);
        let cs = criteria(md);
        assert!(!cs.is_empty());
        for c in cs {
            assert!(World::checks().iter().any(|d| d.fits(&c)), "{c}");
        }
    }
}

#[test]
fn every_type_is_found_by_name_and_no_other() {
    for t in crate::tables::TYPES {
        assert!(std::ptr::eq(crate::tables::ty(t.name()).unwrap(), t), "{}", t.name());
    }
    let slots = crate::tables::TYPE_SLOTS.iter().filter(|s| **s != 0).count();
    assert_eq!(slots, crate::tables::TYPES.len(), "every type has one slot");
    for missing in ["", "issue", "Issues", "IssueX", "Query "] {
        assert!(crate::tables::ty(missing).is_none(), "{missing}");
    }
}

#[test]
fn a_bad_seed_names_its_path() {
    let mut v: Value = serde_json::from_str(TASK24).unwrap();
    v["issues"][1]["state"] = json!("Nowhere");
    let e = World::init(Some(v.clone())).unwrap_err();
    assert!(e.starts_with("seed.issues[1].state"), "{e}");
    v["issues"][1]["state"] = json!("Todo");
    v["teams"][0]["colour"] = json!("red");
    let e = World::init(Some(v)).unwrap_err();
    assert!(e.starts_with("seed.teams[0].colour: unknown field"), "{e}");
}

const ISSUES: &str = "query($f: IssueFilter, $first: Int, $after: String) { issues(filter: $f, first: $first, after: $after) { nodes { id identifier title state { name type } assignee { email } labels { nodes { name } } } pageInfo { hasNextPage endCursor } } }";

#[test]
fn task_24_a_good_agent_passes_and_one_that_skips_the_state_change_fails() {
    let seed = seeded(TASK24);
    let mut w = seed.clone();
    let d = data(&mut w, ISSUES, json!({"f": {"team": {"key": {"eq": "ENG"}}, "state": {"type": {"eq": "backlog"}}}}));
    let nodes = d["issues"]["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0]["title"], "Triage inbox for agent eval");
    assert_eq!(nodes[0]["identifier"], "ENG-1");
    let issue = nodes[0]["id"].as_str().unwrap().to_string();
    let mut bad = w.clone();
    let d = data(&mut w, "mutation($id: String!, $s: String!) { issueUpdate(id: $id, input: {stateId: $s}) { success lastSyncId issue { state { name } } } }", json!({"id": "ENG-1", "s": "state_progress"}));
    assert_eq!(d["issueUpdate"]["issue"]["state"]["name"], "In Progress");
    assert!(d["issueUpdate"]["lastSyncId"].as_f64().unwrap() >= 1.0);
    let c = "mutation($i: CommentCreateInput!) { commentCreate(input: $i) { success comment { id body issue { identifier } } } }";
    data(&mut w, c, json!({"i": {"issueId": issue, "body": "I am on it: triage starts now."}}));
    data(&mut bad, c, json!({"i": {"issueId": issue, "body": "Looking at this triage item."}}));
    for sentence in criteria(TASK24_MD) {
        assert!(check(&seed, &w, &sentence), "good agent fails {sentence}");
    }
    assert!(!check(&seed, &bad, "Issue \"Triage inbox for agent eval\" in `ENG` is in state \"In Progress\""));
    assert!(check(&seed, &bad, "A comment on issue \"Triage inbox for agent eval\" in `ENG` contains \"triage\""));
    assert!(!check(&seed, &seed, "A comment on issue \"Triage inbox for agent eval\" in `ENG` contains \"triage\""));
}

#[test]
fn task_25_threaded_reply_label_and_estimate() {
    let seed = seeded(TASK25);
    let mut w = seed.clone();
    let d = data(&mut w, "{ issues(filter: {title: {eq: \"Needs comment and label triage\"}}) { nodes { id comments { nodes { id body parent { id } } } } } }", json!({}));
    let issue = d["issues"]["nodes"][0]["id"].as_str().unwrap().to_string();
    let root = d["issues"]["nodes"][0]["comments"]["nodes"][0]["id"].as_str().unwrap().to_string();
    let mut flat = w.clone();
    let d = data(&mut w, "mutation($i: CommentCreateInput!) { commentCreate(input: $i) { comment { parent { id } } } }", json!({"i": {"issueId": issue, "parentId": root, "body": "Triaging now."}}));
    assert_eq!(d["commentCreate"]["comment"]["parent"]["id"], root.as_str());
    data(&mut flat, "mutation($i: CommentCreateInput!) { commentCreate(input: $i) { success } }", json!({"i": {"issueId": issue, "body": "Triaging now."}}));
    let d = data(&mut w, "mutation { issueLabelCreate(input: {name: \"Needs triage\", teamId: \"team_eng\"}) { issueLabel { id } } }", json!({}));
    let label = d["issueLabelCreate"]["issueLabel"]["id"].as_str().unwrap().to_string();
    let (_, dup, _) = post(&mut w, "mutation { issueLabelCreate(input: {name: \"needs triage\", teamId: \"team_eng\"}) { success } }", json!({}));
    assert_eq!(dup["errors"][0]["extensions"]["type"], "invalid input");
    data(&mut w, "mutation($id: String!, $l: [String!]) { issueUpdate(id: $id, input: {addedLabelIds: $l, estimate: 2}) { success } }", json!({"id": issue, "l": [label]}));
    for sentence in criteria(TASK25_MD) {
        assert!(check(&seed, &w, &sentence), "good agent fails {sentence}");
    }
    assert!(!check(&seed, &flat, "A threaded reply to a seeded comment exists on issue \"Needs comment and label triage\" in `ENG`"));
    let d = data(&mut w, "{ issue(id: \"ENG-1\") { labels { nodes { name } } estimate history { nodes { addedLabelIds toEstimate } } } }", json!({}));
    assert_eq!(d["issue"]["labels"]["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(d["issue"]["estimate"], 2.0);
}

#[test]
fn task_26_create_with_state_and_label_then_comment() {
    let seed = seeded(TASK26);
    let mut w = seed.clone();
    let d = data(
        &mut w,
        "mutation($i: IssueCreateInput!) { issueCreate(input: $i) { success lastSyncId issue { id identifier number url branchName state { name } team { key } labels { nodes { name } } } } }",
        json!({"i": {"teamId": "team_eng", "title": "Orders 500 after deploy", "stateId": "state_progress", "labelIds": ["label_agent"]}}),
    );
    let i = &d["issueCreate"]["issue"];
    assert_eq!(i["identifier"], "ENG-1");
    assert_eq!(i["number"], 1.0);
    assert_eq!(i["url"], "http://twin.test/pome-twin/issue/ENG-1/orders-500-after-deploy");
    assert_eq!(i["branchName"], "admin/eng-1-orders-500-after-deploy");
    let id = i["id"].as_str().unwrap().to_string();
    assert!(check(&seed, &w, "No issue was created in `ENG`") == false);
    data(&mut w, "mutation($id: String!) { commentCreate(input: {issueId: $id, body: \"Tracks GitHub acme/api#1\"}) { success } }", json!({"id": id}));
    for sentence in criteria(TASK26_MD) {
        assert!(check(&seed, &w, &sentence), "good agent fails {sentence}");
    }
    assert!(check(&seed, &seed, "No issue was created in `ENG`"));
    assert!(!check(&seed, &seed, "An issue titled \"Orders 500 after deploy\" exists in `ENG`"));
}

#[test]
fn the_extra_checks_hold_and_fail() {
    let seed = seeded(TASK24);
    let mut w = seed.clone();
    data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Child\", parentId: \"ENG-1\", priority: 1, assigneeId: \"user_admin\"}) { success } }", json!({}));
    assert!(check(&seed, &w, "Issue \"Child\" in `ENG` is a sub-issue of \"Triage inbox for agent eval\""));
    assert!(!check(&seed, &w, "Issue \"Child\" in `ENG` is a sub-issue of \"Ship Linear twin GraphQL surface\""));
    assert!(check(&seed, &w, "Issue \"Child\" in `ENG` has priority Urgent"));
    assert!(check(&seed, &w, "Issue \"Child\" in `ENG` has priority 1"));
    assert!(!check(&seed, &w, "Issue \"Child\" in `ENG` has priority low"));
    assert!(check(&seed, &w, "Issue \"Child\" in `ENG` is assigned to admin@pome-twin.test"));
    assert!(!check(&seed, &w, "Issue \"Child\" in `ENG` is assigned to Dev"));
    assert!(!check(&seed, &w, "Issue \"Child\" in `ENG` is unassigned"));
    assert!(check(&seed, &w, "Issue \"Triage inbox for agent eval\" in `ENG` was not closed"));
    data(&mut w, "mutation { issueUpdate(id: \"ENG-1\", input: {stateId: \"state_done\"}) { success } }", json!({}));
    assert!(!check(&seed, &w, "Issue \"Triage inbox for agent eval\" in `ENG` was not closed"));
    data(&mut w, "mutation { projectCreate(input: {name: \"Apollo\", teamIds: [\"team_eng\"]}) { project { id } } }", json!({}));
    let pid = data(&mut w, "{ projects { nodes { id name status { name } } } }", json!({}))["projects"]["nodes"][0]["id"].as_str().unwrap().to_string();
    data(&mut w, "mutation($p: String) { issueUpdate(id: \"ENG-3\", input: {projectId: $p}) { success } }", json!({"p": pid}));
    assert!(check(&seed, &w, "Issue \"Child\" in `ENG` is in project \"Apollo\""));
    assert!(!check(&seed, &w, "Issue \"Triage inbox for agent eval\" in `ENG` is in project \"Apollo\""));
}

#[test]
fn validation_errors_come_before_anything_runs_in_linear_shape() {
    let mut w = seeded(TASK24);
    let (status, body, call) = post(&mut w, "{ issues { nodes { nope } } }", json!({}));
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED");
    assert!(body["errors"].as_array().unwrap().iter().any(|e| e["message"] == "Cannot query field \"nope\" on type \"Issue\"."), "{body}");
    assert!(!call.unsupported);
    let (status, body, _) = post(&mut w, "query($id: String!) { issue(id: $id) { id } }", json!({}));
    assert_eq!(status, 400, "{body}");
    let (status, body, _) = post(&mut w, "{ issues { ", json!({}));
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["extensions"]["code"], "GRAPHQL_PARSE_FAILED");
    let (_, body, _) = post(&mut w, "{ issue(id: \"nope\") { id } }", json!({}));
    assert_eq!(body["errors"][0]["extensions"]["type"], "invalid input");
    assert_eq!(body["errors"][0]["message"], "Entity not found: Issue");
}

#[test]
fn a_root_field_the_twin_does_not_serve_is_an_error_and_marks_the_call() {
    let mut w = seeded(TASK24);
    let (_, body, call) = post(&mut w, "{ auditEntryTypes { type } }", json!({}));
    assert!(call.unsupported);
    assert_eq!(body["errors"][0]["extensions"]["code"], "UNSUPPORTED");
    assert!(body["errors"][0]["message"].as_str().unwrap().contains("Query.auditEntryTypes"));
}

#[test]
fn fragments_aliases_directives_and_typename() {
    let mut w = seeded(TASK24);
    let q = "fragment F on Issue { title } query($skip: Boolean = true) { a: issue(id: \"ENG-1\") { __typename ...F state { ... on WorkflowState { name } } assignee @skip(if: $skip) { id } } b: viewer { isMe name } }";
    let d = data(&mut w, q, json!({}));
    assert_eq!(d["a"]["__typename"], "Issue");
    assert_eq!(d["a"]["title"], "Triage inbox for agent eval");
    assert_eq!(d["a"]["state"]["name"], "Backlog");
    assert!(d["a"].get("assignee").is_none());
    assert_eq!(d["b"]["isMe"], true);
    let d = data(&mut w, "{ __schema { queryType { name } types { name } } __type(name: \"Issue\") { fields { name } } }", json!({}));
    assert_eq!(d["__schema"]["queryType"]["name"], "Query");
    assert!(d["__schema"]["types"].as_array().unwrap().len() > 500);
}

/// Fields merged from two fragments are planned by every selection merged into them: the
/// same field merged with different partners in two places selects what each place merges.
#[test]
fn a_field_merged_from_fragments_selects_what_each_place_merges() {
    let mut w = seeded(TASK24);
    let q = "{ a: issue(id: \"ENG-1\") { ...A ...B } b: issue(id: \"ENG-1\") { ...A ...C } } fragment A on Issue { team { id } } fragment B on Issue { team { key } } fragment C on Issue { team { name } }";
    let d = data(&mut w, q, json!({}));
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&d["a"]["team"]), ["id", "key"], "{d}");
    assert_eq!(keys(&d["b"]["team"]), ["id", "name"], "{d}");
}

#[test]
fn connections_page_forward_and_back() {
    let mut w = seeded(TASK24);
    for i in 0..7 {
        data(&mut w, "mutation($t: String!) { issueCreate(input: {teamId: \"team_eng\", title: $t}) { success } }", json!({"t": format!("Bulk {i}")}));
    }
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let d = data(&mut w, ISSUES, json!({"first": 4, "after": after}));
        for n in d["issues"]["nodes"].as_array().unwrap() {
            seen.push(n["identifier"].as_str().unwrap().to_string());
        }
        if d["issues"]["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = d["issues"]["pageInfo"]["endCursor"].as_str().map(String::from);
    }
    assert_eq!(seen.len(), 9);
    assert_eq!(seen[0], "ENG-9", "newest first");
    let d = data(&mut w, "{ issues(last: 2) { nodes { identifier } pageInfo { hasPreviousPage hasNextPage } } }", json!({}));
    assert_eq!(d["issues"]["nodes"][1]["identifier"], "ENG-1");
    assert_eq!(d["issues"]["pageInfo"]["hasPreviousPage"], true);
}

/// A root connection walks its entities in their kept order and stops once the page is full;
/// it must list exactly what sorting every match lists: ties on `createdAt` broken by id,
/// archived issues left out, cursors honoured, and a write seen at once.
#[test]
fn a_root_connection_read_in_kept_order_lists_what_sorting_every_match_lists() {
    let states = ["Todo", "In Progress", "Done"];
    let issues: Vec<Value> = (0..40)
        .map(|i| {
            // Four issues share each creation time, so order among them is by id.
            let mut issue = json!({"team": "ENG", "title": format!("Issue {i}"), "state": states[i % 3], "createdAt": format!("2026-01-{:02}T00:00:00.000Z", 1 + i / 4)});
            if i % 7 == 0 {
                issue["archivedAt"] = json!("2026-02-01T00:00:00.000Z");
            }
            issue
        })
        .collect();
    let mut seed = crate::seed::default_seed();
    seed["issues"] = json!(issues);
    let mut w = World::init(Some(seed)).unwrap();
    let filter = json!({"state": {"type": {"neq": "completed"}}});
    let ids = |d: &Value| d["issues"]["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    // Paging backwards takes the path that tests and sorts every match.
    let everything = |w: &mut World, o: &str| {
        ids(&data(w, "query($f: IssueFilter, $o: PaginationOrderBy) { issues(filter: $f, last: 250, orderBy: $o) { nodes { id } } }", json!({"f": filter, "o": o})))
    };
    let paged = |w: &mut World, o: &str, first: usize| {
        let q = "query($f: IssueFilter, $first: Int, $after: String, $o: PaginationOrderBy) { issues(filter: $f, first: $first, after: $after, orderBy: $o) { nodes { id } pageInfo { hasNextPage hasPreviousPage endCursor } } }";
        let (mut seen, mut after) = (Vec::new(), Value::Null);
        loop {
            let d = data(w, q, json!({"f": filter, "first": first, "after": after, "o": o}));
            assert_eq!(d["issues"]["pageInfo"]["hasPreviousPage"], !after.is_null());
            seen.extend(ids(&d));
            if d["issues"]["pageInfo"]["hasNextPage"] != true {
                return seen;
            }
            after = d["issues"]["pageInfo"]["endCursor"].clone();
        }
    };
    let all = everything(&mut w, "createdAt");
    assert!(all.len() > 20, "a world worth paging: {}", all.len());
    for first in [1, 7, 50] {
        assert_eq!(paged(&mut w, "createdAt", first), all, "pages of {first}");
    }
    // A new issue comes first at once; an updated one comes first by `updatedAt`.
    let made = data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Newest\"}) { issue { id } } }", json!({}));
    let made = made["issueCreate"]["issue"]["id"].as_str().unwrap().to_string();
    let all = everything(&mut w, "createdAt");
    assert_eq!(all[0], made);
    assert_eq!(paged(&mut w, "createdAt", 7), all);
    let oldest = all.last().unwrap().clone();
    data(&mut w, "mutation($id: String!) { issueUpdate(id: $id, input: {title: \"Touched\"}) { success } }", json!({"id": oldest}));
    let by_update = everything(&mut w, "updatedAt");
    assert_eq!(by_update[0], oldest);
    assert_eq!(paged(&mut w, "updatedAt", 7), by_update);
}

/// Objects an earlier request of the same document rendered are copied into later answers
/// only while nothing they show has changed: the world, the acting user, the base URL, the
/// variables their selection reads, and the clock.
#[test]
fn a_rendered_object_is_reused_only_while_what_it_shows_is_unchanged() {
    use pome_twin_sdk::Auth;
    let mut seed = crate::seed::default_seed();
    seed["clock"] = json!("2026-07-21T00:00:00Z");
    seed["labels"] = json!([{"id": "label_bug", "name": "Bug"}, {"id": "label_feature", "name": "Feature"}]);
    seed["issues"] = json!([{"id": "issue_one", "team": "ENG", "title": "One", "state": "Todo", "assignee": "dev@pome-twin.test", "labels": ["Bug", "Feature"]}]);
    seed["tokens"] = json!([{"token": "lin_api_admin", "user": "user_admin"}, {"token": "lin_api_dev", "user": "user_dev"}]);
    let mut w = World::init(Some(seed)).unwrap();
    let ask = |w: &mut World, doc: &str, vars: Value, key: &str, base: &str| -> Value {
        let mut req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": doc, "variables": vars}));
        req.auth = Auth::Invalid;
        req.base_url = base.to_string();
        req.headers.push(("authorization".into(), key.into()));
        let resp = World::router().dispatch(w, &mut Call::new(req));
        let body = resp.json_body();
        assert!(body.get("errors").is_none(), "{body}");
        body["data"]["issues"]["nodes"][0].clone()
    };
    let here = "http://127.0.0.1:1/s/sb_a/linear";
    let doc = "query($f: IssueFilter) { issues(filter: $f, first: 3) { nodes { id title url assignee { isMe } } } }";
    let other = |n: u32| json!({"f": {"title": {"neq": format!("nothing {n}")}}});

    let first = ask(&mut w, doc, other(1), "lin_api_dev", here);
    assert_eq!((first["title"].as_str(), first["assignee"]["isMe"].as_bool()), (Some("One"), Some(true)));
    assert_eq!(ask(&mut w, doc, other(2), "lin_api_dev", here), first, "another filter, the same issue");

    // The acting user and the base URL.
    assert_eq!(ask(&mut w, doc, other(3), "lin_api_admin", here)["assignee"]["isMe"], false);
    let moved = ask(&mut w, doc, other(4), "lin_api_dev", "http://127.0.0.1:2/s/sb_b/linear");
    assert!(moved["url"].as_str().unwrap().starts_with("http://127.0.0.1:2/s/sb_b/linear/"), "{moved}");

    // A write.
    let renamed = "mutation { issueUpdate(id: \"issue_one\", input: {title: \"Renamed\"}) { success } }";
    let mut req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": renamed}));
    req.auth = Auth::Agent;
    World::router().dispatch(&mut w, &mut Call::new(req));
    assert_eq!(ask(&mut w, doc, other(5), "lin_api_dev", here)["title"], "Renamed");

    // A variable the object's own selection reads.
    let labels = "query($f: IssueFilter, $n: Int) { issues(filter: $f, first: 3) { nodes { id labels(first: $n) { nodes { name } } } } }";
    let count = |v: Value| v["labels"]["nodes"].as_array().unwrap().len();
    assert_eq!(count(ask(&mut w, labels, json!({"f": {}, "n": 1}), "lin_api_dev", here)), 1);
    assert_eq!(count(ask(&mut w, labels, json!({"f": {}, "n": 2}), "lin_api_dev", here)), 2);

    // The clock: a relative date inside the object, then a month later.
    let recent = "query($f: IssueFilter) { issues(filter: $f) { nodes { id team { issues(filter: {createdAt: {gt: \"-P1W\"}}) { nodes { id } } } } } }";
    let listed = |v: Value| v["team"]["issues"]["nodes"].as_array().unwrap().len();
    assert_eq!(listed(ask(&mut w, recent, other(6), "lin_api_dev", here)), 1);
    w.clock = Some("2026-08-21T00:00:00Z".into());
    w.clock_anchor_us = None;
    assert_eq!(listed(ask(&mut w, recent, other(7), "lin_api_dev", here)), 0, "a week before now no longer reaches the issue");
}

/// The memo holds 1 MiB per instance at most: past it, objects are rendered rather than
/// kept, and the answers are the same.
#[test]
fn the_memo_stops_keeping_at_its_budget_and_answers_the_same() {
    let mut seed = crate::seed::default_seed();
    let long = "x".repeat(10_000);
    seed["issues"] = json!((0..200).map(|i| json!({"team": "ENG", "title": format!("Issue {i}"), "description": long, "state": "Todo"})).collect::<Vec<_>>());
    let mut w = World::init(Some(seed)).unwrap();
    let doc = "query($f: IssueFilter) { issues(filter: $f, first: 200) { nodes { id description } } }";
    let answers: Vec<Value> = (0..3).map(|n| data(&mut w, doc, json!({"f": {"title": {"neq": format!("nothing {n}")}}}))).collect();
    assert_eq!(answers[0]["issues"]["nodes"].as_array().unwrap().len(), 200);
    assert!(answers.iter().all(|a| *a == answers[0]));
    let held = crate::memo::Memo::held();
    assert!(held > 512 * 1024 && held <= 1 << 20, "held {held} bytes");
}

/// The executor asks `computed_value` only for the names `maybe_computed` lists: a field
/// computed on any type must be among them.
#[test]
fn every_computed_field_is_named_as_one() {
    let w = crate::model::Inner::default();
    let e = crate::model::Entity::new();
    for t in crate::tables::TYPES.iter().filter(|t| t.kind == crate::tables::Kind::Object) {
        for f in crate::tables::fields(t) {
            if crate::exec::computed_value(&w, "http://x", t.name(), "id_1", &e, f.name()).is_some() {
                assert!(crate::exec::maybe_computed(f.name()), "{}.{} is computed", t.name(), f.name());
            }
        }
    }
}

#[test]
fn filters_compare_nest_and_combine() {
    let mut w = seeded(TASK24);
    let count = |w: &mut World, f: Value| data(w, ISSUES, json!({"f": f}))["issues"]["nodes"].as_array().unwrap().len();
    assert_eq!(count(&mut w, json!({"labels": {"some": {"name": {"eq": "Agent"}}}})), 1);
    assert_eq!(count(&mut w, json!({"assignee": {"email": {"eq": "dev@pome-twin.test"}}})), 2);
    assert_eq!(count(&mut w, json!({"priority": {"lte": 2}})), 1);
    assert_eq!(count(&mut w, json!({"title": {"containsIgnoreCase": "LINEAR"}})), 1);
    assert_eq!(count(&mut w, json!({"or": [{"title": {"startsWith": "Triage"}}, {"title": {"endsWith": "surface"}}]})), 2);
    assert_eq!(count(&mut w, json!({"estimate": {"null": true}})), 2);
    assert_eq!(count(&mut w, json!({"state": {"name": {"in": ["Todo", "Done"]}}})), 1);
    assert_eq!(count(&mut w, json!({"state": {"name": {"nin": ["Todo"]}}, "number": {"eq": 1}})), 1);
    let d = data(&mut w, "{ searchIssues(term: \"inbox\") { totalCount nodes { identifier } } }", json!({}));
    assert_eq!(d["searchIssues"]["totalCount"], 1.0);
}

#[test]
fn webhooks_deliver_signed_bodies() {
    use hmac::{Hmac, Mac};
    let mut w = seeded(TASK24);
    data(&mut w, "mutation { webhookCreate(input: {url: \"https://hooks.test/linear\", resourceTypes: [\"Issue\"], secret: \"s3cret\", allPublicTeams: true}) { success webhook { id enabled } } }", json!({}));
    let (_, _, call) = post(&mut w, "mutation { issueUpdate(id: \"ENG-2\", input: {priority: 1}) { success } }", json!({}));
    assert_eq!(call.deliveries.len(), 1);
    let d = &call.deliveries[0];
    let header = |n: &str| d.headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"s3cret").unwrap();
    mac.update(&d.body);
    assert_eq!(header("linear-signature"), hex::encode(mac.finalize().into_bytes()));
    assert_eq!(header("linear-event"), "Issue");
    let body: Value = serde_json::from_slice(&d.body).unwrap();
    assert_eq!(body["action"], "update");
    assert_eq!(body["updatedFrom"]["priority"], 3.0);
    assert!(body["webhookTimestamp"].is_i64());
}

#[test]
fn the_same_seed_and_requests_give_the_same_bytes_and_snapshots_round_trip() {
    let run = || {
        let mut w = seeded(TASK24);
        let mut out = Vec::new();
        for q in ["mutation { issueCreate(input: {teamId: \"team_eng\", title: \"X\"}) { issue { id identifier createdAt } lastSyncId } }", ISSUES] {
            // Native tests read the wall clock; under the host, time is the sandbox's virtual clock.
            let mut body = post(&mut w, q, json!({})).1;
            if let Some(i) = body.pointer_mut("/data/issueCreate/issue") {
                i["createdAt"] = json!("t");
            }
            out.push(body.to_string());
        }
        (out, w)
    };
    let (a, wa) = run();
    let (b, _) = run();
    assert_eq!(a, b);
    let bytes = postcard::to_stdvec(&wa).unwrap();
    let back: World = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back.state(), wa.state());
}

#[test]
fn the_served_surface_reaches_the_floor() {
    let root = |t: &str| crate::tables::fields(crate::tables::ty(t).unwrap()).iter().map(|f| f.name());
    assert_eq!((root("Query").count(), root("Mutation").count()), (164, 371));
    let queries = root("Query").filter(|n| crate::root::query_served(n)).count();
    let mutations = root("Mutation").filter(|n| crate::mutate::served(n)).count();
    eprintln!("served: {queries} queries, {mutations} mutations");
    assert!(queries >= 60, "{queries}");
    assert!(queries + mutations >= 200);
}

#[test]
fn every_document_the_sdk_sends_validates_against_the_schema() {
    // The file holds every fragment once; each operation is sent with only the ones it uses,
    // so the only error the whole file may have is an unused fragment.
    let full = apollo_compiler::Schema::parse_and_validate(crate::gql::SCHEMA_TEXT, "schema.graphql").expect("Linear's schema is valid");
    let lean = apollo_compiler::Schema::parse_and_validate(crate::sdl::strip_descriptions(crate::gql::SCHEMA_TEXT), "lean.graphql").expect("without descriptions too");
    assert_eq!(full.types.len(), lean.types.len());
    // Against the whole schema, and against the part of it the twin builds for the document.
    let sub = apollo_compiler::Schema::parse(crate::tables::sub_schema(SDK_DOCS), "sub.graphql").unwrap();
    let sub = apollo_compiler::validation::Valid::assume_valid(sub);
    for schema in [&lean, &sub] {
        let r = apollo_compiler::ExecutableDocument::parse_and_validate(schema, SDK_DOCS, "sdk.graphql");
        let errors: Vec<String> = match r {
            Ok(_) => Vec::new(),
            Err(e) => e.errors.iter().map(|d| d.error.to_string()).filter(|m| !m.contains("must be used in an operation")).collect(),
        };
        assert!(errors.is_empty(), "{errors:?}");
    }
    assert_eq!(SDK_DOCS.matches("\nquery ").count() + SDK_DOCS.matches("\nmutation ").count(), 663);
}

#[test]
fn declared_checks_are_well_formed() {
    for d in World::checks() {
        assert!(d.id.starts_with("linear."));
    }
    assert!(World::checks().iter().any(|d| d.fits("No issue was created in `ENG`")));
}

mod memory {
    //! Heap use, measured with a counting allocator: the idle world is small, and the schema
    //! is built only when the first GraphQL request arrives.
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicIsize, Ordering};

    pub struct Counting;
    pub static LIVE: AtomicIsize = AtomicIsize::new(0);
    pub static PEAK: AtomicIsize = AtomicIsize::new(0);

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            let now = LIVE.fetch_add(l.size() as isize, Ordering::Relaxed) + l.size() as isize;
            PEAK.fetch_max(now, Ordering::Relaxed);
            unsafe { System.alloc(l) }
        }
        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
            unsafe { System.dealloc(p, l) }
        }
    }

    #[global_allocator]
    static A: Counting = Counting;
}

#[test]
fn the_default_world_is_small() {
    use std::sync::atomic::Ordering;
    let before = memory::LIVE.load(Ordering::SeqCst);
    let w = World::init(None).unwrap();
    let world = memory::LIVE.load(Ordering::SeqCst) - before;
    let snapshot = postcard::to_stdvec(&w).unwrap().len();
    eprintln!("default world: {world} bytes live, {snapshot} bytes snapshot (other tests may share the counter)");
    assert!(world < 256 * 1024, "{world}");
}

#[test]
#[ignore = "prints the unserved root fields"]
fn print_unserved() {
    let root = |t: &str| crate::tables::fields(crate::tables::ty(t).unwrap()).iter().map(|f| f.name());
    let q: Vec<&str> = root("Query").filter(|n| !crate::root::query_served(n)).collect();
    let m: Vec<&str> = root("Mutation").filter(|n| !crate::mutate::served(n)).collect();
    eprintln!("QUERIES {}\n{}\nMUTATIONS {}\n{}", q.len(), q.join(" "), m.len(), m.join(" "));
}

/// `cargo test --release -p twin-linear print_generic -- --ignored --nocapture`: the served
/// mutations that only the generic writer serves, by entity type: how many of them are of a
/// type with rules of its own (`families::rules::TYPED`), and the types without.
#[test]
#[ignore = "prints the mutations served by the generic writer alone"]
fn print_generic() {
    let mut by: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for f in crate::tables::fields(crate::tables::ty("Mutation").unwrap()) {
        if crate::mutate::has_rules(f.name()) {
            continue;
        }
        if let Some((ty, verb)) = crate::mutate::generic(f.name()) {
            by.entry(ty).or_default().push(verb);
        }
    }
    let n: usize = by.values().map(Vec::len).sum();
    let (typed, plain): (Vec<_>, Vec<_>) = by.into_iter().partition(|(ty, _)| crate::families::rules::TYPED.contains(&ty.as_str()));
    let count = |l: &[(String, Vec<&str>)]| l.iter().map(|(_, v)| v.len()).sum::<usize>();
    eprintln!("GENERIC {n}: {} of types with rules of their own, {} with only the rules every type gets", count(&typed), count(&plain));
    for (ty, verbs) in plain {
        eprintln!("{ty}: {}", verbs.join(" "));
    }
}

#[test]
fn notifications_arrive_read_archive_and_count() {
    let mut v: Value = serde_json::from_str(TASK24).unwrap();
    v["notifications"] = json!([{"id": "n1", "user": "admin@pome-twin.test", "issue": "ENG-2", "actor": "dev@pome-twin.test"}]);
    let mut w = World::init(Some(v)).unwrap();
    let d = data(&mut w, "{ notificationsUnreadCount notifications { nodes { __typename id readAt ... on IssueNotification { issue { identifier } actor { email } } } } }", json!({}));
    assert_eq!(d["notificationsUnreadCount"], 1);
    assert_eq!(d["notifications"]["nodes"][0]["__typename"], "IssueNotification");
    assert_eq!(d["notifications"]["nodes"][0]["issue"]["identifier"], "ENG-2");
    data(&mut w, "mutation { notificationUpdate(id: \"n1\", input: {readAt: \"2026-07-21T01:00:00.000Z\"}) { success } }", json!({}));
    assert_eq!(data(&mut w, "{ notificationsUnreadCount }", json!({}))["notificationsUnreadCount"], 0);
    data(&mut w, "mutation { notificationArchive(id: \"n1\") { success } }", json!({}));
    assert_eq!(data(&mut w, "{ notifications { nodes { id } } }", json!({}))["notifications"]["nodes"], json!([]));
    // Assigning someone else notifies them; commenting notifies the issue's other subscribers.
    let (_, _, call) = post(&mut w, "mutation { issueUpdate(id: \"ENG-1\", input: {assigneeId: \"user_admin\"}) { success } }", json!({}));
    assert!(call.changes.iter().all(|c| c.entity != "IssueNotification"), "no notification for assigning oneself");
    data(&mut w, "mutation { issueSubscribe(id: \"ENG-1\", userId: \"user_dev\") { success } }", json!({}));
    let (_, _, call) = post(&mut w, "mutation { commentCreate(input: {issueId: \"ENG-1\", body: \"ping\"}) { success } }", json!({}));
    let n: Vec<_> = call.changes.iter().filter(|c| c.entity == "IssueNotification").collect();
    assert_eq!(n.len(), 1);
    assert!(n[0].after.as_deref().unwrap().contains("\"userId\":\"user_dev\""));
}

#[test]
#[ignore = "prints how long building the schema takes"]
fn time_schema_build() {
    let t = std::time::Instant::now();
    let s = apollo_compiler::Schema::parse(crate::gql::SCHEMA_TEXT, "s.graphql").unwrap();
    eprintln!("parse {:?}", t.elapsed());
    let t = std::time::Instant::now();
    let _ = s.validate().unwrap();
    eprintln!("validate {:?}", t.elapsed());
}

#[test]
#[ignore = "prints the time per request of the bench's list query"]
fn time_list_query() {
    let mut w = seeded(TASK24);
    for i in 0..48 {
        data(&mut w, "mutation($t: String!) { issueCreate(input: {teamId: \"team_eng\", title: $t, priority: 2, assigneeId: \"user_dev\", labelIds: [\"label_agent\"]}) { success } }", json!({"t": format!("Load {i}")}));
    }
    let q = "query($f: IssueFilter) { issues(filter: $f, first: 50) { nodes { id identifier title priority assignee { id name email } labels { nodes { id name } } state { id name type } } pageInfo { hasNextPage endCursor } } }";
    let vars = json!({"f": {"team": {"key": {"eq": "ENG"}}, "priority": {"lte": 3}}});
    data(&mut w, q, vars.clone());
    let n: u32 = std::env::var("LIN_N").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let t = std::time::Instant::now();
    for _ in 0..n {
        post(&mut w, q, vars.clone());
    }
    eprintln!("list: {:?} per request", t.elapsed() / n);
    let t = std::time::Instant::now();
    for _ in 0..n {
        post(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"X\"}) { success lastSyncId issue { id identifier } } }", json!({}));
    }
    eprintln!("create: {:?} per request", t.elapsed() / n);
}

#[test]
fn field_errors_carry_paths_and_null_propagates_to_the_nearest_nullable_field() {
    let mut w = seeded(TASK24);
    let (status, body, _) = post(&mut w, "{ viewer { id } issue(id: \"nope\") { id } }", json!({}));
    assert_eq!(status, 400, "Query.issue is non-null, so the whole data is null");
    assert_eq!(body["data"], Value::Null);
    assert_eq!(body["errors"][0]["path"], json!(["issue"]));
    assert_eq!(body["errors"][0]["locations"][0]["line"], 1);
    let (status, body, _) = post(&mut w, "{ viewer { id } issueVcsBranchSearch(branchName: \"none\") { id } }", json!({}));
    assert_eq!(status, 200);
    assert_eq!(body["data"]["issueVcsBranchSearch"], Value::Null);
    assert_eq!(body["data"]["viewer"]["id"], "user_admin");
    let (_, body, _) = post(&mut w, "{ issues(first: 1) { nodes { id } } a: auditEntryTypes { type } }", json!({}));
    assert_eq!(body["data"], Value::Null, "auditEntryTypes is non-null: {body}");
    assert_eq!(body["errors"][0]["path"], json!(["a"]));
}

#[test]
fn queries_past_linears_complexity_limit_are_refused() {
    let mut w = seeded(TASK24);
    let (status, body, _) = post(&mut w, "{ teams(first: 250) { nodes { issues(first: 250) { nodes { id title } } } } }", json!({}));
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["extensions"]["code"], "QUERY_TOO_COMPLEX");
    let (status, _, _) = post(&mut w, "{ teams(first: 5) { nodes { issues(first: 50) { nodes { id title } } } } }", json!({}));
    assert_eq!(status, 200);
}

#[test]
fn every_sdk_operation_with_default_paging_fits_the_complexity_limit() {
    let lean = apollo_compiler::Schema::parse_and_validate(crate::sdl::strip_descriptions(crate::gql::SCHEMA_TEXT), "lean.graphql").unwrap();
    let doc = apollo_compiler::ExecutableDocument::parse(&lean, SDK_DOCS, "sdk.graphql").unwrap_or_else(|e| e.partial);
    let vars = serde_json::Map::new();
    let mut worst = (0.0, String::new());
    for (name, op) in &doc.operations.named {
        let c = crate::complexity(&op.selection_set, &doc, &vars);
        if c > worst.0 {
            worst = (c, name.to_string());
        }
    }
    assert!(worst.0 <= crate::MAX_COMPLEXITY, "{worst:?}");
}

/// `cargo test --release -p twin-linear bench_native -- --ignored --nocapture`: the bench's
/// documents natively, per request (for profiling; asserts only that they answer).
#[test]
#[ignore]
fn bench_native() {
    let states = ["Backlog", "Todo", "In Progress", "Done", "Canceled"];
    let issues: Vec<Value> = (0..200)
        .map(|i| {
            let mut issue = json!({"team": "ENG", "title": format!("Issue number {i}"), "state": states[i % 5], "priority": i % 5, "creator": "admin@pome-twin.test"});
            if i % 3 != 0 {
                issue["assignee"] = json!(if i % 2 == 0 { "dev@pome-twin.test" } else { "admin@pome-twin.test" });
            }
            if i % 2 == 0 {
                issue["labels"] = json!(["Bug"]);
            }
            issue
        })
        .collect();
    let mut seed = crate::seed::default_seed();
    seed["issues"] = json!(issues);
    let mut w = World::init(Some(seed)).unwrap();
    let list = "query Open($first: Int) { issues(first: $first, filter: {team: {key: {eq: \"ENG\"}}, state: {type: {nin: [\"completed\", \"canceled\"]}}}) { nodes { id identifier title priority assignee { id name email } labels { nodes { id name color } } state { id name type } } pageInfo { hasNextPage endCursor } } }";
    let create = "mutation Create($input: IssueCreateInput!) { issueCreate(input: $input) { success lastSyncId issue { id identifier title state { name } } } }";
    let n: u32 = std::env::var("BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    // Requests are built before the clock starts and answers not parsed: the twin alone.
    let run = |w: &mut World, body: &Value| {
        let mut call = Call::new(Request::new(Method::Post, "/graphql").with_json(body));
        World::router().dispatch(w, &mut call)
    };
    let only_create = std::env::var_os("ONLY_CREATE").is_some();
    let first = run(&mut w, &json!({"query": list, "variables": {"first": 50}}));
    assert_eq!(first.json_body()["data"]["issues"]["nodes"].as_array().map(Vec::len), Some(50));
    let req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": list, "variables": {"first": 50}}));
    let t = std::time::Instant::now();
    for _ in 0..if only_create { 0 } else { n } {
        let resp = World::router().dispatch(&mut w, &mut Call::new(req.clone()));
        assert_eq!(resp.status, 200);
    }
    println!("list (answer cache): {:?} per request", t.elapsed() / n);
    // Every request differs (a state type no state has), so each is executed; in the second
    // document each issue's labels read the variable too, so no issue is copied from the memo.
    let varied = list.replace("$first: Int", "$first: Int, $nonce: String").replace("\"canceled\"]", "\"canceled\", $nonce]");
    let rendered = varied.replace("labels {", "labels(filter: {name: {neq: $nonce}}) {");
    for (what, doc) in [("executed", &varied), ("executed, all rendered", &rendered)] {
        let reqs: Vec<Request> = (0..n).map(|i| Request::new(Method::Post, "/graphql").with_json(&json!({"query": doc, "variables": {"first": 50, "nonce": format!("n{i}")}}))).collect();
        let check = run(&mut w, &json!({"query": doc, "variables": {"first": 50, "nonce": "x"}}));
        assert_eq!(check.body, first.body, "the nonce changes nothing");
        let t = std::time::Instant::now();
        for req in reqs.into_iter().take(if only_create { 0 } else { n as usize }) {
            let resp = World::router().dispatch(&mut w, &mut Call::new(req));
            assert_eq!(resp.status, 200);
        }
        println!("list ({what}): {:?} per request", t.elapsed() / n);
    }
    let req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": create, "variables": {"input": {"teamId": "team_eng", "title": "Load test issue", "description": "created by wrk"}}}));
    let t = std::time::Instant::now();
    for _ in 0..n {
        let resp = World::router().dispatch(&mut w, &mut Call::new(req.clone()));
        assert_eq!(resp.status, 200);
    }
    println!("create: {:?} per request", t.elapsed() / n);
}

/// Validation against the part of the schema built for a document says exactly what
/// validation against the whole schema says, for valid and invalid documents alike.
#[test]
fn a_documents_own_schema_validates_it_as_the_whole_schema_does() {
    let lean = apollo_compiler::Schema::parse_and_validate(crate::sdl::strip_descriptions(crate::gql::SCHEMA_TEXT), "lean.graphql").unwrap();
    let docs = [
        "{ issues(filter: {state: {type: {eq: \"started\"}}}, first: 5) { nodes { id title assignee { name } labels { nodes { name } } } } }",
        "{ issue(id: \"ENG-1\") { titel } }",
        "{ issue(id: 5) { title } }",
        "{ issue { title } }",
        "query Q($f: IssueFilterr) { issues(filter: $f) { nodes { id } } }",
        "query Q($f: IssueFilter, $n: Int) { issues(filter: $f) { nodes { id } } }",
        "{ node(id: \"x\") { id ... on Issue { title } ... on Team { key } ... on Comment { body } } }",
        "{ viewer { ... on Team { key } } }",
        "{ searchIssues(term: \"a\") { nodes { ...F } } } fragment F on IssueSearchResult { id title }",
        "mutation { issueCreate(input: {teamId: \"t\", title: \"x\", bogus: 1}) { success issue { id } } }",
        "mutation M($i: IssueUpdateInput!) { issueUpdate(id: \"x\", input: $i) { issue { state { name } } } }",
        "{ notifications { nodes { __typename ... on IssueNotification { issue { identifier } } } } }",
        "{ issues { nodes { id } } teams { nodes { id issues(first: \"x\") { nodes { id } } } } }",
        "subscription { issues }",
        "{ issues(first: 5) { nodes { id } } }",
        "{ issues(orderBy: createdAt, sort: [{priority: {order: Ascending}}]) { nodes { id } } }",
        "{ issues(filter: {bogus: {eq: 1}}) { nodes { id } } }",
        "{ issues(first: $n) { nodes { id } } }",
        "query Q($s: [IssueSortInput!]) { issues(sort: $s) { nodes { id } } }",
    ];
    for text in docs {
        let sub = apollo_compiler::validation::Valid::assume_valid(apollo_compiler::Schema::parse(crate::tables::sub_schema(text), "sub.graphql").unwrap());
        let errs = |s: &apollo_compiler::validation::Valid<apollo_compiler::Schema>| -> Vec<String> {
            match apollo_compiler::ExecutableDocument::parse_and_validate(s, text, "q.graphql") {
                Ok(_) => Vec::new(),
                // As clients see them: messages and locations in the document.
                Err(e) => e.errors.iter().map(|d| serde_json::to_string(&d.unstable_to_json_compat()).unwrap()).collect(),
            }
        };
        assert_eq!(errs(&lean), errs(&sub), "{text}");
    }
}

/// The schema an instance builds for a document is small: Linear's whole schema is never
/// parsed for ordinary requests.
#[test]
fn a_documents_own_schema_is_small() {
    let text = "query Open($first: Int) { issues(first: $first, filter: {team: {key: {eq: \"ENG\"}}, state: {type: {nin: [\"completed\", \"canceled\"]}}}) { nodes { id identifier title priority assignee { id name email } labels { nodes { id name color } } state { id name type } } pageInfo { hasNextPage endCursor } } }";
    let sdl = crate::tables::sub_schema(text);
    eprintln!("the list query's schema: {} bytes of SDL", sdl.len());
    assert!(sdl.len() < 200 * 1024, "{}", sdl.len());
}

/// `cargo test --release -p twin-linear heap_after_one_query -- --ignored --nocapture --test-threads 1`:
/// what an instance's heap holds after its first request, and its peak.
#[test]
#[ignore = "prints heap figures; run alone"]
fn heap_after_one_query() {
    use std::sync::atomic::Ordering;
    let base = memory::LIVE.load(Ordering::SeqCst);
    let mut w = World::init(None).unwrap();
    let world = memory::LIVE.load(Ordering::SeqCst) - base;
    memory::PEAK.store(0, Ordering::SeqCst);
    let p0 = memory::LIVE.load(Ordering::SeqCst);
    data(&mut w, "{ viewer { id name } issues(first: 5) { nodes { identifier title state { name } } } }", json!({}));
    let after = memory::LIVE.load(Ordering::SeqCst) - base;
    let peak = memory::PEAK.load(Ordering::SeqCst) - p0 + world;
    eprintln!("world {world} B; after one query {after} B; peak {peak} B");
}


/// Every older MCP tool declared as a GraphQL document is a document that validates, and a
/// call with its required arguments (and with every argument) answers without errors.
#[test]
fn every_mcp_tool_runs_as_a_graphql_document() {
    let tools = World::tools();
    assert!(tools.len() >= 20);
    let mut w = seeded(TASK24);
    let team = w.0.all("Team").next().map(|(_, t)| t["key"].as_str().unwrap().to_string()).unwrap();
    let issue = w.0.all("Issue").next().map(|(id, _)| id.clone()).unwrap();
    let user = w.0.viewer.clone();
    let state = w.0.all("WorkflowState").next().map(|(id, _)| id.clone()).unwrap();
    let team_id = w.0.all("Team").next().unwrap().0.clone();
    let project = data(&mut w, "mutation($t: String!) { projectCreate(input: {name: \"Apollo\", teamIds: [$t]}) { project { id } } }", json!({"t": team_id}))["projectCreate"]["project"]["id"].as_str().unwrap().to_string();
    let document = data(&mut w, "mutation($p: String) { documentCreate(input: {title: \"Spec\", projectId: $p}) { document { id } } }", json!({"p": project}))["documentCreate"]["document"]["id"].as_str().unwrap().to_string();
    let sample = |name: &str, arg: &str| -> Value {
        match (name, arg) {
            ("get_issue_status", "id") => json!(state),
            (_, "team" | "teamId") if name != "create_issue_label" => json!(team),
            ("create_issue_label", "teamId") => json!(team_id),
            (_, "id" | "issueId") if name.contains("issue") || name.contains("comment") => json!(issue),
            ("update_project", "id") => json!(project),
            ("get_document", "id") => json!(document),
            ("get_project", "query") => json!("Apollo"),
            (_, "projectId") => json!(project),
            ("get_team", "query") => json!(team),
            ("get_user", "query") => json!(user),
            (_, "query") => json!("a"),
            (_, "parentId") if name == "list_issues" => json!(issue),
            (_, "title" | "name" | "body" | "description" | "summary") => json!(format!("{name} {arg}")),
            (_, "limit" | "priority" | "estimate") => json!(2),
            (_, "assignee" | "lead") => json!(user),
            (_, "state") if name == "update_project" => json!("started"),
            (_, "state") => json!(state),
            (_, "dueDate" | "startDate" | "targetDate") => json!("2026-02-01"),
            (_, "includeArchived" | "isGroup") => json!(false),
            (_, "orderBy") => json!("createdAt"),
            _ => Value::Null,
        }
    };
    for t in &tools {
        let pome_twin_sdk::ToolBody::Graphql { query } = &t.body else {
            assert_eq!((t.path.as_str(), &t.body), ("/mcp/v1", &pome_twin_sdk::ToolBody::Mcp), "{}", t.name);
            continue;
        };
        assert_eq!((t.method.as_str(), t.path.as_str()), ("POST", "/graphql"));
        let required: Vec<&str> = t.input_schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let all: Vec<String> = t.input_schema["properties"].as_object().unwrap().keys().cloned().collect();
        // Every argument is a variable of the document, and every variable an argument.
        for a in &all {
            assert!(query.contains(&format!("${a}:")), "{}: {a} is not a variable", t.name);
        }
        assert_eq!(query.matches(": ").count() >= all.len(), true);
        for args in [required.iter().map(|s| s.to_string()).collect::<Vec<_>>(), all.clone()] {
            if t.name.starts_with("create_") && args.len() > required.len() && t.name != "create_comment" && t.name != "create_issue_label" {
                // Every optional relation of a create at once need not fit together; the
                // required ones must.
                continue;
            }
            let vars: serde_json::Map<String, Value> = args.iter().map(|a| (a.clone(), sample(&t.name, a))).filter(|(_, v)| !v.is_null()).collect();
            let req = t.request(&vars).unwrap();
            let body: Value = serde_json::from_slice(&req.body).unwrap();
            let (status, resp, _) = post(&mut w, body["query"].as_str().unwrap(), body["variables"].clone());
            assert_eq!(status, 200, "{} {args:?}: {resp}", t.name);
            assert!(resp.get("errors").is_none(), "{} {args:?}: {resp}", t.name);
        }
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for n in ["list_issues", "get_issue", "create_issue", "update_issue", "list_comments", "create_comment", "list_teams", "get_team", "list_users", "get_user", "list_issue_statuses", "list_issue_labels", "list_projects", "get_project"] {
        assert!(names.contains(&n), "{n}");
    }
}

/// The MCP `list_issues` tool filters as Linear's server does: by team key, assignee email,
/// state name or type, label name and text; arguments left out constrain nothing.
#[test]
fn list_issues_filters_by_the_arguments_given_and_only_those() {
    let mut w = seeded(TASK24);
    let t = World::tools().into_iter().find(|t| t.name == "list_issues").unwrap();
    let mut run = |args: Value| -> Vec<String> {
        // The request the host's MCP door makes for this tool.
        let req = t.request(args.as_object().unwrap()).unwrap();
        let mut call = Call::new(Request::new(Method::Post, &req.path).with_json(&serde_json::from_slice::<Value>(&req.body).unwrap()));
        let d = World::router().dispatch(&mut w, &mut call).json_body();
        assert_eq!(d["result"]["isError"], false, "{args}: {d}");
        d["result"]["structuredContent"]["issues"].as_array().unwrap().iter().map(|i| i["identifier"].as_str().unwrap().to_string()).collect()
    };
    let all = run(json!({}));
    assert!(all.len() >= 2, "{all:?}");
    let mut w2 = seeded(TASK24);
    let total = data(&mut w2, "{ issues(first: 250) { nodes { id } } }", json!({}))["issues"]["nodes"].as_array().unwrap().len();
    assert_eq!(all.len(), total, "no arguments: every issue");
    let some = run(json!({"state": "Todo"}));
    assert!(some.len() < all.len() || all.len() == some.len());
    let by_type = run(json!({"state": "unstarted"}));
    assert_eq!(some, by_type, "Todo is the unstarted state");
    assert!(run(json!({"query": "no such words anywhere"})).is_empty());
}

fn post_with(w: &mut World, auth: pome_twin_sdk::Auth, authorization: &str, query: &str) -> (u16, Value) {
    let mut req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": query}));
    req.auth = auth;
    req.headers.push(("authorization".into(), authorization.into()));
    let mut call = Call::new(req);
    let resp = World::router().dispatch(w, &mut call);
    (resp.status, resp.json_body())
}

/// An API key from the seed's `tokens` is accepted (raw, as @linear/sdk sends it, or as
/// `Bearer`) and acts as its user; any other key the host did not accept is Linear's
/// authentication error; the agent token still acts as the first token's user.
#[test]
fn seeded_api_keys_act_as_their_users() {
    use pome_twin_sdk::Auth;
    let mut seed = crate::seed::default_seed();
    seed["tokens"] = json!([{"token": "lin_api_admin", "user": "admin@pome-twin.test"}, {"token": "lin_api_dev", "user": "user_dev"}]);
    let mut w = World::init(Some(seed)).unwrap();
    for header in ["lin_api_dev", "Bearer lin_api_dev"] {
        let (status, body) = post_with(&mut w, Auth::Invalid, header, "{ viewer { id email } }");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["data"]["viewer"]["email"], "dev@pome-twin.test");
    }
    let (_, body) = post_with(&mut w, Auth::Invalid, "lin_api_dev", "mutation { issueCreate(input: {teamId: \"ENG\", title: \"From dev\"}) { issue { creator { id } } } }");
    assert_eq!(body["data"]["issueCreate"]["issue"]["creator"]["id"], "user_dev");
    // As a host that redacts the key sends it: its digest.
    let mut req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": "{ viewer { id } }"}));
    req.auth = Auth::Invalid;
    req.headers.push(("authorization".into(), "[redacted]".into()));
    req.headers.push((crate::CREDENTIAL_DIGEST_HEADER.into(), hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"lin_api_dev"))));
    let mut call = Call::new(req);
    let resp = World::router().dispatch(&mut w, &mut call);
    assert_eq!(resp.json_body()["data"]["viewer"]["id"], "user_dev");
    let (status, body) = post_with(&mut w, Auth::Invalid, "lin_api_nobody", "{ viewer { id } }");
    assert_eq!(status, 400);
    assert_eq!(body["errors"][0]["extensions"]["code"], "AUTHENTICATION_ERROR");
    let (_, body) = post_with(&mut w, Auth::Agent, "redacted", "{ viewer { id } }");
    assert_eq!(body["data"]["viewer"]["id"], "user_admin", "the agent token acts as the first token's user");
}

/// With `clock` in the seed, requests run at that time (advancing with the virtual clock
/// from the first request); without it, at the host's virtual time.
#[test]
fn the_seed_clock_is_the_time_requests_run_at() {
    let mut w = seeded(TASK24);
    let d = data(&mut w, "mutation { issueCreate(input: {teamId: \"ENG\", title: \"Now\"}) { issue { createdAt } } }", json!({}));
    let at = d["issueCreate"]["issue"]["createdAt"].as_str().unwrap().to_string();
    assert!(at.starts_with("2026-07-21T00:00:0"), "{at}");
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { issueCreate(input: {teamId: \"ENG\", title: \"Now\"}) { issue { createdAt } } }", json!({}));
    let at = d["issueCreate"]["issue"]["createdAt"].as_str().unwrap().to_string();
    assert_eq!(at[..10], pome_twin_sdk::time::now_iso()[..10]);
}

/// The filter compiled per connection ([`crate::filter::Compiled`]) keeps every issue the
/// interpreted filter keeps, and no other, on a varied set of filters.
#[test]
fn compiled_filters_agree_with_interpreted_ones() {
    let mut w = seeded(TASK24);
    data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Unassigned\", priority: 0}) { success } }", json!({}));
    let filters = test_filters();
    let mut kept = 0;
    for f in &filters {
        let compiled = crate::filter::Compiled::new("Issue", f);
        for (id, e) in w.0.all("Issue") {
            let slow = crate::filter::matches(&w.0, "http://twin.test", "Issue", id, e, f);
            assert_eq!(compiled.test(&w.0, "http://twin.test", "Issue", id, e), slow, "{f} on {id}");
            kept += slow as usize;
        }
    }
    assert!(kept > 0 && kept < filters.len() * w.0.all("Issue").count(), "the filters keep some issues and drop others");
}

fn test_filters() -> Vec<Value> {
    vec![
        json!({"team": {"key": {"eq": "ENG"}}, "state": {"type": {"nin": ["completed", "canceled"]}}}),
        json!({"assignee": {"email": {"eq": "dev@pome-twin.test"}}}),
        json!({"assignee": {"null": true}}),
        json!({"assignee": {"null": false, "name": {"containsIgnoreCase": "dev"}}}),
        json!({"labels": {"some": {"name": {"eq": "Agent"}}}}),
        json!({"labels": {"every": {"name": {"eq": "Agent"}}}}),
        json!({"labels": {"none": {"name": {"eq": "Agent"}}}}),
        json!({"labels": {"name": {"in": ["Agent", "Bug"]}}}),
        json!({"labels": {"length": {"gte": 1}}}),
        json!({"or": [{"priority": {"lte": 2}}, {"title": {"startsWithIgnoreCase": "ship"}}]}),
        json!({"and": [{"priority": {"gt": 0}}, {"state": {"name": {"neq": "Done"}}}]}),
        json!({"or": []}),
        json!({"and": {"priority": {"gt": 0}}}),
        json!({"title": {"notContains": "x"}, "description": {"null": false}}),
        json!({"team": {"id": {"eq": "team_eng"}}, "project": {"null": true}}),
        json!({"state": {"type": {"eq": "started"}}, "assignee": {"isMe": {"eq": true}}}),
        json!({"creator": {"email": {"endsWith": "pome-twin.test"}}, "priority": {"nin": [0, 4]}}),
        json!({"comments": {"some": {"body": {"contains": "a"}}}}),
        json!({"team": {"key": {"eq": "NOPE"}}}),
        json!({"identifier": {"eqIgnoreCase": "eng-1"}}),
        json!({"createdAt": {"gte": "2026-07-20T00:00:00.000Z"}}),
        json!({"parent": {"null": true}, "cycle": {"null": true}}),
        json!({"team": {"key": {}}, "assignee": {"email": {}}}),
        json!({"or": [{"assignee": {"email": {"eq": "dev@pome-twin.test"}}}, {"assignee": {"null": true}}], "state": {"name": {"in": ["Todo", "Backlog"]}}}),
    ]
}

/// `DUMP=<file> cargo test --release -p twin-linear dump_answers -- --ignored`: every query
/// of @linear/sdk's documents and a set of filter documents, answered on task 24's world and
/// written to a file, to compare the executor's answers before and after a change.
#[test]
#[ignore]
fn dump_answers() {
    let mut w = seeded(TASK24);
    let mut out = String::new();
    let ops: Vec<&str> = SDK_DOCS.lines().filter_map(|l| l.strip_prefix("query ")).map(|l| l.trim_end_matches(['(', '{', ' '])).collect();
    let vars = json!({"id": "issue_todo", "first": 3, "issueId": "issue_todo", "teamId": "team_eng", "userId": "user_dev", "term": "agent", "query": "agent"});
    for op in ops {
        let req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": SDK_DOCS, "variables": vars, "operationName": op}));
        let mut call = Call::new(req);
        let resp = World::router().dispatch(&mut w, &mut call);
        out.push_str(&format!("{op} {}\n{}\n", resp.status, String::from_utf8_lossy(&resp.body)));
    }
    let filters = test_filters();
    let q = "query($f: IssueFilter, $first: Int, $last: Int, $after: String, $o: PaginationOrderBy) { issues(filter: $f, first: $first, last: $last, after: $after, orderBy: $o) { nodes { id identifier title url priority priorityLabel estimate createdAt updatedAt assignee { id name email } labels { nodes { id name color } } state { id name type } team { key } project { name } parent { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }";
    for f in &filters {
        for v in [json!({"f": f}), json!({"f": f, "first": 2}), json!({"f": f, "last": 1, "o": "updatedAt"})] {
            let (status, body, _) = post(&mut w, q, v.clone());
            out.push_str(&format!("{v} {status}\n{body}\n"));
        }
    }
    for (doc, v) in [
        ("{ teams { nodes { key issues(first: 3) { nodes { identifier } } states { nodes { name } } members { nodes { email } } } } }", json!({})),
        ("{ users { nodes { email assignedIssues { nodes { identifier } } } } }", json!({})),
        ("{ issue(id: \"ENG-1\") { children { nodes { id } } comments { edges { cursor node { body user { name } } } } labels(filter: {name: {eq: \"Agent\"}}) { nodes { name } } } }", json!({})),
        ("{ issueLabels { nodes { name issues { nodes { identifier } } } } workflowStates(filter: {type: {eq: \"started\"}}) { nodes { name team { key } } } }", json!({})),
        ("{ viewer { id name assignedIssues(filter: {state: {type: {neq: \"completed\"}}}) { nodes { identifier } } } organization { name urlKey } }", json!({})),
        ("query { issues(first: 2) { nodes { ... on Issue { id } ...F } } } fragment F on Issue { title a: identifier state { ... on WorkflowState { name } } }", json!({})),
    ] {
        let (status, body, _) = post(&mut w, doc, v);
        out.push_str(&format!("{doc} {status}\n{body}\n"));
    }
    std::fs::write(std::env::var("DUMP").unwrap_or_else(|_| "/dev/null".into()), out).unwrap();
}

fn error_of(w: &mut World, query: &str, vars: Value) -> String {
    let (_, body, _) = post(w, query, vars);
    assert!(body["errors"][0]["message"].is_string(), "expected an error: {body}");
    body["errors"][0]["extensions"]["userPresentableMessage"].as_str().or(body["errors"][0]["message"].as_str()).unwrap().to_string()
}

#[test]
fn an_issue_update_refuses_what_linear_refuses_and_keeps_what_it_was_given() {
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Ordered\", sortOrder: 5.5, subscriberIds: [\"user_dev\"]}) { issue { id sortOrder subscribers { nodes { id } } } } }", json!({}));
    let issue = &d["issueCreate"]["issue"];
    assert_eq!(issue["sortOrder"], 5.5);
    let mut subs: Vec<&str> = issue["subscribers"]["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    subs.sort();
    assert_eq!(subs, ["user_admin", "user_dev"], "the creator and the named subscriber");
    let id = issue["id"].as_str().unwrap().to_string();
    let child = data(&mut w, "mutation($p: String!) { issueCreate(input: {teamId: \"team_eng\", title: \"Child\", parentId: $p}) { issue { id } } }", json!({"p": id}));
    let child = child["issueCreate"]["issue"]["id"].as_str().unwrap().to_string();

    let update = "mutation($id: String!, $i: IssueUpdateInput!) { issueUpdate(id: $id, input: $i) { success } }";
    assert!(error_of(&mut w, update, json!({"id": id, "i": {"parentId": id}})).contains("own parent"));
    assert!(error_of(&mut w, update, json!({"id": id, "i": {"parentId": child}})).contains("own parent"), "a loop through a child");
    assert!(error_of(&mut w, update, json!({"id": id, "i": {"priority": 7}})).contains("Priority"));
    data(&mut w, "mutation { teamCreate(input: {name: \"Design\", key: \"DES\"}) { success } }", json!({}));
    let other = data(&mut w, "{ team(id: \"DES\") { displayName states { nodes { id } } } }", json!({}));
    assert_eq!(other["team"]["displayName"], "Design");
    let foreign = other["team"]["states"]["nodes"][0]["id"].as_str().unwrap().to_string();
    assert!(error_of(&mut w, update, json!({"id": id, "i": {"stateId": foreign}})).contains("does not belong"));

    // Assigning subscribes the assignee.
    data(&mut w, update, json!({"id": child, "i": {"assigneeId": "user_dev"}}));
    let c = data(&mut w, "query($id: String!) { issue(id: $id) { subscribers { nodes { id } } } }", json!({"id": child}));
    let subs: Vec<&str> = c["issue"]["subscribers"]["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert!(subs.contains(&"user_dev"), "{subs:?}");
}

#[test]
fn notifications_are_the_viewers_own_and_a_favorite_is_the_viewers() {
    let mut seed = crate::seed::default_seed();
    seed["notifications"] = json!([{"id": "n_admin", "user": "user_admin", "issue": "issue_welcome"}]);
    let mut w = World::init(Some(seed)).unwrap();
    let update = "mutation($id: String!, $i: IssueUpdateInput!) { issueUpdate(id: $id, input: $i) { success } }";
    // The developer is notified of the assignment; the admin (the viewer) does not see it.
    data(&mut w, update, json!({"id": "issue_welcome", "i": {"assigneeId": "user_dev"}}));
    let n = data(&mut w, "{ notifications { nodes { id } } notificationsUnreadCount }", json!({}));
    let ids: Vec<&str> = n["notifications"]["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["n_admin"], "{n}");
    assert_eq!(n["notificationsUnreadCount"], 1);
    let for_dev = crate::gql::possible_types("Notification").iter().flat_map(|t| w.0.all(t).map(|(_, n)| n["userId"].clone()).collect::<Vec<_>>()).filter(|u| u == "user_dev").count();
    assert_eq!(for_dev, 1, "the developer's notification exists, in the developer's inbox");

    let f = data(&mut w, "mutation { favoriteCreate(input: {issueId: \"issue_welcome\"}) { favorite { type owner { id } issue { id } } } }", json!({}));
    let fav = &f["favoriteCreate"]["favorite"];
    assert_eq!((fav["type"].as_str(), fav["owner"]["id"].as_str(), fav["issue"]["id"].as_str()), (Some("issue"), Some("user_admin"), Some("issue_welcome")));
}

#[test]
fn date_filters_take_relative_durations_and_other_strings_stay_as_written() {
    let mut w = World::init(None).unwrap();
    data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"P1W\", dueDate: \"2999-01-01\"}) { success } }", json!({}));
    data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Old\", dueDate: \"2020-01-05\", createdAt: \"2020-01-01T00:00:00.000Z\"}) { success } }", json!({}));
    let titles = |w: &mut World, filter: Value| -> Vec<String> {
        let mine = json!({"and": [filter, {"title": {"in": ["P1W", "Old"]}}]});
        let d = data(w, "query($f: IssueFilter) { issues(filter: $f) { nodes { title } } }", json!({"f": mine}));
        let mut t: Vec<String> = d["issues"]["nodes"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap().to_string()).collect();
        t.sort();
        t
    };
    assert_eq!(titles(&mut w, json!({"dueDate": {"lt": "P1W"}})), ["Old"], "due before a week from now");
    assert_eq!(titles(&mut w, json!({"dueDate": {"gt": "P1W"}})), ["P1W"]);
    assert_eq!(titles(&mut w, json!({"createdAt": {"gt": "-P1D"}})), ["P1W"], "created within the last day");
    assert_eq!(titles(&mut w, json!({"createdAt": {"lt": "-P1D"}})), ["Old"]);
    assert_eq!(titles(&mut w, json!({"title": {"eq": "P1W"}})), ["P1W"], "a title is compared as written");
    assert_eq!(titles(&mut w, json!({"team": {"issues": {"some": {"createdAt": {"lt": "-P1W"}}}}})).len(), 2, "nested filters too");
}

#[test]
fn an_issue_moved_to_another_team_is_renumbered_there_and_keeps_its_old_identifier() {
    let mut w = World::init(None).unwrap();
    data(&mut w, "mutation { teamCreate(input: {name: \"Design\", key: \"DES\"}) { success } }", json!({}));
    let update = "mutation($id: String!, $i: IssueUpdateInput!) { issueUpdate(id: $id, input: $i) { issue { identifier number previousIdentifiers branchName team { key } state { name type team { key } } } } }";
    let d = data(&mut w, update, json!({"id": "ENG-1", "i": {"teamId": "DES"}}));
    let i = &d["issueUpdate"]["issue"];
    assert_eq!((i["identifier"].as_str(), i["number"].as_f64(), i["team"]["key"].as_str()), (Some("DES-1"), Some(1.0), Some("DES")));
    assert_eq!(i["previousIdentifiers"], json!(["ENG-1"]));
    assert_eq!((i["state"]["type"].as_str(), i["state"]["team"]["key"].as_str()), (Some("unstarted"), Some("DES")), "the new team's state of the same type");
    assert!(i["branchName"].as_str().unwrap().contains("des-1"), "{i}");
    let old = data(&mut w, "{ issue(id: \"ENG-1\") { identifier } }", json!({}));
    assert_eq!(old["issue"]["identifier"], "DES-1", "the old identifier still finds it");
    let next = data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Next\"}) { issue { identifier } } }", json!({}));
    assert_eq!(next["issueCreate"]["issue"]["identifier"], "ENG-2", "numbers are never reused");
}

#[test]
fn a_cycle_knows_where_it_stands_now_and_its_progress_and_the_team_its_active_cycle() {
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Clock\"}) { issue { createdAt } } }", json!({}));
    let now = crate::dates::parse_now(d["issueCreate"]["issue"]["createdAt"].as_str().unwrap()).unwrap();
    let day = |n: i64| (now + chrono::Duration::days(n)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut ids = Vec::new();
    for (name, from, to) in [("Past", -30, -16), ("Last", -15, -1), ("Now", -1, 13), ("Next", 13, 27), ("Later", 27, 41)] {
        let c = data(&mut w, "mutation($i: CycleCreateInput!) { cycleCreate(input: $i) { cycle { id } } }", json!({"i": {"teamId": "team_eng", "name": name, "startsAt": day(from), "endsAt": day(to)}}));
        ids.push(c["cycleCreate"]["cycle"]["id"].as_str().unwrap().to_string());
    }
    let d = data(&mut w, "{ cycles { nodes { name isActive isFuture isPast isNext isPrevious } } team(id: \"ENG\") { activeCycle { name } } }", json!({}));
    let flags = |name: &str| -> Vec<bool> {
        let c = d["cycles"]["nodes"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap();
        ["isActive", "isFuture", "isPast", "isNext", "isPrevious"].iter().map(|k| c[*k].as_bool().unwrap()).collect()
    };
    assert_eq!(flags("Now"), [true, false, false, false, false]);
    assert_eq!(flags("Next"), [false, true, false, true, false]);
    assert_eq!(flags("Later"), [false, true, false, false, false]);
    assert_eq!(flags("Last"), [false, false, true, false, true]);
    assert_eq!(flags("Past"), [false, false, true, false, false]);
    assert_eq!(d["team"]["activeCycle"]["name"], "Now");
    let active = data(&mut w, "{ cycles(filter: {isActive: {eq: true}}) { nodes { name } } }", json!({}));
    assert_eq!(active["cycles"]["nodes"], json!([{"name": "Now"}]));

    // Progress: (done + a quarter of started) / all points.
    let now_cycle = &ids[2];
    for (points, state) in [(3, "state_done"), (4, "state_progress"), (1, "state_todo")] {
        data(&mut w, "mutation($c: String!, $e: Int!, $s: String!) { issueCreate(input: {teamId: \"team_eng\", title: \"Work\", cycleId: $c, estimate: $e, stateId: $s}) { success } }", json!({"c": now_cycle, "e": points, "s": state}));
    }
    let p = data(&mut w, "query($id: String!) { cycle(id: $id) { progress } }", json!({"id": now_cycle}));
    assert_eq!(p["cycle"]["progress"], 0.5, "(3 + 0.25 * 4) / 8");
}

#[test]
fn reactions_show_on_the_issue_and_the_comment_they_were_made_on() {
    let mut w = World::init(None).unwrap();
    let c = data(&mut w, "mutation { commentCreate(input: {issueId: \"issue_welcome\", body: \"Nice\"}) { comment { id } } }", json!({}));
    let comment = c["commentCreate"]["comment"]["id"].as_str().unwrap().to_string();
    data(&mut w, "mutation { reactionCreate(input: {issueId: \"issue_welcome\", emoji: \"+1\"}) { success } }", json!({}));
    data(&mut w, "mutation($c: String!) { reactionCreate(input: {commentId: $c, emoji: \"tada\"}) { success } }", json!({"c": comment}));
    let d = data(&mut w, "query($c: String!) { issue(id: \"issue_welcome\") { reactions { emoji user { id } } } comment(id: $c) { reactions { emoji } } }", json!({"c": comment}));
    assert_eq!(d["issue"]["reactions"], json!([{"emoji": "+1", "user": {"id": "user_admin"}}]));
    assert_eq!(d["comment"]["reactions"], json!([{"emoji": "tada"}]));
}

#[test]
fn relation_existence_filters_find_blocked_blocking_and_related_issues() {
    let mut w = World::init(None).unwrap();
    let mk = |w: &mut World, t: &str| -> String {
        let d = data(w, "mutation($t: String!) { issueCreate(input: {teamId: \"team_eng\", title: $t}) { issue { id } } }", json!({"t": t}));
        d["issueCreate"]["issue"]["id"].as_str().unwrap().to_string()
    };
    let (a, b, c) = (mk(&mut w, "A"), mk(&mut w, "B"), mk(&mut w, "C"));
    let relate = "mutation($i: String!, $r: String!, $t: IssueRelationType!) { issueRelationCreate(input: {issueId: $i, relatedIssueId: $r, type: $t}) { success } }";
    data(&mut w, relate, json!({"i": a, "r": b, "t": "blocks"}));
    data(&mut w, relate, json!({"i": c, "r": a, "t": "related"}));
    let titles = |w: &mut World, f: Value| -> Vec<String> {
        let d = data(w, "query($f: IssueFilter) { issues(filter: $f) { nodes { title } } }", json!({"f": f}));
        let mut t: Vec<String> = d["issues"]["nodes"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap().to_string()).collect();
        t.sort();
        t
    };
    assert_eq!(titles(&mut w, json!({"hasBlockedByRelations": {"eq": true}})), ["B"]);
    assert_eq!(titles(&mut w, json!({"hasBlockingRelations": {"eq": true}})), ["A"]);
    assert_eq!(titles(&mut w, json!({"hasRelatedRelations": {"eq": true}})), ["A", "C"]);
    assert_eq!(titles(&mut w, json!({"and": [{"hasBlockedByRelations": {"eq": false}}, {"title": {"in": ["A", "B", "C"]}}]})), ["A", "C"]);
}

#[test]
fn a_sort_argument_orders_issues_by_its_keys_with_no_priority_last() {
    let mut w = World::init(None).unwrap();
    for (t, p, e) in [("Low", 4, 1), ("Urgent", 1, 3), ("None", 0, 2), ("High", 2, 3)] {
        data(&mut w, "mutation($t: String!, $p: Int!, $e: Int!) { issueCreate(input: {teamId: \"team_eng\", title: $t, priority: $p, estimate: $e}) { success } }", json!({"t": t, "p": p, "e": e}));
    }
    let titles = |w: &mut World, sort: Value| -> Vec<String> {
        let d = data(w, "query($s: [IssueSortInput!]) { issues(sort: $s, filter: {title: {in: [\"Low\", \"Urgent\", \"None\", \"High\"]}}) { nodes { title } } }", json!({"s": sort}));
        d["issues"]["nodes"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(titles(&mut w, json!([{"priority": {"order": "Ascending"}}])), ["Urgent", "High", "Low", "None"]);
    assert_eq!(titles(&mut w, json!([{"priority": {"order": "Descending"}}])), ["None", "Low", "High", "Urgent"]);
    assert_eq!(titles(&mut w, json!([{"estimate": {"order": "Descending"}}, {"title": {"order": "Ascending"}}])), ["High", "Urgent", "None", "Low"]);
}

#[test]
fn a_project_follows_its_status_its_issues_and_its_last_update() {
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { projectCreate(input: {name: \"Launch\", teamIds: [\"team_eng\"], priority: 2}) { project { id state priorityLabel startedAt } } }", json!({}));
    let p = &d["projectCreate"]["project"];
    assert_eq!((p["state"].as_str(), p["priorityLabel"].as_str(), p["startedAt"].is_null()), (Some("backlog"), Some("High"), true));
    let id = p["id"].as_str().unwrap().to_string();
    let update = "mutation($id: String!, $s: String!) { projectUpdate(id: $id, input: {statusId: $s}) { project { state startedAt completedAt } } }";
    let d = data(&mut w, update, json!({"id": id, "s": "project_status_started"}));
    assert_eq!(d["projectUpdate"]["project"]["state"], "started");
    assert!(d["projectUpdate"]["project"]["startedAt"].is_string());
    let d = data(&mut w, update, json!({"id": id, "s": "project_status_completed"}));
    assert!(d["projectUpdate"]["project"]["completedAt"].is_string());

    for (points, state) in [(2, "state_done"), (2, "state_todo")] {
        data(&mut w, "mutation($p: String!, $e: Int!, $s: String!) { issueCreate(input: {teamId: \"team_eng\", title: \"Part\", projectId: $p, estimate: $e, stateId: $s}) { success } }", json!({"p": id, "e": points, "s": state}));
    }
    let u = data(&mut w, "mutation($p: String!) { projectUpdateCreate(input: {projectId: $p, body: \"Slipping\", health: atRisk}) { projectUpdate { id } } }", json!({"p": id}));
    let posted = u["projectUpdateCreate"]["projectUpdate"]["id"].clone();
    let d = data(&mut w, "query($id: String!) { project(id: $id) { progress scope health healthUpdatedAt lastUpdate { id } } }", json!({"id": id}));
    let p = &d["project"];
    assert_eq!((p["progress"].as_f64(), p["scope"].as_f64(), p["health"].as_str()), (Some(0.5), Some(4.0), Some("atRisk")));
    assert_eq!(p["lastUpdate"]["id"], posted);
    assert!(p["healthUpdatedAt"].is_string());
}

#[test]
fn a_new_team_has_linears_defaults_and_finds_a_members_membership() {
    let mut w = World::init(None).unwrap();
    data(&mut w, "mutation { teamCreate(input: {name: \"Design\", key: \"DES\"}) { success } }", json!({}));
    let d = data(&mut w, "{ team(id: \"DES\") { issueEstimationType defaultIssueState { name } membership(userId: \"user_admin\") { owner user { id } } other: membership(userId: \"user_dev\") { id } } viewer { createdIssueCount } organization { createdIssueCount } }", json!({}));
    assert_eq!(d["team"]["issueEstimationType"], "notUsed");
    assert_eq!(d["team"]["defaultIssueState"]["name"], "Backlog");
    assert_eq!(d["team"]["membership"], json!({"owner": true, "user": {"id": "user_admin"}}));
    assert!(d["team"]["other"].is_null(), "the developer is not a member");
    assert_eq!((d["viewer"]["createdIssueCount"].as_f64(), d["organization"]["createdIssueCount"].as_f64()), (Some(1.0), Some(1.0)));
}

#[test]
fn linking_the_same_url_to_an_issue_again_updates_its_attachment() {
    let mut w = World::init(None).unwrap();
    let link = "mutation($t: String) { attachmentLinkURL(issueId: \"ENG-1\", url: \"https://example.test/pr/1\", title: $t) { attachment { id title } } }";
    let a = data(&mut w, link, json!({"t": "PR 1"}));
    let b = data(&mut w, link, json!({"t": "PR 1 (merged)"}));
    assert_eq!(a["attachmentLinkURL"]["attachment"]["id"], b["attachmentLinkURL"]["attachment"]["id"]);
    assert_eq!(b["attachmentLinkURL"]["attachment"]["title"], "PR 1 (merged)");
    let d = data(&mut w, "{ issue(id: \"ENG-1\") { attachments { nodes { id } } } }", json!({}));
    assert_eq!(d["issue"]["attachments"]["nodes"].as_array().unwrap().len(), 1);
}

#[test]
fn commenting_subscribes_the_author_to_the_issue() {
    let mut w = World::init(None).unwrap();
    data(&mut w, "mutation { issueUnsubscribe(id: \"ENG-1\") { success } }", json!({}));
    let subs = |w: &mut World| data(w, "{ issue(id: \"ENG-1\") { subscribers { nodes { id } } } }", json!({}))["issue"]["subscribers"]["nodes"].clone();
    assert_eq!(subs(&mut w), json!([]));
    data(&mut w, "mutation { commentCreate(input: {issueId: \"ENG-1\", body: \"On it\"}) { success } }", json!({}));
    assert_eq!(subs(&mut w), json!([{"id": "user_admin"}]));
}

#[test]
fn dates_and_times_are_kept_as_linear_keeps_them_and_nonsense_is_refused() {
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { issueCreate(input: {teamId: \"team_eng\", title: \"Dated\", dueDate: \"2026-12-05T22:30:00Z\"}) { issue { id dueDate } } }", json!({}));
    // A TimelessDate keeps the date alone, also when a time came with it.
    assert_eq!(d["issueCreate"]["issue"]["dueDate"], "2026-12-05");
    let id = d["issueCreate"]["issue"]["id"].as_str().unwrap().to_string();
    let (_, body, _) = post(&mut w, "mutation($id: String!) { issueUpdate(id: $id, input: {dueDate: \"next friday\"}) { success } }", json!({"id": id}));
    assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID_INPUT", "{body}");
    let d = data(&mut w, "query($id: String!) { issue(id: $id) { dueDate } }", json!({"id": id}));
    assert_eq!(d["issue"]["dueDate"], "2026-12-05", "a refused update changes nothing");

    // A DateTime is kept in UTC with milliseconds; a plain date is its midnight.
    let c = data(&mut w, "mutation { cycleCreate(input: {teamId: \"team_eng\", startsAt: \"2026-12-07\", endsAt: \"2026-12-20T12:00:00+02:00\"}) { cycle { startsAt endsAt } } }", json!({}));
    assert_eq!(c["cycleCreate"]["cycle"]["startsAt"], "2026-12-07T00:00:00.000Z");
    assert_eq!(c["cycleCreate"]["cycle"]["endsAt"], "2026-12-20T10:00:00.000Z");
}

#[test]
fn labels_nest_under_exclusive_groups_and_stay_in_their_team() {
    let mut w = World::init(None).unwrap();
    let made = |w: &mut World, input: Value| -> Result<String, Value> {
        let (_, body, _) = post(w, "mutation($i: IssueLabelCreateInput!) { issueLabelCreate(input: $i) { issueLabel { id } } }", json!({"i": input}));
        body["data"]["issueLabelCreate"]["issueLabel"]["id"].as_str().map(String::from).ok_or(body)
    };
    let kind = made(&mut w, json!({"name": "Kind", "isGroup": true, "teamId": "team_eng"})).unwrap();
    let bug = made(&mut w, json!({"name": "Defect", "parentId": kind, "teamId": "team_eng"})).unwrap();
    let chore = made(&mut w, json!({"name": "Chore", "parentId": kind, "teamId": "team_eng"})).unwrap();
    // A parent must be a group, and a group cannot have one.
    assert!(made(&mut w, json!({"name": "Under a leaf", "parentId": bug})).unwrap_err()["errors"][0]["message"].as_str().unwrap().contains("not a group"));
    assert!(made(&mut w, json!({"name": "Nested group", "isGroup": true, "parentId": kind})).is_err());

    // Two labels of one group on an issue are refused, on create, update and add.
    let (_, body, _) = post(&mut w, "mutation($l: [String!]) { issueCreate(input: {teamId: \"team_eng\", title: \"Both\", labelIds: $l}) { success } }", json!({"l": [bug, chore]}));
    assert_eq!(body["errors"][0]["extensions"]["userPresentableMessage"], "Only one label in a group can be applied.", "{body}");
    let d = data(&mut w, "mutation($l: [String!]) { issueCreate(input: {teamId: \"team_eng\", title: \"One\", labelIds: $l}) { issue { id } } }", json!({"l": [bug]}));
    let issue = d["issueCreate"]["issue"]["id"].as_str().unwrap().to_string();
    let (_, body, _) = post(&mut w, "mutation($id: String!, $l: [String!]) { issueUpdate(id: $id, input: {addedLabelIds: $l}) { success } }", json!({"id": issue, "l": [chore]}));
    assert!(body["errors"].is_array(), "{body}");
    let (_, body, _) = post(&mut w, "mutation($id: String!, $l: String!) { issueAddLabel(id: $id, labelId: $l) { success } }", json!({"id": issue, "l": chore}));
    assert!(body["errors"].is_array(), "{body}");
    // Swapping one for the other in one update is fine.
    let d = data(&mut w, "mutation($id: String!, $a: [String!], $r: [String!]) { issueUpdate(id: $id, input: {addedLabelIds: $a, removedLabelIds: $r}) { issue { labels { nodes { name } } } } }", json!({"id": issue, "a": [chore], "r": [bug]}));
    assert_eq!(d["issueUpdate"]["issue"]["labels"]["nodes"], json!([{"name": "Chore"}]));

    // A team's label stays on that team's issues; a workspace label goes anywhere.
    let d = data(&mut w, "mutation { teamCreate(input: {name: \"Design\", key: \"DES\"}) { team { id } } }", json!({}));
    let design = d["teamCreate"]["team"]["id"].as_str().unwrap().to_string();
    let (_, body, _) = post(&mut w, "mutation($t: String!, $l: [String!]) { issueCreate(input: {teamId: $t, title: \"Elsewhere\", labelIds: $l}) { success } }", json!({"t": design, "l": [bug]}));
    assert!(body["errors"][0]["message"].as_str().unwrap().contains("another team"), "{body}");
    let anywhere = made(&mut w, json!({"name": "Everywhere"})).unwrap();
    data(&mut w, "mutation($t: String!, $l: [String!]) { issueCreate(input: {teamId: $t, title: \"Elsewhere\", labelIds: $l}) { success } }", json!({"t": design, "l": [anywhere]}));
}

#[test]
fn deleting_a_project_or_document_moves_it_to_the_trash_until_it_is_unarchived() {
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { projectCreate(input: {name: \"Launch\", teamIds: [\"team_eng\"]}) { project { id } } }", json!({}));
    let id = d["projectCreate"]["project"]["id"].as_str().unwrap().to_string();
    let d = data(&mut w, "mutation($id: String!) { projectDelete(id: $id) { success entity { id trashed archivedAt } } }", json!({"id": id}));
    assert_eq!(d["projectDelete"]["entity"]["trashed"], true, "{d}");
    assert!(d["projectDelete"]["entity"]["archivedAt"].is_string());
    let listed = |w: &mut World| data(w, "{ projects { nodes { id } } }", json!({}))["projects"]["nodes"].as_array().unwrap().len();
    assert_eq!(listed(&mut w), 0);
    let d = data(&mut w, "query($id: String!) { project(id: $id) { name trashed } }", json!({"id": id}));
    assert_eq!(d["project"]["name"], "Launch", "a trashed project is still found by id");
    data(&mut w, "mutation($id: String!) { projectUnarchive(id: $id) { success } }", json!({"id": id}));
    assert_eq!(listed(&mut w), 1);

    let d = data(&mut w, "mutation($p: String!) { documentCreate(input: {title: \"Spec\", projectId: $p}) { document { id } } }", json!({"p": id}));
    let doc = d["documentCreate"]["document"]["id"].as_str().unwrap().to_string();
    let d = data(&mut w, "mutation($id: String!) { documentDelete(id: $id) { entity { trashed } } }", json!({"id": doc}));
    assert_eq!(d["documentDelete"]["entity"]["trashed"], true);
}

#[test]
fn projects_and_documents_have_linears_short_slug_ids_in_their_urls() {
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { projectCreate(input: {name: \"Mobile Launch!\", teamIds: [\"team_eng\"]}) { project { id slugId url } } }", json!({}));
    let p = &d["projectCreate"]["project"];
    let short = p["slugId"].as_str().unwrap();
    assert!(short.len() == 12 && short.chars().all(|c| c.is_ascii_hexdigit()), "{p}");
    assert!(p["url"].as_str().unwrap().ends_with(&format!("/project/mobile-launch-{short}")), "{p}");
    let d = data(&mut w, "query($id: String!) { project(id: $id) { id } }", json!({"id": short}));
    assert_eq!(d["project"]["id"], p["id"], "a project is found by its slug id");
    let d = data(&mut w, "mutation($p: String!) { documentCreate(input: {title: \"Spec v2\", projectId: $p}) { document { slugId url } } }", json!({"p": p["id"]}));
    let doc = &d["documentCreate"]["document"];
    assert!(doc["url"].as_str().unwrap().ends_with(&format!("/document/spec-v2-{}", doc["slugId"].as_str().unwrap())), "{doc}");
}

#[test]
fn a_project_milestone_is_next_overdue_unstarted_or_done_as_its_dates_and_issues_say() {
    let mut w = World::init(None).unwrap();
    let d = data(&mut w, "mutation { projectCreate(input: {name: \"Roadmap\", teamIds: [\"team_eng\"]}) { project { id createdAt } } }", json!({}));
    let project = d["projectCreate"]["project"]["id"].as_str().unwrap().to_string();
    let now = crate::dates::parse_now(d["projectCreate"]["project"]["createdAt"].as_str().unwrap()).unwrap();
    let day = |n: i64| (now + chrono::Duration::days(n)).format("%Y-%m-%d").to_string();
    let mut ids = Vec::new();
    for (name, target) in [("Beta", day(10)), ("GA", day(40)), ("Alpha", day(-5))] {
        let m = data(&mut w, "mutation($i: ProjectMilestoneCreateInput!) { projectMilestoneCreate(input: $i) { projectMilestone { id } } }", json!({"i": {"projectId": project, "name": name, "targetDate": target}}));
        ids.push(m["projectMilestoneCreate"]["projectMilestone"]["id"].as_str().unwrap().to_string());
    }
    let statuses = |w: &mut World| -> Vec<String> {
        ids.iter().map(|id| data(w, "query($id: String!) { projectMilestone(id: $id) { status } }", json!({"id": id}))["projectMilestone"]["status"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(statuses(&mut w), ["next", "unstarted", "overdue"]);

    // Beta's one issue completed: Beta is done, and GA is next.
    let d = data(&mut w, "mutation($p: String!, $m: String!) { issueCreate(input: {teamId: \"team_eng\", title: \"Ship beta\", projectId: $p, projectMilestoneId: $m}) { issue { id } } }", json!({"p": project, "m": ids[0]}));
    let issue = d["issueCreate"]["issue"]["id"].as_str().unwrap().to_string();
    assert_eq!(statuses(&mut w), ["next", "unstarted", "overdue"], "an open issue leaves it open");
    data(&mut w, "mutation($id: String!) { issueUpdate(id: $id, input: {stateId: \"state_done\"}) { success } }", json!({"id": issue}));
    assert_eq!(statuses(&mut w), ["done", "next", "overdue"]);
}
