//! Native tests of Linear's MCP tools as the twin serves them at `/mcp/v1`: the listing is the
//! vendor's, names resolve as Linear's server resolves them, and every write is the GraphQL
//! mutation an SDK call makes (same world, same recorded changes).

use pome_twin_sdk::{Call, Method, Request, Twin, Value, json};

use crate::World;

const TASK24: &str = include_str!("../../../tests/tasks-compat/bundled/24-linear-issue-triage.seed.json");
const VENDOR: &str = include_str!("../../../tests/specs/mcp/linear.json");

fn seeded() -> World {
    let v: Value = serde_json::from_str(TASK24).unwrap();
    World::init(Some(v.get("linear").cloned().unwrap_or(v))).unwrap()
}

/// Call tool `name` through the twin's MCP endpoint: its result (Err: the error text) and the call.
fn tool(w: &mut World, name: &str, args: Value) -> (Result<Value, String>, Call) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}});
    let mut req = Request::new(Method::Post, "/mcp/v1").with_json(&body);
    req.base_url = "http://twin.test/s/ses_1/linear".into();
    let mut call = Call::new(req);
    let resp = World::router().dispatch(w, &mut call);
    assert_eq!(resp.status, 200);
    let v = resp.json_body();
    let r = &v["result"];
    let out = if r["isError"] == true { Err(r["content"][0]["text"].as_str().unwrap_or("").to_string()) } else { Ok(r["structuredContent"].clone()) };
    (out, call)
}

fn ok(w: &mut World, name: &str, args: Value) -> Value {
    let (r, _) = tool(w, name, args.clone());
    r.unwrap_or_else(|e| panic!("{name} {args}: {e}"))
}

fn gql(w: &mut World, query: &str, vars: Value) -> Value {
    let req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": query, "variables": vars}));
    let mut call = Call::new(req);
    let resp = World::router().dispatch(w, &mut call);
    let v = resp.json_body();
    assert!(v.get("errors").is_none(), "{v}");
    v["data"].clone()
}

#[test]
fn the_vendor_tools_are_listed_verbatim_and_served_by_the_twin() {
    let vendor: Value = serde_json::from_str(VENDOR).unwrap();
    let tools = World::tools();
    let mut served = 0;
    for v in vendor["tools"].as_array().unwrap() {
        let Some(t) = tools.iter().find(|t| t.name == v["name"].as_str().unwrap()) else { continue };
        served += 1;
        assert_eq!(t.input_schema, v["inputSchema"], "{}", t.name);
        assert_eq!(t.description, v["description"].as_str().unwrap(), "{}", t.name);
        assert_eq!(t.read_only, v["readOnly"].as_bool().unwrap(), "{}", t.name);
        assert_eq!((t.path.as_str(), &t.body), ("/mcp/v1", &pome_twin_sdk::ToolBody::Mcp), "{}", t.name);
    }
    assert_eq!(served, 49);
    let mut w = seeded();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
    let mut call = Call::new(Request::new(Method::Post, "/mcp/v1").with_json(&body));
    let listed = World::router().dispatch(&mut w, &mut call).json_body();
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 49);
}

