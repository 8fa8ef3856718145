//! Gists through the router: create, the lists, get, update (a rename, a file deleted with
//! `null`), revisions, forks, stars, comments, raw files, seeds and the tape's changes.

mod common;
use common::*;
use pome_twin_sdk::{Method, Value, json};

fn seed() -> Value {
    json!({
        "users": [{"login": "alice"}, {"login": "bob"}, {"login": "pome-agent"}],
        "gists": [
            {"owner": "alice", "description": "alice's notes", "public": true, "files": {"notes.md": "# notes\n"},
             "comments": [{"author": "bob", "body": "nice"}], "starred_by": ["bob"]},
            {"owner": "alice", "description": "secret", "files": {"key.txt": "hidden\n"}}
        ]
    })
}

fn create(w: &mut twin_github::World, public: bool) -> Value {
    let (s, g) = post(w, "/gists", json!({"description": "helpers", "public": public,
        "files": {"a.py": {"content": "x = 1\n"}, "b.txt": {"content": "b\n"}}}));
    assert_eq!(s, 201, "{g}");
    g
}

#[test]
fn create_answers_the_gist_with_its_files_and_first_revision() {
    let mut w = seeded(seed());
    let g = create(&mut w, false);
    let id = g["id"].as_str().unwrap();
    assert_eq!(id.len(), 32);
    assert_eq!(g["public"], false);
    assert_eq!(g["owner"]["login"], "pome-agent");
    assert_eq!(g["user"], Value::Null);
    assert_eq!(g["files"]["a.py"]["content"], "x = 1\n");
    assert_eq!(g["files"]["a.py"]["language"], "Python");
    assert_eq!(g["files"]["a.py"]["size"], 6);
    assert_eq!(g["files"]["a.py"]["truncated"], false);
    assert_eq!(g["history"].as_array().unwrap().len(), 1);
    assert_eq!(g["history"][0]["change_status"]["additions"], 2);
    // The raw URL is served by the twin.
    let raw = g["files"]["a.py"]["raw_url"].as_str().unwrap().strip_prefix("http://h/s/ses_1/github").unwrap().to_string();
    let (r, _) = dispatch(&mut w, Method::Get, &raw, None);
    assert_eq!((r.status, String::from_utf8(r.body).unwrap()), (200, "x = 1\n".to_string()));
    // No files, or an empty one, is GitHub's 422.
    assert_eq!(post(&mut w, "/gists", json!({"description": "x"})).0, 422);
    assert_eq!(post(&mut w, "/gists", json!({"files": {"a": {"content": ""}}})).0, 422);
}

