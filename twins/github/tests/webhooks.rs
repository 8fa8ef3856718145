//! Webhooks through the router: repository and organisation hooks (create, list, get,
//! update, config, delete), the ping on create, events set off by the REST writes and
//! filtered by each hook's `events` and `active`, GitHub's headers and signatures, JSON and
//! form bodies, and the deliveries list, get and redeliver.

mod common;
use base64::Engine as _;
use common::*;
use pome_twin_sdk::{Delivery, Method, Twin, Value, json};
use twin_github::World;
use twin_github::model::Role;
use twin_github::webhooks::{hmac_sha1, hmac_sha256};

/// The default world with the agent admin of `acme/api` (hooks need admin).
fn admin_world() -> World {
    let mut w = world();
    make_admin(&mut w);
    w
}

fn make_admin(w: &mut World) {
    let r = w.repos.get_mut("acme/api").unwrap();
    r.agent_role = Role::Admin;
    r.collaborators.insert("pome-agent".into(), Role::Admin);
}

/// One call through the router, answering what it asked the host to deliver too.
fn send(w: &mut World, method: Method, path: &str, body: Option<Value>) -> (u16, Value, Vec<Delivery>) {
    let (r, c) = dispatch(w, method, path, body);
    (r.status, r.json_body(), c.deliveries)
}

fn header<'a>(d: &'a Delivery, name: &str) -> Option<&'a str> {
    d.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

fn payload(d: &Delivery) -> Value {
    serde_json::from_slice(&d.body).expect("a json hook's body is the payload")
}

fn hook(w: &mut World, events: Value, secret: Option<&str>) -> u64 {
    let url = format!("https://receiver.test/{}", events.to_string().replace(['"', '[', ']', ','], ""));
    let mut config = json!({"url": url, "content_type": "json"});
    if let Some(s) = secret {
        config["secret"] = json!(s);
    }
    let (s, v, d) = send(w, Method::Post, "/repos/acme/api/hooks", Some(json!({"name": "web", "events": events, "config": config})));
    assert_eq!(s, 201, "{v}");
    assert_eq!(d.len(), 1, "a ping on create");
    assert_eq!(header(&d[0], "X-GitHub-Event"), Some("ping"));
    v["id"].as_u64().unwrap()
}

#[test]
fn hooks_need_admin_on_the_repository() {
    let mut w = world();
    let (s, _, d) = send(&mut w, Method::Post, "/repos/acme/api/hooks", Some(json!({"config": {"url": "https://r.test/"}})));
    assert_eq!(s, 404);
    assert!(d.is_empty());
    let (s, _, _) = send(&mut w, Method::Get, "/repos/acme/api/hooks", None);
    assert_eq!(s, 404);
}

#[test]
fn create_list_get_update_config_and_delete() {
    let mut w = admin_world();
    let (s, v, d) = send(
        &mut w,
        Method::Post,
        "/repos/acme/api/hooks",
        Some(json!({"events": ["issues", "push"], "config": {"url": "https://r.test/h", "secret": "s3cret"}})),
    );
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_u64().unwrap();
    assert_eq!((v["type"].as_str(), v["name"].as_str(), v["active"].as_bool()), (Some("Repository"), Some("web"), Some(true)));
    // GitHub's defaults: form bodies, and the secret never shown.
    assert_eq!(v["config"], json!({"url": "https://r.test/h", "content_type": "form", "insecure_ssl": "0", "secret": "********"}));
    assert_eq!(v["last_response"]["status"], "pending");
    let ping = &d[0];
    assert_eq!(header(ping, "Content-Type"), Some("application/x-www-form-urlencoded"));
    assert!(ping.body.starts_with(b"payload=%7B"));
    assert_eq!(ping.url, "https://r.test/h");
    let (_, list, _) = send(&mut w, Method::Get, "/repos/acme/api/hooks", None);
    assert_eq!(list.as_array().unwrap().len(), 1);
    let (s, got, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}"), None);
    assert_eq!((s, &got["events"]), (200, &json!(["issues", "push"])));
    let (s, v, _) = send(&mut w, Method::Patch, &format!("/repos/acme/api/hooks/{id}"), Some(json!({"add_events": ["label"], "remove_events": ["push"], "active": false})));
    assert_eq!(s, 200);
    assert_eq!((&v["events"], &v["active"]), (&json!(["issues", "label"]), &json!(false)));
    let (s, c, _) = send(&mut w, Method::Patch, &format!("/repos/acme/api/hooks/{id}/config"), Some(json!({"content_type": "json"})));
    assert_eq!((s, &c["content_type"], &c["secret"]), (200, &json!("json"), &json!("********")));
    let (_, c, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}/config"), None);
    assert_eq!(c["url"], "https://r.test/h");
    let (s, _, _) = send(&mut w, Method::Patch, &format!("/repos/acme/api/hooks/{id}"), Some(json!({"events": ["no_such_event"]})));
    assert_eq!(s, 422);
    let (s, _, _) = send(&mut w, Method::Patch, &format!("/repos/acme/api/hooks/{id}/config"), Some(json!({"content_type": "xml"})));
    assert_eq!(s, 422);
    let (s, _, _) = send(&mut w, Method::Delete, &format!("/repos/acme/api/hooks/{id}"), None);
    assert_eq!(s, 204);
    let (s, _, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}"), None);
    assert_eq!(s, 404);
}