/// save_issue makes the same world as the GraphQL mutation an SDK would send, resolving the
/// team by key, the assignee by "me", the state by name and labels by name.
#[test]
fn save_issue_creates_as_issue_create_does_and_updates_by_identifier() {
    let mut a = seeded();
    let (r, call) = tool(&mut a, "save_issue", json!({"title": "Broken login", "team": "ENG", "assignee": "me", "state": "In Progress", "labels": ["agent"], "priority": 2, "description": "Steps"}));
    let issue = r.unwrap();
    assert_eq!(call.action.as_deref(), Some("issueCreate"));
    assert!(!call.changes.is_empty());
    assert_eq!((issue["identifier"].as_str(), issue["status"].as_str(), issue["assigneeId"].as_str()), (Some("ENG-3"), Some("In Progress"), Some(a.0.viewer.as_str())));
    assert_eq!(issue["labels"], json!(["Agent"]));
    assert_eq!(issue["priority"], json!({"value": 2, "name": "High"}));

    let mut b = seeded();
    let viewer = b.0.viewer.clone();
    let (_, _, gcall) = {
        let q = "mutation($i: IssueCreateInput!) { issueCreate(input: $i) { issue { id } } }";
        let req = Request::new(Method::Post, "/graphql").with_json(&json!({"query": q, "variables": {"i": {"title": "Broken login", "teamId": "team_eng", "description": "Steps", "priority": 2, "stateId": "state_progress", "assigneeId": viewer, "labelIds": ["label_agent"]}}}));
        let mut c = Call::new(req);
        let resp = World::router().dispatch(&mut b, &mut c);
        (resp.status, resp.json_body(), c)
    };
    assert_eq!(a.state(), b.state(), "the same world either way");
    assert_eq!(call.changes, gcall.changes, "the same recorded changes either way");

    // Update by identifier: a patch on the description, the state by type, no assignee.
    let (r, call) = tool(&mut a, "save_issue", json!({"id": "ENG-3", "patch": [{"op": "append", "text": " to reproduce"}], "state": "completed", "assignee": null, "estimate": 3}));
    let issue = r.unwrap();
    assert_eq!(call.action.as_deref(), Some("issueUpdate"));
    assert_eq!((issue["description"].as_str(), issue["statusType"].as_str(), &issue["assigneeId"], &issue["estimate"]), (Some("Steps to reproduce"), Some("completed"), &Value::Null, &json!(3)));
    let d = gql(&mut a, "{ issue(id: \"ENG-3\") { description completedAt state { name } assignee { id } } }", json!({}));
    assert_eq!(d["issue"]["state"]["name"], "Done");
    assert!(d["issue"]["completedAt"].is_string());

    // Creating needs a title and a team; unknown names are errors that change nothing.
    let before = a.state();
    assert!(tool(&mut a, "save_issue", json!({"title": "x"})).0.unwrap_err().contains("team"));
    assert!(tool(&mut a, "save_issue", json!({"title": "x", "team": "NOPE"})).0.unwrap_err().contains("Team not found"));
    assert!(tool(&mut a, "save_issue", json!({"title": "x", "team": "ENG", "assignee": "ghost@nowhere"})).0.unwrap_err().contains("User not found"));
    assert!(tool(&mut a, "save_issue", json!({"id": "ENG-3", "patch": [{"op": "replace", "old_string": "absent", "new_string": "y"}]})).0.is_err());
    assert_eq!(before, a.state());
}

#[test]
fn save_issue_relations_links_and_parent() {
    let mut w = seeded();
    let child = ok(&mut w, "save_issue", json!({"title": "Child", "team": "Engineering", "parentId": "ENG-1", "blocks": ["ENG-2"], "relatedTo": ["ENG-1"], "links": [{"url": "https://example.com/spec", "title": "Spec"}]}));
    assert_eq!(child["parentId"], "issue_backlog");
    let full = ok(&mut w, "get_issue", json!({"id": child["identifier"], "includeRelations": true}));
    assert_eq!(full["relations"]["blocks"][0]["identifier"], "ENG-2");
    assert_eq!(full["relations"]["relatedTo"][0]["identifier"], "ENG-1");
    assert_eq!(full["attachments"][0]["url"], "https://example.com/spec");
    let blocked = ok(&mut w, "get_issue", json!({"id": "ENG-2", "includeRelations": true}));
    assert_eq!(blocked["relations"]["blockedBy"][0]["identifier"], child["identifier"]);
    // Append-only: asking again adds nothing; removing takes the relation away.
    let n = w.0.all("IssueRelation").count();
    ok(&mut w, "save_issue", json!({"id": child["id"], "blocks": ["ENG-2"]}));
    assert_eq!(w.0.all("IssueRelation").count(), n);
    ok(&mut w, "save_issue", json!({"id": child["id"], "removeBlocks": ["ENG-2"]}));
    assert_eq!(w.0.all("IssueRelation").count(), n - 1);
}