#[test]
fn lists_show_whose_and_which_gists() {
    let mut w = seeded(seed());
    create(&mut w, false);
    let ids = |v: &Value| v.as_array().unwrap().iter().map(|g| g["description"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let (_, mine) = get(&mut w, "/gists");
    assert_eq!(ids(&mine), ["helpers"]);
    assert!(mine[0]["files"]["a.py"].get("content").is_none(), "lists leave contents out");
    let (_, public) = get(&mut w, "/gists/public");
    assert_eq!(ids(&public), ["alice's notes"]);
    let (_, alices) = get(&mut w, "/users/alice/gists");
    assert_eq!(ids(&alices), ["alice's notes"], "another user's secret gists are not listed");
    let (_, starred) = get(&mut w, "/gists/starred");
    assert_eq!(ids(&starred), Vec::<String>::new());
    assert_eq!(get(&mut w, "/users/nobody/gists").0, 404);
    // A secret gist is unlisted, not private.
    let secret = w.gists.values().find(|g| g.description.as_deref() == Some("secret")).unwrap().id.clone();
    assert_eq!(get(&mut w, &format!("/gists/{secret}")).0, 200);
}

#[test]
fn update_renames_edits_and_deletes_files_in_new_revisions() {
    let mut w = seeded(seed());
    let g = create(&mut w, true);
    let id = g["id"].as_str().unwrap().to_string();
    let first = g["history"][0]["version"].as_str().unwrap().to_string();
    let (s, v) = patch(&mut w, &format!("/gists/{id}"), json!({"description": "renamed",
        "files": {"a.py": {"filename": "main.py", "content": "x = 2\ny = 3\n"}, "b.txt": null}}));
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["description"], "renamed");
    let names: Vec<&String> = v["files"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["main.py"]);
    assert_eq!(v["files"]["main.py"]["content"], "x = 2\ny = 3\n");
    let history = v["history"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[1]["version"], first.as_str(), "history is newest first");
    // A description alone makes no revision.
    let (_, v) = patch(&mut w, &format!("/gists/{id}"), json!({"description": "again"}));
    assert_eq!(v["history"].as_array().unwrap().len(), 2);
    // Revisions answer the files as they were.
    let (s, old) = get(&mut w, &format!("/gists/{id}/{first}"));
    assert_eq!(s, 200);
    assert_eq!(old["files"]["b.txt"]["content"], "b\n");
    assert_eq!(get(&mut w, &format!("/gists/{id}/{}", "0".repeat(40))).0, 404);
    let (_, commits) = get(&mut w, &format!("/gists/{id}/commits"));
    assert_eq!(commits.as_array().unwrap().len(), 2);
    assert_eq!(commits[1]["version"], first.as_str());
    // Deleting a file that is not there, or the last file, is refused.
    assert_eq!(patch(&mut w, &format!("/gists/{id}"), json!({"files": {"nope.txt": null}})).0, 422);
    assert_eq!(patch(&mut w, &format!("/gists/{id}"), json!({"files": {"main.py": null}})).0, 422);
    // Someone else's gist cannot be changed or deleted.
    let alices = w.gists.values().find(|g| g.owner == "alice").unwrap().id.clone();
    assert_eq!(patch(&mut w, &format!("/gists/{alices}"), json!({"description": "mine now"})).0, 404);
    assert_eq!(delete(&mut w, &format!("/gists/{alices}")).0, 404);
    assert_eq!(delete(&mut w, &format!("/gists/{id}")).0, 204);
    assert_eq!(get(&mut w, &format!("/gists/{id}")).0, 404);
}

#[test]
fn forks_stars_and_comments() {
    let mut w = seeded(seed());
    let alices = w.gists.values().find(|g| g.description.as_deref() == Some("alice's notes")).unwrap().id.clone();
    let (s, f) = post(&mut w, &format!("/gists/{alices}/forks"), json!({}));
    assert_eq!(s, 201, "{f}");
    assert_eq!(f["owner"]["login"], "pome-agent");
    assert_eq!(post(&mut w, &format!("/gists/{alices}/forks"), json!({})).0, 422, "forked already");
    let own = f["id"].as_str().unwrap().to_string();
    assert_eq!(post(&mut w, &format!("/gists/{own}/forks"), json!({})).0, 422, "your own gist");
    let (_, forks) = get(&mut w, &format!("/gists/{alices}/forks"));
    assert_eq!(forks[0]["id"], own.as_str());
    let (_, fork) = get(&mut w, &format!("/gists/{own}"));
    assert_eq!(fork["fork_of"]["id"], alices.as_str());
    assert_eq!(fork["files"]["notes.md"]["content"], "# notes\n");
    let (_, orig) = get(&mut w, &format!("/gists/{alices}"));
    assert_eq!(orig["forks"][0]["id"], own.as_str());
    assert_eq!(orig["forks"][0]["user"]["login"], "pome-agent");

    let star = format!("/gists/{alices}/star");
    assert_eq!(get(&mut w, &star), (404, json!({})), "not starred: an empty object, as GitHub describes it");
    assert_eq!(get(&mut w, "/gists/0000/star").1["message"], "Not Found");
    assert_eq!(put(&mut w, &star, json!({})).0, 204);
    assert_eq!(get(&mut w, &star).0, 204);
    let (_, starred) = get(&mut w, "/gists/starred");
    assert_eq!(starred[0]["id"], alices.as_str());
    assert_eq!(delete(&mut w, &star).0, 204);
    assert_eq!(get(&mut w, &star).0, 404);

    let comments = format!("/gists/{alices}/comments");
    let (_, seeded) = get(&mut w, &comments);
    assert_eq!(seeded[0]["user"]["login"], "bob");
    let theirs = seeded[0]["id"].as_u64().unwrap();
    let (s, c) = post(&mut w, &comments, json!({"body": "thanks"}));
    assert_eq!(s, 201, "{c}");
    assert_eq!(c["author_association"], "NONE");
    let cid = c["id"].as_u64().unwrap();
    let (s, c) = patch(&mut w, &format!("{comments}/{cid}"), json!({"body": "thanks!"}));
    assert_eq!((s, c["body"].as_str()), (200, Some("thanks!")));
    assert_eq!(get(&mut w, &format!("{comments}/{cid}")).1["body"], "thanks!");
    assert_eq!(patch(&mut w, &format!("{comments}/{theirs}"), json!({"body": "edited"})).0, 403);
    assert_eq!(delete(&mut w, &format!("{comments}/{theirs}")).0, 403);
    assert_eq!(post(&mut w, &comments, json!({"body": ""})).0, 422);
    assert_eq!(get(&mut w, &format!("/gists/{alices}")).1["comments"], 2);
    assert_eq!(delete(&mut w, &format!("{comments}/{cid}")).0, 204);
    assert_eq!(get(&mut w, &format!("{comments}/{cid}")).0, 404);
}

#[test]
fn a_long_file_is_truncated_in_answers_and_whole_at_its_raw_url() {
    let mut w = seeded(seed());
    let big = "a".repeat(1024 * 1024 + 10);
    let (s, g) = post(&mut w, "/gists", json!({"files": {"big.txt": {"content": big}}}));
    assert_eq!(s, 201);
    let f = &g["files"]["big.txt"];
    assert_eq!(f["truncated"], true);
    assert_eq!(f["size"], 1024 * 1024 + 10);
    assert_eq!(f["content"].as_str().unwrap().len(), 1024 * 1024);
    let raw = f["raw_url"].as_str().unwrap().strip_prefix("http://h/s/ses_1/github").unwrap().to_string();
    let (r, _) = dispatch(&mut w, Method::Get, &raw, None);
    assert_eq!(r.body.len(), 1024 * 1024 + 10);
}

#[test]
fn gist_writes_are_recorded_and_exported() {
    let mut w = seeded(seed());
    let (r, c) = dispatch(&mut w, Method::Post, "/gists", Some(json!({"files": {"x.md": {"content": "x"}}})));
    assert_eq!(r.status, 201);
    assert_eq!(c.action.as_deref(), Some("gists.create"));
    assert_eq!(c.changes[0].entity, "gist");
    let state = pome_twin_sdk::Twin::state(&w);
    let gists = state["gists"].as_array().unwrap();
    assert_eq!(gists.len(), 3);
    assert!(gists.iter().any(|g| g["files"]["x.md"] == "x" && g["owner"] == "pome-agent"));
    assert!(gists.iter().any(|g| g["stars"] == json!(["bob"])));
}

#[test]
fn seeds_with_broken_gists_are_refused() {
    use pome_twin_sdk::Twin;
    let bad = |g: Value| twin_github::World::init(Some(json!({"users": [{"login": "alice"}], "gists": [g]}))).unwrap_err();
    assert!(bad(json!({"owner": "alice"})).contains("gists[0].files"));
    assert!(bad(json!({"owner": "carol", "files": {"a": "b"}})).contains("unknown user"));
    assert!(bad(json!({"owner": "alice", "files": {"a": ""}})).contains("gists[0].files.a"));
    assert!(bad(json!({"owner": "alice", "files": {"a": "b"}, "stars": 3})).contains("stars"));
}

#[test]
fn profiles_count_a_users_gists() {
    let mut w = seeded(seed());
    create(&mut w, false);
    assert_eq!(get(&mut w, "/users/alice").1["public_gists"], 1);
    let (_, me) = get(&mut w, "/user");
    assert_eq!((me["public_gists"].as_u64(), me["private_gists"].as_u64()), (Some(0), Some(1)));
}

#[test]
fn the_gist_created_checks_read_the_state_export() {
    use pome_twin_sdk::{CheckWorld, Params, Twin};
    let mut w = seeded(seed());
    let before = w.state_json();
    let decide = |state: &Value, id: &str, k: &str, v: &str| {
        let p: Params = [(k.to_string(), v.to_string())].into_iter().collect();
        twin_github::World::evaluate_check(id, &p, &CheckWorld { seed: &before, state, tape: &[] }).unwrap()
    };
    // What the seed had is not something the agent created.
    assert!(!decide(&before, "github.gist_created_with_file", "file", "notes.md").holds);
    assert!(!decide(&before, "github.gist_created_described", "needle", "notes").holds);
    create(&mut w, false);
    let after = w.state_json();
    let o = decide(&after, "github.gist_created_with_file", "file", "b.txt");
    assert!(o.holds, "{}", o.reason);
    let k = after["gists"].as_array().unwrap().iter().position(|g| g["description"] == "helpers").unwrap();
    assert_eq!(o.evidence, pome_twin_sdk::Evidence::state(format!("gists[{k}]")));
    assert!(decide(&after, "github.gist_created_described", "needle", "HELPERS").holds);
    let o = decide(&after, "github.gist_created_with_file", "file", "notes.md");
    assert!(!o.holds);
    assert_eq!(o.reason, "1 gists were created, none with a file named notes.md");
}