#[test]
fn an_issue_event_is_signed_and_carries_githubs_headers() {
    let mut w = admin_world();
    let id = hook(&mut w, json!(["issues"]), Some("topsecret"));
    let (s, issue, d) = send(&mut w, Method::Post, "/repos/acme/api/issues", Some(json!({"title": "Webhooks", "labels": ["bug"]})));
    assert_eq!(s, 201);
    let actions: Vec<String> = d.iter().map(|d| payload(d)["action"].as_str().unwrap().to_string()).collect();
    assert_eq!(actions, ["opened", "labeled"], "the labels it was created with follow, as on GitHub");
    let d = &d[0];
    assert_eq!(header(d, "X-GitHub-Event"), Some("issues"));
    assert_eq!(header(d, "X-GitHub-Hook-ID"), Some(id.to_string().as_str()));
    assert_eq!(header(d, "X-GitHub-Hook-Installation-Target-Type"), Some("repository"));
    assert_eq!(header(d, "X-GitHub-Hook-Installation-Target-ID"), Some(w.repos["acme/api"].id.to_string().as_str()));
    assert!(header(d, "User-Agent").unwrap().starts_with("GitHub-Hookshot/"));
    assert_eq!(header(d, "X-GitHub-Delivery").unwrap().len(), 36);
    assert_eq!(header(d, "X-Hub-Signature-256").unwrap(), format!("sha256={}", hmac_sha256(b"topsecret", &d.body)));
    assert_eq!(header(d, "X-Hub-Signature").unwrap(), format!("sha1={}", hmac_sha1(b"topsecret", &d.body)));
    let p = payload(d);
    assert_eq!((p["action"].as_str(), &p["issue"]["number"]), (Some("opened"), &issue["number"]));
    assert_eq!(p["repository"]["full_name"], "acme/api");
    assert_eq!(p["organization"]["login"], "acme");
    assert_eq!(p["sender"]["login"], "pome-agent");
    // Closing with a label change: one event per change, in GitHub's order.
    let n = issue["number"].as_u64().unwrap();
    let (_, _, d) = send(&mut w, Method::Patch, &format!("/repos/acme/api/issues/{n}"), Some(json!({"title": "Webhooks!", "labels": [], "state": "closed"})));
    let actions: Vec<String> = d.iter().map(|d| payload(d)["action"].as_str().unwrap().to_string()).collect();
    assert_eq!(actions, ["edited", "unlabeled", "closed"]);
    assert_eq!(payload(&d[0])["changes"]["title"]["from"], "Webhooks");
    assert_eq!(payload(&d[1])["label"]["name"], "bug");
}

#[test]
fn hooks_hear_only_their_events_and_only_while_active() {
    let mut w = admin_world();
    let issues = hook(&mut w, json!(["issues"]), None);
    let all = hook(&mut w, json!(["*"]), None);
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/api/labels", Some(json!({"name": "p1", "color": "ff0000"})));
    let to: Vec<&str> = d.iter().map(|d| header(d, "X-GitHub-Hook-ID").unwrap()).collect();
    assert_eq!(to, [all.to_string()]);
    assert_eq!(header(&d[0], "X-GitHub-Event"), Some("label"));
    assert!(header(&d[0], "X-Hub-Signature-256").is_none(), "no secret, no signature");
    send(&mut w, Method::Patch, &format!("/repos/acme/api/hooks/{all}"), Some(json!({"active": false})));
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/api/issues/1/comments", Some(json!({"body": "hi"})));
    assert!(d.is_empty(), "nobody wants issue_comment now");
    let (_, _, d) = send(&mut w, Method::Patch, "/repos/acme/api/issues/1", Some(json!({"state": "closed"})));
    assert_eq!(d.iter().map(|d| header(d, "X-GitHub-Hook-ID").unwrap()).collect::<Vec<_>>(), [issues.to_string()]);
    // Reads send nothing.
    let (_, _, d) = send(&mut w, Method::Get, "/repos/acme/api/issues/1", None);
    assert!(d.is_empty());
}