#[test]
fn list_issues_filters_by_names_and_pages() {
    let mut w = seeded();
    let ids = |v: &Value| -> Vec<String> { v["issues"].as_array().unwrap().iter().map(|i| i["identifier"].as_str().unwrap().to_string()).collect() };
    let all = ok(&mut w, "list_issues", json!({}));
    assert_eq!(ids(&all).len(), 2);
    assert_eq!(ids(&ok(&mut w, "list_issues", json!({"state": "backlog"}))), ["ENG-1"]);
    assert_eq!(ids(&ok(&mut w, "list_issues", json!({"state": "Todo", "team": "eng"}))), ["ENG-2"]);
    assert_eq!(ids(&ok(&mut w, "list_issues", json!({"label": "Agent"}))), ["ENG-1"]);
    assert_eq!(ids(&ok(&mut w, "list_issues", json!({"priority": 3}))), ["ENG-2"]);
    assert_eq!(ids(&ok(&mut w, "list_issues", json!({"assignee": "dev@pome-twin.test"}))).len(), 2);
    assert!(ids(&ok(&mut w, "list_issues", json!({"assignee": null}))).is_empty());
    assert!(ids(&ok(&mut w, "list_issues", json!({"query": "GraphQL surface"}))) == ["ENG-2"]);
    assert!(ok(&mut w, "list_issues", json!({"updatedAt": "2026-07-20T13:00:00.000Z"}))["issues"].as_array().unwrap().len() == 1);
    let first = ok(&mut w, "list_issues", json!({"limit": 1, "orderBy": "createdAt"}));
    assert_eq!(first["hasNextPage"], true);
    let second = ok(&mut w, "list_issues", json!({"limit": 1, "orderBy": "createdAt", "cursor": first["cursor"]}));
    assert_eq!(second["hasNextPage"], false);
    assert_ne!(ids(&first), ids(&second));
    let picked = ok(&mut w, "list_issues", json!({"fields": ["title", "status"], "limit": 1}));
    let mut keys: Vec<&String> = picked["issues"][0].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["id", "status", "title"]);
    assert!(tool(&mut w, "list_issues", json!({"team": "Nope"})).0.unwrap_err().contains("Team not found"));
    assert!(tool(&mut w, "list_issues", json!({"assignee": "nobody@example.com"})).0.unwrap_err().contains("User not found"));
    // A full page of 250 fits Linear's complexity limit.
    for n in 0..250 {
        ok(&mut w, "save_issue", json!({"title": format!("Bulk {n}"), "team": "ENG", "labels": ["Agent"]}));
    }
    let page = ok(&mut w, "list_issues", json!({"limit": 250, "label": "Agent"}));
    assert_eq!((page["issues"].as_array().unwrap().len(), &page["hasNextPage"]), (250, &json!(true)));
    assert_eq!(page["issues"][0]["labels"], json!(["Agent"]));
}

#[test]
fn comments_are_saved_replied_to_listed_and_deleted() {
    let mut w = seeded();
    let (r, call) = tool(&mut w, "save_comment", json!({"issueId": "ENG-1", "body": "On it"}));
    let c = r.unwrap();
    assert_eq!(call.action.as_deref(), Some("commentCreate"));
    let reply = ok(&mut w, "save_comment", json!({"parentId": c["id"], "body": "Thanks"}));
    assert_eq!((reply["parentId"].as_str(), reply["issueId"].as_str()), (c["id"].as_str(), Some("issue_backlog")));
    let edited = ok(&mut w, "save_comment", json!({"id": c["id"], "body": "On it now"}));
    assert_eq!(edited["body"], "On it now");
    let listed = ok(&mut w, "list_comments", json!({"issueId": "ENG-1"}));
    assert_eq!(listed["comments"].as_array().unwrap().len(), 3);
    assert!(tool(&mut w, "list_comments", json!({})).0.unwrap_err().contains("exactly one"));
    assert!(tool(&mut w, "save_comment", json!({"body": "x", "issueId": "ENG-1", "projectId": "p"})).0.is_err());
    let (r, call) = tool(&mut w, "delete_comment", json!({"id": reply["id"]}));
    assert_eq!(r.unwrap()["success"], true);
    assert_eq!(call.action.as_deref(), Some("commentDelete"));
    assert_eq!(ok(&mut w, "list_comments", json!({"issueId": "ENG-1"}))["comments"].as_array().unwrap().len(), 2);
}

#[test]
fn projects_milestones_initiatives_and_status_updates() {
    let mut w = seeded();
    assert!(tool(&mut w, "save_project", json!({"name": "Apollo"})).0.unwrap_err().contains("team"));
    let p = ok(&mut w, "save_project", json!({"name": "Apollo", "addTeams": ["ENG"], "summary": "Moon", "description": "Plan", "lead": "me", "priority": 2}));
    assert_eq!((p["name"].as_str(), p["summary"].as_str(), p["description"].as_str(), p["teams"][0]["key"].as_str()), (Some("Apollo"), Some("Moon"), Some("Plan"), Some("ENG")));
    let got = ok(&mut w, "get_project", json!({"query": "apollo"}));
    assert_eq!(got["id"], p["id"]);

    let m = ok(&mut w, "save_milestone", json!({"project": "Apollo", "name": "Beta", "targetDate": "2026-09-01"}));
    assert_eq!(m["project"]["id"], p["id"]);
    let m2 = ok(&mut w, "save_milestone", json!({"project": "Apollo", "id": "Beta", "description": "First users", "targetDate": null}));
    assert_eq!((m2["id"].as_str(), m2["description"].as_str(), &m2["targetDate"]), (m["id"].as_str(), Some("First users"), &Value::Null));
    assert_eq!(ok(&mut w, "list_milestones", json!({"project": p["id"]}))["milestones"].as_array().unwrap().len(), 1);
    assert_eq!(ok(&mut w, "get_milestone", json!({"project": "Apollo", "query": "beta"}))["id"], m["id"]);
    let issue = ok(&mut w, "save_issue", json!({"id": "ENG-1", "project": "Apollo", "milestone": "Beta"}));
    assert_eq!(issue["projectMilestone"]["name"], "Beta");

    let (r, call) = tool(&mut w, "save_initiative", json!({"name": "Q3 goals", "owner": "me", "status": "active", "summary": "Ship it"}));
    let i = r.unwrap();
    assert_eq!(call.action.as_deref(), Some("initiativeCreate"));
    assert_eq!((i["status"].as_str(), i["owner"]["id"].as_str()), (Some("Active"), Some(w.0.viewer.as_str())));
    let sub = ok(&mut w, "save_initiative", json!({"name": "Sub goal", "parentInitiatives": ["Q3 goals"]}));
    assert_eq!(sub["parentInitiatives"][0]["id"], i["id"]);
    ok(&mut w, "save_project", json!({"id": "Apollo", "addInitiatives": ["Q3 goals"]}));
    let full = ok(&mut w, "get_initiative", json!({"query": "q3 goals", "includeProjects": true, "includeSubInitiatives": true}));
    assert_eq!(full["projects"][0]["id"], p["id"]);
    assert_eq!(full["subInitiatives"][0]["id"], sub["id"]);
    assert_eq!(ok(&mut w, "list_initiatives", json!({"parentInitiative": "Q3 goals"}))["initiatives"].as_array().unwrap().len(), 1);
    let listed = ok(&mut w, "list_projects", json!({"initiative": "Q3 goals", "team": "ENG", "member": "me"}));
    assert!(listed["projects"].as_array().unwrap().is_empty(), "no members yet");
    let listed = ok(&mut w, "list_projects", json!({"initiative": "Q3 goals", "team": "ENG"}));
    assert_eq!(listed["projects"][0]["initiatives"][0]["id"], i["id"]);
    assert!(tool(&mut w, "list_projects", json!({"team": "NOPE"})).0.unwrap_err().contains("Team not found"));

    let (r, call) = tool(&mut w, "save_status_update", json!({"type": "project", "project": "Apollo", "body": "Going well", "health": "onTrack"}));
    let u = r.unwrap();
    assert_eq!(call.action.as_deref(), Some("projectUpdateCreate"));
    let iu = ok(&mut w, "save_status_update", json!({"type": "initiative", "initiative": "Q3 goals", "body": "Fine", "health": "atRisk"}));
    let edited = ok(&mut w, "save_status_update", json!({"type": "project", "id": u["id"], "health": "offTrack"}));
    assert_eq!((edited["health"].as_str(), edited["body"].as_str()), (Some("offTrack"), Some("Going well")));
    assert_eq!(ok(&mut w, "get_status_updates", json!({"type": "project", "project": "Apollo"}))["statusUpdates"].as_array().unwrap().len(), 1);
    assert_eq!(ok(&mut w, "get_status_updates", json!({"type": "initiative", "id": iu["id"]}))["health"], "atRisk");
    // A status update holds one thread: a second comment is a reply in it.
    let c1 = ok(&mut w, "save_comment", json!({"statusUpdateId": u["id"], "body": "Nice"}));
    let c2 = ok(&mut w, "save_comment", json!({"statusUpdateId": u["id"], "statusUpdateType": "project", "body": "Agreed"}));
    assert_eq!(c2["parentId"], c1["id"]);
    ok(&mut w, "delete_status_update", json!({"type": "project", "id": u["id"]}));
    assert!(ok(&mut w, "get_status_updates", json!({"type": "project"}))["statusUpdates"].as_array().unwrap().is_empty());

    let label = ok(&mut w, "create_initiative_label", json!({"name": "Bets", "color": "#ff0000"}));
    assert_eq!(ok(&mut w, "list_initiative_labels", json!({"name": "bet"}))["labels"][0]["id"], label["id"]);
    let labelled = ok(&mut w, "save_initiative", json!({"id": i["id"], "labels": ["Bets"], "patch": [{"op": "prepend", "text": "# Goals\n"}]}));
    assert_eq!(labelled["labels"], json!(["Bets"]));
}