#[test]
fn pushes_creates_deletes_and_merges() {
    let mut w = admin_world();
    hook(&mut w, json!(["push", "create", "delete", "pull_request"]), None);
    let (_, main, _) = send(&mut w, Method::Get, "/repos/acme/api/git/ref/heads/main", None);
    let main_sha = main["object"]["sha"].as_str().unwrap().to_string();
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/api/git/refs", Some(json!({"ref": "refs/heads/feat", "sha": main_sha})));
    let events: Vec<&str> = d.iter().map(|d| header(d, "X-GitHub-Event").unwrap()).collect();
    assert_eq!(events, ["create", "push"]);
    assert_eq!((payload(&d[0])["ref"].as_str(), payload(&d[0])["ref_type"].as_str()), (Some("feat"), Some("branch")));
    assert_eq!(payload(&d[1])["created"], true);
    let content = base64::engine::general_purpose::STANDARD.encode("hi\n");
    let (s, _, d) = send(&mut w, Method::Put, "/repos/acme/api/contents/hi.txt", Some(json!({"message": "Add hi", "content": content, "branch": "feat"})));
    assert_eq!(s, 201);
    let p = payload(&d[0]);
    assert_eq!((p["ref"].as_str(), p["before"].as_str()), (Some("refs/heads/feat"), Some(main_sha.as_str())));
    assert_eq!(p["commits"].as_array().unwrap().len(), 1);
    assert_eq!(p["commits"][0]["added"], json!(["hi.txt"]));
    assert_eq!(p["head_commit"]["message"], "Add hi");
    let (s, pr, d) = send(&mut w, Method::Post, "/repos/acme/api/pulls", Some(json!({"title": "Hi", "head": "feat", "base": "main"})));
    assert_eq!(s, 201);
    assert_eq!(payload(&d[0])["action"], "opened");
    assert_eq!(payload(&d[0])["number"], pr["number"]);
    // A new commit on the head branch: a push and a synchronize.
    let (_, file, _) = send(&mut w, Method::Get, "/repos/acme/api/contents/hi.txt?ref=feat", None);
    let content = base64::engine::general_purpose::STANDARD.encode("hi!\n");
    let (_, _, d) = send(&mut w, Method::Put, "/repos/acme/api/contents/hi.txt", Some(json!({"message": "Edit hi", "content": content, "branch": "feat", "sha": file["sha"]})));
    let got: Vec<(String, Option<String>)> =
        d.iter().map(|d| (header(d, "X-GitHub-Event").unwrap().to_string(), payload(d)["action"].as_str().map(String::from))).collect();
    assert_eq!(got, [("push".into(), None), ("pull_request".into(), Some("synchronize".into()))]);
    assert_eq!(payload(&d[0])["commits"][0]["modified"], json!(["hi.txt"]));
    let n = pr["number"].as_u64().unwrap();
    let (_, pr, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/pulls/{n}"), None);
    let (s, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/statuses/{}", pr["head"]["sha"].as_str().unwrap()), Some(json!({"state": "success", "context": "ci/test"})));
    assert_eq!((s, d.len()), (201, 0), "no hook wants status");
    let (s, _, d) = send(&mut w, Method::Put, &format!("/repos/acme/api/pulls/{n}/merge"), Some(json!({})));
    assert_eq!(s, 200);
    let merged = d.iter().find(|d| header(d, "X-GitHub-Event") == Some("pull_request")).unwrap();
    assert_eq!((payload(merged)["action"].as_str(), &payload(merged)["pull_request"]["merged"]), (Some("closed"), &json!(true)));
    let push = d.iter().find(|d| header(d, "X-GitHub-Event") == Some("push")).unwrap();
    assert_eq!(payload(push)["ref"], "refs/heads/main");
    let (_, _, d) = send(&mut w, Method::Delete, "/repos/acme/api/git/refs/heads/feat", None);
    let events: Vec<&str> = d.iter().map(|d| header(d, "X-GitHub-Event").unwrap()).collect();
    assert_eq!(events, ["delete", "push"]);
    assert_eq!(payload(&d[1])["deleted"], true);
}

#[test]
fn deliveries_are_listed_got_and_redelivered_with_the_same_guid() {
    let mut w = admin_world();
    let id = hook(&mut w, json!(["issues"]), Some("k"));
    send(&mut w, Method::Post, "/repos/acme/api/issues", Some(json!({"title": "one"})));
    let (s, list, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}/deliveries"), None);
    assert_eq!(s, 200);
    let list = list.as_array().unwrap().clone();
    assert_eq!(list.iter().map(|d| d["event"].as_str().unwrap()).collect::<Vec<_>>(), ["issues", "ping"], "newest first");
    assert_eq!((list[0]["action"].as_str(), list[0]["status"].as_str()), (Some("opened"), Some("pending")));
    let did = list[0]["id"].as_u64().unwrap();
    let (s, one, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}/deliveries/{did}"), None);
    assert_eq!(s, 200);
    assert_eq!(one["request"]["payload"]["issue"]["title"], "one");
    assert_eq!(one["request"]["headers"]["X-GitHub-Event"], "issues");
    let (s, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/hooks/{id}/deliveries/{did}/attempts"), None);
    assert_eq!(s, 202);
    assert_eq!(header(&d[0], "X-GitHub-Delivery"), one["guid"].as_str());
    let (_, list, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}/deliveries?per_page=1"), None);
    assert_eq!((list[0]["redelivery"].as_bool(), list[0]["guid"].as_str()), (Some(true), one["guid"].as_str()));
    let (s, _, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}/deliveries/999999"), None);
    assert_eq!(s, 404);
    // Pings and tests go to the one hook.
    let (s, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/hooks/{id}/pings"), None);
    assert_eq!((s, d.len(), header(&d[0], "X-GitHub-Event")), (204, 1, Some("ping")));
    let (s, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/hooks/{id}/tests"), None);
    assert_eq!((s, d.len()), (204, 0), "the hook does not subscribe to push");
    send(&mut w, Method::Patch, &format!("/repos/acme/api/hooks/{id}"), Some(json!({"add_events": ["push"]})));
    let (_, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/hooks/{id}/tests"), None);
    assert_eq!(header(&d[0], "X-GitHub-Event"), Some("push"));
}

#[test]
fn organisation_hooks_hear_every_repository_of_the_organisation() {
    let mut w = world();
    // Not an owner: the organisation's hooks are hidden.
    let (s, _, _) = send(&mut w, Method::Get, "/orgs/acme/hooks", None);
    assert_eq!(s, 404);
    make_admin(&mut w);
    let (s, h, d) = send(&mut w, Method::Post, "/orgs/acme/hooks", Some(json!({"name": "web", "events": ["milestone"], "config": {"url": "https://org.test/", "content_type": "json"}})));
    assert_eq!(s, 201, "{h}");
    assert_eq!(h["type"], "Organization");
    assert_eq!(header(&d[0], "X-GitHub-Hook-Installation-Target-Type"), Some("organization"));
    assert_eq!(payload(&d[0])["organization"]["login"], "acme");
    let id = h["id"].as_u64().unwrap();
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/api/milestones", Some(json!({"title": "v9"})));
    assert_eq!((d.len(), payload(&d[0])["action"].as_str()), (1, Some("created")));
    let (s, list, _) = send(&mut w, Method::Get, &format!("/orgs/acme/hooks/{id}/deliveries"), None);
    assert_eq!((s, list.as_array().unwrap().len()), (200, 2));
    let (s, _, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}"), None);
    assert_eq!(s, 404, "an organisation's hook is not the repository's");
    let (s, _, _) = send(&mut w, Method::Delete, &format!("/orgs/acme/hooks/{id}"), None);
    assert_eq!(s, 204);
}

#[test]
fn statuses_checks_reviews_comments_and_releases() {
    let mut w = admin_world();
    hook(&mut w, json!(["*"]), None);
    let (_, pr, _) = send(&mut w, Method::Get, "/repos/acme/api/pulls/3", None);
    let sha = pr["head"]["sha"].as_str().unwrap().to_string();
    let event = |d: &[Delivery]| d.iter().map(|d| format!("{}.{}", header(d, "X-GitHub-Event").unwrap(), payload(d)["action"].as_str().unwrap_or("-"))).collect::<Vec<_>>();
    let (_, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/statuses/{sha}"), Some(json!({"state": "failure", "context": "ci/lint"})));
    assert_eq!(event(&d), ["status.-"]);
    assert_eq!((payload(&d[0])["sha"].as_str(), payload(&d[0])["state"].as_str()), (Some(sha.as_str()), Some("failure")));
    let (_, run, d) = send(&mut w, Method::Post, "/repos/acme/api/check-runs", Some(json!({"name": "build", "head_sha": sha, "status": "in_progress"})));
    assert_eq!(event(&d), ["check_run.created"]);
    let (_, _, d) = send(&mut w, Method::Patch, &format!("/repos/acme/api/check-runs/{}", run["id"]), Some(json!({"conclusion": "success"})));
    assert_eq!(event(&d), ["check_run.completed", "check_suite.completed"]);
    assert_eq!(payload(&d[1])["check_suite"]["conclusion"], "success");
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/api/pulls/3/reviews", Some(json!({"event": "COMMENT", "body": "looks fine"})));
    assert_eq!(event(&d), ["pull_request_review.submitted"]);
    let (_, files, _) = send(&mut w, Method::Get, "/repos/acme/api/pulls/3/files", None);
    let (s, c, d) = send(&mut w, Method::Post, "/repos/acme/api/pulls/3/comments", Some(json!({"body": "nit", "commit_id": sha, "path": files[0]["filename"], "line": 1})));
    assert_eq!(s, 201, "{c}");
    assert_eq!(event(&d), ["pull_request_review_comment.created"]);
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/api/releases", Some(json!({"tag_name": "v2.0.0", "name": "two"})));
    assert_eq!(event(&d), ["create.-", "push.-", "release.created", "release.published", "release.released"]);
}

#[test]
fn a_world_without_hooks_sends_nothing_and_is_unchanged_by_them() {
    let mut w = world();
    let next = w.next_id;
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/api/issues", Some(json!({"title": "quiet"})));
    assert!(d.is_empty());
    assert_eq!(w.next_id, next + 1, "only the issue took an id");
    assert!(w.hook_deliveries.is_empty());
}

#[test]
fn the_webhook_delivered_check_reads_the_state_export() {
    use pome_twin_sdk::{CheckWorld, Params};
    let mut w = admin_world();
    let seed = w.state_json();
    hook(&mut w, json!(["issues"]), None);
    send(&mut w, Method::Patch, "/repos/acme/api/issues/1", Some(json!({"state": "closed"})));
    let state = w.state_json();
    let decide = |event: &str| {
        let p: Params = [("event", event), ("repo", "acme/api")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        World::evaluate_check("github.webhook_delivered", &p, &CheckWorld { seed: &seed, state: &state, tape: &[] }).unwrap()
    };
    let o = decide("issues.closed");
    assert!(o.holds, "{}", o.reason);
    assert!(decide("issues").holds);
    let o = decide("issues.reopened");
    assert!(!o.holds);
    assert!(o.reason.contains("issues.closed") && o.reason.contains("ping"), "{}", o.reason);
    assert!(!decide("push").holds);
}

#[test]
fn graphql_mutations_set_off_the_same_webhooks() {
    let mut w = admin_world();
    hook(&mut w, json!(["issues", "issue_comment"]), None);
    let repo = twin_github::render::node_id("Repository", w.repos["acme/api"].id);
    let q = format!(r#"mutation {{ createIssue(input: {{repositoryId: "{repo}", title: "From GraphQL"}}) {{ issue {{ number }} }} }}"#);
    let (s, v, d) = send(&mut w, Method::Post, "/graphql", Some(json!({"query": q})));
    assert_eq!(s, 200, "{v}");
    assert!(v["data"]["createIssue"]["issue"]["number"].is_u64(), "{v}");
    assert_eq!(d.len(), 1);
    assert_eq!((header(&d[0], "X-GitHub-Event"), payload(&d[0])["action"].as_str()), (Some("issues"), Some("opened")));
    assert_eq!(payload(&d[0])["issue"]["title"], "From GraphQL");
}

#[test]
fn a_renamed_repository_keeps_its_hooks() {
    let mut w = admin_world();
    let id = hook(&mut w, json!(["issues"]), None);
    let (s, _, _) = send(&mut w, Method::Patch, "/repos/acme/api", Some(json!({"name": "service"})));
    assert_eq!(s, 200);
    let (s, h, _) = send(&mut w, Method::Get, &format!("/repos/acme/service/hooks/{id}"), None);
    assert_eq!(s, 200);
    assert!(h["url"].as_str().unwrap().ends_with(&format!("/repos/acme/service/hooks/{id}")));
    let (_, _, d) = send(&mut w, Method::Post, "/repos/acme/service/issues", Some(json!({"title": "after the rename"})));
    assert_eq!(payload(&d[0])["repository"]["full_name"], "acme/service");
}

#[test]
fn a_pending_reviews_comments_go_out_when_it_is_submitted() {
    let mut w = admin_world();
    hook(&mut w, json!(["pull_request_review", "pull_request_review_comment"]), None);
    let (_, files, _) = send(&mut w, Method::Get, "/repos/acme/api/pulls/3/files", None);
    let path = files[0]["filename"].clone();
    let (s, rv, d) = send(&mut w, Method::Post, "/repos/acme/api/pulls/3/reviews", Some(json!({"body": "draft", "comments": [{"path": path, "line": 1, "body": "hmm"}]})));
    assert_eq!((s, rv["state"].as_str()), (200, Some("PENDING")), "{rv}");
    assert!(d.is_empty(), "nothing while pending");
    let (s, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/pulls/3/reviews/{}/events", rv["id"]), Some(json!({"event": "COMMENT"})));
    assert_eq!(s, 200);
    let got: Vec<String> = d.iter().map(|d| format!("{}.{}", header(d, "X-GitHub-Event").unwrap(), payload(d)["action"].as_str().unwrap())).collect();
    assert_eq!(got, ["pull_request_review.submitted", "pull_request_review_comment.created"]);
    assert_eq!(payload(&d[0])["review"]["state"], "commented");
    assert_eq!(payload(&d[1])["comment"]["body"], "hmm");
}

#[test]
fn hook_limits_obeyed_and_violated() {
    let mut w = admin_world();
    for i in 0..twin_github::webhooks::MAX_HOOKS {
        let (s, v, _) = send(&mut w, Method::Post, "/repos/acme/api/hooks", Some(json!({"config": {"url": format!("https://r.test/{i}")}})));
        assert_eq!(s, 201, "{v}");
    }
    let (s, v, _) = send(&mut w, Method::Post, "/repos/acme/api/hooks", Some(json!({"config": {"url": "https://r.test/one-too-many"}})));
    assert_eq!(s, 422, "{v}");
    // Requests kept per hook are bounded, the oldest dropped first; what was sent is remembered.
    let mut w = admin_world();
    let id = hook(&mut w, json!(["label"]), None);
    let max = twin_github::webhooks::MAX_DELIVERIES_PER_HOOK;
    for i in 0..max + 5 {
        send(&mut w, Method::Post, "/repos/acme/api/labels", Some(json!({"name": format!("l{i}"), "color": "ffffff"})));
    }
    let all: Vec<&twin_github::webhooks::HookDelivery> = w.hook_deliveries.values().filter(|d| d.hook == id).collect();
    assert_eq!(all.len(), max + 6, "the ping and every label");
    let kept: Vec<&&twin_github::webhooks::HookDelivery> = all.iter().filter(|d| d.payload.is_some()).collect();
    assert_eq!(kept.len(), max);
    assert!(kept.iter().all(|d| d.event == "label"), "the ping and the oldest labels lost their payloads first");
    let ping = all[0].id;
    let (s, old, _) = send(&mut w, Method::Get, &format!("/repos/acme/api/hooks/{id}/deliveries/{ping}"), None);
    assert_eq!((s, &old["event"], &old["request"]["payload"]), (200, &json!("ping"), &Value::Null));
    let (s, _, d) = send(&mut w, Method::Post, &format!("/repos/acme/api/hooks/{id}/deliveries/{ping}/attempts"), None);
    assert_eq!((s, d.len()), (422, 0));
}

#[test]
fn a_deleted_repository_takes_its_hooks_with_it() {
    let mut w = admin_world();
    let id = hook(&mut w, json!(["*"]), None);
    let (s, _, _) = send(&mut w, Method::Delete, "/repos/acme/api", None);
    assert_eq!(s, 204);
    assert!(!w.hooks.contains_key(&id));
    assert!(w.hook_deliveries.values().all(|d| d.hook != id));
}