#[test]
fn documents_attachments_teams_users_and_the_workspace() {
    let mut w = seeded();
    assert!(tool(&mut w, "save_document", json!({"title": "Spec"})).0.unwrap_err().contains("parent"));
    let d = ok(&mut w, "save_document", json!({"title": "Spec", "content": "Hello ![img](https://uploads.linear.app/x.png)", "issue": "ENG-1"}));
    assert_eq!(d["issue"]["identifier"], "ENG-1");
    let d2 = ok(&mut w, "save_document", json!({"id": d["id"], "patch": [{"op": "replace", "old_string": "Hello", "new_string": "Hi"}]}));
    assert!(d2["content"].as_str().unwrap().starts_with("Hi "));
    assert_eq!(ok(&mut w, "get_document", json!({"id": d["id"]}))["title"], "Spec");
    let imgs = ok(&mut w, "extract_images", json!({"markdown": d2["content"]}));
    assert_eq!(imgs["images"][0]["url"], "https://uploads.linear.app/x.png");

    let prep = ok(&mut w, "prepare_attachment_upload", json!({"issue": "ENG-2", "filename": "shot.png", "contentType": "image/png", "size": 10}));
    assert!(prep["uploadRequest"]["url"].as_str().unwrap().starts_with("http://twin.test/s/ses_1/linear/uploads/"));
    assert_eq!(prep["uploadRequest"]["headers"]["x-goog-content-length-range"], "10,10");
    // The upload target takes the bytes (a PUT outside MCP) and is no MCP tool.
    let put = prep["uploadRequest"]["url"].as_str().unwrap().strip_prefix("http://twin.test/s/ses_1/linear").unwrap().to_string();
    let mut req = Request::new(Method::Put, &put);
    req.auth = pome_twin_sdk::Auth::Missing;
    assert!(World::serves_without_auth(&req), "a signed upload URL needs no token");
    let mut upload = Call::new(req);
    assert_eq!(World::router().dispatch(&mut w, &mut upload).status, 200);
    assert!(World::actions().iter().all(|a| a.method != "PUT"));
    let (r, call) = tool(&mut w, "create_attachment_from_upload", json!({"issue": "ENG-2", "assetUrl": prep["assetUrl"], "title": "Screenshot"}));
    let att = r.unwrap();
    assert_eq!(call.action.as_deref(), Some("attachmentCreate"));
    assert_eq!(ok(&mut w, "get_attachment", json!({"id": att["id"]}))["url"], prep["assetUrl"]);
    assert_eq!(ok(&mut w, "get_issue", json!({"id": "ENG-2"}))["attachments"][0]["title"], "Screenshot");
    // The deprecated one-step upload checks the bytes against their digest first.
    let sha = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
    assert!(tool(&mut w, "create_attachment", json!({"issue": "ENG-2", "base64Content": "aGVsbG8=", "filename": "a.txt", "contentType": "text/plain", "sha256": "00".repeat(32)})).0.unwrap_err().contains("SHA-256"));
    assert!(tool(&mut w, "create_attachment", json!({"issue": "ENG-2", "base64Content": "aGVsbG8=", "filename": "a.txt", "contentType": "text/plain", "sha256": sha, "size": 6})).0.unwrap_err().contains("Size"));
    let one = ok(&mut w, "create_attachment", json!({"issue": "ENG-2", "base64Content": "aGVsbG8=", "filename": "a.txt", "contentType": "text/plain", "sha256": sha, "size": 5}));
    assert_eq!((one["title"].as_str(), one["issue"]["identifier"].as_str()), (Some("a.txt"), Some("ENG-2")));
    assert!(one["url"].as_str().unwrap().ends_with("/a.txt"));
    ok(&mut w, "delete_attachment", json!({"id": att["id"]}));
    assert!(tool(&mut w, "get_attachment", json!({"id": att["id"]})).0.is_err());

    assert_eq!(ok(&mut w, "get_team", json!({"query": "engineering"}))["statuses"].as_array().unwrap().len(), 5);
    assert_eq!(ok(&mut w, "list_teams", json!({"query": "eng"}))["teams"][0]["key"], "ENG");
    assert_eq!(ok(&mut w, "get_user", json!({"query": "me"}))["id"], w.0.viewer.clone());
    assert_eq!(ok(&mut w, "get_user", json!({"query": "Dev"}))["email"], "dev@pome-twin.test");
    assert_eq!(ok(&mut w, "list_users", json!({"query": "developer"}))["users"].as_array().unwrap().len(), 1);
    assert_eq!(ok(&mut w, "get_workspace", json!({}))["urlKey"], "pome-twin");
    assert_eq!(ok(&mut w, "list_issue_statuses", json!({"team": "ENG"}))[0]["name"], "Backlog");
    assert_eq!(ok(&mut w, "get_issue_status", json!({"id": "", "name": "Done", "team": "ENG"}))["type"], "completed");
    let l = ok(&mut w, "create_issue_label", json!({"name": "Bug", "teamId": "ENG"}));
    assert_eq!(ok(&mut w, "list_issue_labels", json!({"team": "ENG", "name": "bug"}))["labels"][0]["id"], l["id"]);
    assert!(ok(&mut w, "list_project_labels", json!({}))["labels"].as_array().unwrap().is_empty());
    assert!(ok(&mut w, "list_cycles", json!({"teamId": "ENG"})).as_array().unwrap().is_empty());
    assert_eq!(ok(&mut w, "list_documents", json!({"query": "spec"}))["documents"].as_array().unwrap().len(), 1);
}

/// Reads change nothing and are recorded under the root field they read; an unknown tool is a
/// JSON-RPC error.
#[test]
fn reads_change_nothing_and_unknown_tools_are_protocol_errors() {
    let mut w = seeded();
    let before = w.state();
    let (_, call) = tool(&mut w, "list_issues", json!({"team": "ENG"}));
    assert!(call.changes.is_empty());
    assert_eq!(call.action.as_deref(), Some("issues"));
    assert_eq!(before, w.state());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "merge_diff", "arguments": {}}});
    let mut call = Call::new(Request::new(Method::Post, "/mcp/v1").with_json(&body));
    let v = World::router().dispatch(&mut w, &mut call).json_body();
    assert_eq!(v["error"]["code"], -32602);
}

/// Releases, release pipelines, release notes and agent skills: pipelines and their stages and
/// skills come from GraphQL (no MCP tool makes them); the tools find them by slug or name.
#[test]
fn releases_notes_and_agent_skills() {
    let mut w = seeded();
    let p = gql(&mut w, "mutation { releasePipelineCreate(input: {name: \"Mobile\", type: scheduled, teamIds: [\"team_eng\"], isProduction: true}) { releasePipeline { id } } }", json!({}))["releasePipelineCreate"]["releasePipeline"]["id"].as_str().unwrap().to_string();
    for (i, (name, ty)) in [("Planned", "planned"), ("In QA", "started"), ("Shipped", "completed")].into_iter().enumerate() {
        gql(&mut w, "mutation($i: ReleaseStageCreateInput!) { releaseStageCreate(input: $i) { success } }", json!({"i": {"name": name, "type": ty, "color": "#000000", "position": i, "pipelineId": p}}));
    }
    let pipes = ok(&mut w, "list_release_pipelines", json!({"team": "ENG", "includeStages": true, "includeTeams": true}));
    assert_eq!(pipes["releasePipelines"][0]["stages"].as_array().unwrap().len(), 3);
    assert_eq!(pipes["releasePipelines"][0]["teams"][0]["key"], "ENG");
    assert!(tool(&mut w, "save_release", json!({"name": "4.2"})).0.unwrap_err().contains("pipeline"));
    let (r, call) = tool(&mut w, "save_release", json!({"name": "Spring", "version": "4.2.0", "pipeline": "mobile"}));
    let rel = r.unwrap();
    assert_eq!(call.action.as_deref(), Some("releaseCreate"));
    assert_eq!(rel["stage"]["name"], "Planned", "a release starts in its pipeline's first stage");
    let moved = ok(&mut w, "save_release", json!({"id": rel["slugId"], "stage": "started", "targetDate": "2026-09-01"}));
    assert_eq!((moved["stage"]["name"].as_str(), moved["targetDate"].as_str()), (Some("In QA"), Some("2026-09-01")));
    assert_eq!(ok(&mut w, "list_releases", json!({"stageType": "started", "pipeline": p}))["releases"].as_array().unwrap().len(), 1);
    assert!(ok(&mut w, "list_releases", json!({"version": "9.9"}))["releases"].as_array().unwrap().is_empty());
    assert!(ok(&mut w, "list_releases", json!({"hasReleaseNotes": true}))["releases"].as_array().unwrap().is_empty());

    assert!(tool(&mut w, "save_release_note", json!({"pipeline": "Mobile", "title": "Notes"})).0.unwrap_err().contains("releases"));
    let note = ok(&mut w, "save_release_note", json!({"pipeline": "Mobile", "title": "Spring notes", "content": "- Faster sync", "releases": [rel["id"]]}));
    assert_eq!(note["releases"][0]["version"], "4.2.0");
    let edited = ok(&mut w, "save_release_note", json!({"id": note["slugId"], "patch": [{"op": "append", "text": "\n- Dark mode"}]}));
    assert_eq!(edited["content"], "- Faster sync\n- Dark mode");
    assert_eq!(ok(&mut w, "get_release_note", json!({"id": note["id"]}))["content"], "- Faster sync\n- Dark mode");
    assert!(tool(&mut w, "list_release_notes", json!({"release": "never"})).0.unwrap_err().contains("Release not found"));
    assert_eq!(ok(&mut w, "list_release_notes", json!({"release": rel["id"], "includeContent": true}))["releaseNotes"][0]["content"], "- Faster sync\n- Dark mode");
    assert_eq!(ok(&mut w, "get_release", json!({"id": rel["id"], "includeReleaseNotes": true}))["releaseNotes"][0]["id"], note["id"]);
    assert_eq!(ok(&mut w, "list_releases", json!({"hasReleaseNotes": true}))["releases"].as_array().unwrap().len(), 1);
    let issue = ok(&mut w, "save_issue", json!({"id": "ENG-1", "addReleases": [rel["id"]]}));
    assert_eq!(ok(&mut w, "list_issues", json!({"release": rel["slugId"]}))["issues"][0]["id"], issue["id"]);
    let d = gql(&mut w, "{ issue(id: \"ENG-1\") { releases { nodes { id } } } }", json!({}));
    assert_eq!(d["issue"]["releases"]["nodes"][0]["id"], rel["id"]);
    ok(&mut w, "save_issue", json!({"id": "ENG-1", "removeReleases": [rel["slugId"]]}));
    assert!(ok(&mut w, "list_issues", json!({"release": rel["id"]}))["issues"].as_array().unwrap().is_empty());
    assert!(tool(&mut w, "save_issue", json!({"id": "ENG-1", "setReleases": [rel["id"]], "addReleases": [rel["id"]]})).0.is_err());

    let skill = gql(&mut w, "mutation { agentSkillCreate(input: {title: \"Triage\", body: \"# How to triage\"}) { agentSkill { id } } }", json!({}))["agentSkillCreate"]["agentSkill"]["id"].as_str().unwrap().to_string();
    let listed = ok(&mut w, "list_agent_skills", json!({}));
    assert_eq!(listed["skills"][0]["id"], skill.as_str());
    assert!(listed["skills"][0].get("body").is_none());
    assert_eq!(ok(&mut w, "get_agent_skill", json!({"id": "triage"}))["body"], "# How to triage");
}
