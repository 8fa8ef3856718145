//! Handler-level tests, natively: requests go through the real router.

use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value, json};

use crate::World;

fn world() -> World {
    World::init(None).expect("the default world initialises")
}

fn call(w: &mut World, method: &str, args: Value) -> (Response, Value, Call) {
    let mut req = Request::new(Method::Post, &format!("/api/{method}")).with_json(&args);
    // As slack_sdk sends it (a JSON body without a charset draws Slack's `missing_charset`).
    req.headers = vec![("content-type".into(), "application/json;charset=utf-8".into())];
    let mut c = Call::new(req);
    let resp = World::router().dispatch(w, &mut c);
    let body = resp.json_body();
    (resp, body, c)
}

fn ok(w: &mut World, method: &str, args: Value) -> Value {
    let (resp, body, _) = call(w, method, args);
    assert_eq!(resp.status, 200, "{method}: {body}");
    assert_eq!(body["ok"], json!(true), "{method}: {body}");
    body
}

fn err(w: &mut World, method: &str, args: Value) -> String {
    let (_, body, _) = call(w, method, args);
    assert_eq!(body["ok"], json!(false), "{method} should fail: {body}");
    body["error"].as_str().unwrap_or_default().to_string()
}

#[test]
fn default_world_boots() {
    let mut w = world();
    let me = ok(&mut w, "auth.test", json!({}));
    assert_eq!(me["user_id"], "U0AGENT001");
    assert_eq!(me["bot_id"], "B0AGENT0001");
}

fn post(w: &mut World, channel: &str, text: &str) -> String {
    let b = ok(w, "chat.postMessage", json!({"channel": channel, "text": text}));
    b["ts"].as_str().unwrap().to_string()
}

/// The repository's copy of the task files users already have.
fn compat_dir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/tasks-compat");
    assert!(dir.is_dir(), "{} is missing: the task files are part of the repository", dir.display());
    dir
}

/// Every seed that real tasks use (single-twin Slack seeds and the `slack` part of
/// multi-twin envelopes) must initialise.
#[test]
fn every_task_seed_initialises() {
    let dir = compat_dir();
    let mut seen = 0;
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if !p.to_string_lossy().ends_with(".seed.json") {
                continue;
            }
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            let md = std::fs::read_to_string(p.to_string_lossy().replace(".seed.json", ".md")).unwrap_or_default();
            let slack_only = md.contains("twins: [\"slack\"]") || md.contains("twins: [slack]");
            let part = if let Some(s) = v.get("slack") {
                s.clone()
            } else if slack_only {
                v.clone()
            } else {
                continue;
            };
            let w = World::init(Some(part)).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(w.agent_user().name, "pome-agent", "{}", p.display());
            seen += 1;
        }
    }
    assert!(seen >= 8, "expected the 6 cross-twin and 2 Slack task seeds, saw {seen}");
}

#[test]
fn task_seed_agent_can_post_to_eng_alerts_and_read_private_incident_channel() {
    let seed = json!({"team": {"id": "T_X", "name": "X", "domain": "x"},
        "users": [{"id": "U_AGENT", "name": "pome-agent", "real_name": "Bot"}, {"id": "U_G", "name": "g"}],
        "channels": [{"id": "C_ALERTS", "name": "eng-alerts", "members": ["U_AGENT", "U_G"]},
                     {"id": "C_SEC", "name": "security-private", "is_private": true, "members": ["U_AGENT"],
                      "messages": [{"user": "U_G", "text": "key sk-1"}]}]});
    let mut w = World::init(Some(seed)).unwrap();
    post(&mut w, "eng-alerts", "PR #1 successfully merged");
    post(&mut w, "C_ALERTS", "second");
    let h = ok(&mut w, "conversations.history", json!({"channel": "C_SEC"}));
    assert_eq!(h["messages"][0]["text"], "key sk-1");
    // The state export graders read carries the channel's messages.
    let state = w.state();
    let alerts = state["channels"].as_array().unwrap().iter().find(|c| c["name"] == "eng-alerts").unwrap();
    assert!(alerts["messages"].as_array().unwrap().iter().any(|m| m["text"] == "PR #1 successfully merged"));
}

#[test]
fn seed_errors_name_the_path() {
    let cases = [
        (json!({"users": [{"id": "U1"}]}), "users[0].name: required string is missing"),
        (json!({"users": [{"id": "U1", "name": "a", "nick": "x"}]}), "users[0].nick: unknown field"),
        (json!({"channels": [{"name": "x", "members": ["U9"]}]}), "channels[0].members[0]: unknown user \"U9\""),
        (json!({"channels": [{"name": "Bad Name"}]}), "channels[0].name"),
        (json!({"users": [{"id": "U1", "name": "a"}], "channels": [{"name": "x", "messages": [{"user": "U1", "text": "t", "ts": "12"}]}]}), "channels[0].messages[0].ts"),
        (json!({"users": [{"id": "U1", "name": "a"}], "channels": [{"name": "x", "messages": [{"user": "U1", "text": "t", "thread_ts": "1767261600.000100"}]}]}), "channels[0].messages[0].thread_ts: no top-level message"),
        (json!({"agent": "nobody"}), "agent: no user"),
        (json!({"rate_limits": [{"after": 1}]}), "rate_limits[0].method"),
        (json!({"team": "acme"}), "team: expected an object"),
        (json!({"bogus": 1}), "bogus: unknown field"),
    ];
    for (seed, want) in cases {
        let e = World::init(Some(seed.clone())).err().unwrap_or_else(|| panic!("{seed} should fail"));
        assert!(e.contains(want), "{seed}: got {e:?}, want {want:?}");
    }
    // `_meta` is provenance and ignored.
    assert!(World::init(Some(json!({"_meta": {"version": 1}, "users": []}))).is_ok());
}

#[test]
fn seed_threads_by_nesting_and_by_reference() {
    let seed = json!({"users": [{"id": "U1", "name": "a"}, {"id": "U2", "name": "b"}],
        "channels": [{"name": "x", "members": ["U1"], "messages": [
            {"user": "U1", "text": "parent", "ts": "1767261600.000100", "replies": [{"user": "U2", "text": "r1"}]},
            {"user": "U1", "text": "r2", "thread_ts": "1767261600.000100", "ts": "1767270000.000000"}]}]});
    let mut w = World::init(Some(seed)).unwrap();
    w.agent = "U1".into();
    let cid = w.channels[0].id.clone();
    let h = ok(&mut w, "conversations.history", json!({"channel": cid}));
    let msgs = h["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["reply_count"], 2);
    assert_eq!(msgs[0]["reply_users"], json!(["U2", "U1"]));
    assert_eq!(msgs[0]["latest_reply"], "1767270000.000000");
}

#[test]
fn describe_lists_every_method_and_only_real_routes() {
    let d: Value = serde_json::from_str(&pome_twin_sdk::describe::of::<World>().to_json()).unwrap();
    assert_eq!(d["name"], "slack");
    assert_eq!(d["client_base_path"], "/api/");
    let surface = d["surface"].as_array().unwrap();
    for (name, _, _) in crate::METHODS {
        let entry = surface.iter().find(|r| r["action"] == *name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(entry["path"], format!("/api/{name}"));
        assert!(entry["fidelity"] == "semantic" || entry["fidelity"] == "shape");
    }
    // Every declared method really answers (no unknown_method behind a declared route).
    let mut w = world();
    for (name, _, _) in crate::METHODS {
        let (resp, body, c) = call(&mut w, name, json!({}));
        assert!(!c.unsupported, "{name}");
        assert_ne!(body["error"], "unknown_method", "{name}");
        assert!(resp.status == 200 || resp.status == 429, "{name}: {}", resp.status);
    }
    assert!(surface.len() >= 75, "{}", surface.len());
}

#[test]
fn unknown_methods_are_unsupported() {
    let mut w = world();
    let (resp, body, c) = call(&mut w, "views.open", json!({}));
    assert!(c.unsupported);
    assert_eq!(resp.status, 501);
    assert_eq!(body["error"], "unknown_method");
    assert_eq!(body["req_method"], "views.open");
}

#[test]
fn posting_enforces_membership_archiving_and_text() {
    let mut w = world();
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "C0RANDOM01", "text": "hi"})), "not_in_channel");
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "C0LEADERS1", "text": "hi"})), "channel_not_found");
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "leadership", "text": "hi"})), "channel_not_found");
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001"})), "no_text");
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "x".repeat(40_001)})), "msg_too_long");
    assert_eq!(err(&mut w, "chat.postMessage", json!({"text": "x"})), "channel_not_found");
    ok(&mut w, "conversations.archive", json!({"channel": "C0ENGALRT1"}));
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "C0ENGALRT1", "text": "hi"})), "is_archived");
    // Blocks alone are enough, and are kept as sent.
    let b = ok(&mut w, "chat.postMessage", json!({"channel": "#eng", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]}));
    assert_eq!(b["message"]["blocks"][0]["type"], "section");
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "#eng", "blocks": "not json"})), "invalid_blocks_format");
}

#[test]
fn ts_is_unique_increasing_and_canonical_per_channel() {
    let mut w = world();
    let mut last = String::new();
    for i in 0..20 {
        let ts = post(&mut w, "C0ENG00001", &format!("m{i}"));
        assert!(crate::model::is_canonical_ts(&ts), "{ts}");
        assert!(ts > last, "{ts} after {last}");
        last = ts;
    }
}

#[test]
fn threads_count_replies_users_and_latest() {
    let mut w = world();
    let parent = post(&mut w, "C0ENG00001", "parent");
    let r1 = ok(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "r1", "thread_ts": parent}));
    let r2 = ok(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "r2", "thread_ts": r1["ts"], "reply_broadcast": true}));
    assert_eq!(r2["message"]["thread_ts"], json!(parent), "a reply to a reply joins the parent's thread");
    let h = ok(&mut w, "conversations.history", json!({"channel": "C0ENG00001", "limit": 2}));
    assert_eq!(h["messages"][0]["subtype"], "thread_broadcast");
    let p = &h["messages"][1];
    assert_eq!(p["ts"], json!(parent));
    assert_eq!(p["reply_count"], 2);
    assert_eq!(p["reply_users"], json!(["U0AGENT001"]));
    assert_eq!(p["latest_reply"], r2["ts"]);
    let r = ok(&mut w, "conversations.replies", json!({"channel": "C0ENG00001", "ts": parent}));
    let m = r["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m[1]["parent_user_id"], "U0AGENT001");
    assert_eq!(err(&mut w, "conversations.replies", json!({"channel": "C0ENG00001", "ts": "1.000001"})), "thread_not_found");
    assert_eq!(err(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "x", "thread_ts": "1.000001"})), "thread_not_found");
}

#[test]
fn history_paginates_with_cursor_and_bounds() {
    let mut w = world();
    let mut all = Vec::new();
    for i in 0..25 {
        all.push(post(&mut w, "C0ENGALRT1", &format!("n{i}")));
    }
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let h = ok(&mut w, "conversations.history", json!({"channel": "C0ENGALRT1", "limit": 10, "cursor": cursor}));
        for m in h["messages"].as_array().unwrap() {
            seen.push(m["ts"].as_str().unwrap().to_string());
        }
        if h["has_more"] == json!(false) {
            assert!(h.get("response_metadata").is_none());
            break;
        }
        cursor = h["response_metadata"]["next_cursor"].clone();
    }
    assert_eq!(seen.len(), 27);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(seen, sorted, "newest first, no repeats");
    let h = ok(&mut w, "conversations.history", json!({"channel": "C0ENGALRT1", "oldest": all[20], "latest": all[23], "inclusive": true}));
    assert_eq!(h["messages"].as_array().unwrap().len(), 4);
    assert_eq!(err(&mut w, "conversations.history", json!({"channel": "C0ENGALRT1", "cursor": "bogus"})), "invalid_cursor");
    assert_eq!(err(&mut w, "conversations.history", json!({"channel": "C0ENGALRT1", "latest": "yesterday"})), "invalid_ts_latest");
}

#[test]
fn bots_cannot_read_public_channels_they_are_not_in() {
    let mut w = world();
    assert_eq!(err(&mut w, "conversations.history", json!({"channel": "C0RANDOM01"})), "not_in_channel");
    ok(&mut w, "conversations.join", json!({"channel": "C0RANDOM01"}));
    let h = ok(&mut w, "conversations.history", json!({"channel": "C0RANDOM01"}));
    assert_eq!(h["messages"][0]["subtype"], "channel_join");
    let again = ok(&mut w, "conversations.join", json!({"channel": "C0RANDOM01"}));
    assert_eq!(again["warning"], "already_in_channel");
}

#[test]
fn private_channels_are_invisible_to_non_members() {
    let mut w = world();
    let l = ok(&mut w, "conversations.list", json!({"types": "public_channel,private_channel"}));
    let names: Vec<&str> = l["channels"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"security") && names.contains(&"general"));
    assert!(!names.contains(&"leadership"));
    assert_eq!(err(&mut w, "conversations.info", json!({"channel": "C0LEADERS1"})), "channel_not_found");
    let s = ok(&mut w, "search.messages", json!({"query": "Q3"}));
    assert_eq!(s["messages"]["total"], 0);
    assert_eq!(err(&mut w, "conversations.join", json!({"channel": "C0LEADERS1"})), "channel_not_found");
}

#[test]
fn update_and_delete_own_messages_only() {
    let mut w = world();
    let ts = post(&mut w, "C0ENG00001", "typo");
    let u = ok(&mut w, "chat.update", json!({"channel": "C0ENG00001", "ts": ts, "text": "fixed"}));
    assert_eq!(u["text"], "fixed");
    assert_eq!(u["message"]["edited"]["user"], "U0AGENT001");
    let carol = w.channels[1].messages[0].ts.clone();
    assert_eq!(err(&mut w, "chat.update", json!({"channel": "C0ENG00001", "ts": carol, "text": "x"})), "cant_update_message");
    assert_eq!(err(&mut w, "chat.delete", json!({"channel": "C0ENG00001", "ts": carol})), "cant_delete_message");
    ok(&mut w, "chat.delete", json!({"channel": "C0ENG00001", "ts": ts}));
    assert_eq!(err(&mut w, "chat.delete", json!({"channel": "C0ENG00001", "ts": ts})), "message_not_found");
    assert_eq!(err(&mut w, "chat.update", json!({"channel": "C0ENG00001", "ts": ts, "text": "x"})), "message_not_found");
}

#[test]
fn deleting_a_parent_leaves_a_tombstone() {
    let mut w = world();
    let p = post(&mut w, "C0ENG00001", "parent");
    ok(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "r", "thread_ts": p}));
    ok(&mut w, "chat.delete", json!({"channel": "C0ENG00001", "ts": p}));
    let r = ok(&mut w, "conversations.replies", json!({"channel": "C0ENG00001", "ts": p}));
    assert_eq!(r["messages"][0]["subtype"], "tombstone");
    assert_eq!(r["messages"][1]["text"], "r");
}

#[test]
fn reactions_and_pins() {
    let mut w = world();
    let ts = post(&mut w, "C0ENG00001", "ship it");
    let item = json!({"channel": "C0ENG00001", "timestamp": ts, "name": ":white_check_mark:"});
    ok(&mut w, "reactions.add", item.clone());
    assert_eq!(err(&mut w, "reactions.add", item.clone()), "already_reacted");
    let g = ok(&mut w, "reactions.get", json!({"channel": "C0ENG00001", "timestamp": ts}));
    assert_eq!(g["message"]["reactions"], json!([{"name": "white_check_mark", "users": ["U0AGENT001"], "count": 1}]));
    let l = ok(&mut w, "reactions.list", json!({}));
    assert_eq!(l["items"][0]["message"]["ts"], json!(ts));
    ok(&mut w, "reactions.remove", item.clone());
    assert_eq!(err(&mut w, "reactions.remove", item), "no_reaction");
    assert_eq!(err(&mut w, "reactions.add", json!({"channel": "C0ENG00001", "timestamp": ts, "name": "Bad Name"})), "invalid_name");
    assert_eq!(err(&mut w, "reactions.add", json!({"channel": "C0ENG00001", "timestamp": "1.000001", "name": "x"})), "message_not_found");
    assert_eq!(err(&mut w, "reactions.add", json!({"name": "x"})), "no_item_specified");
    let pin = json!({"channel": "C0ENG00001", "timestamp": ts});
    ok(&mut w, "pins.add", pin.clone());
    assert_eq!(err(&mut w, "pins.add", pin.clone()), "already_pinned");
    let p = ok(&mut w, "pins.list", json!({"channel": "C0ENG00001"}));
    assert_eq!(p["items"].as_array().unwrap().len(), 2);
    assert_eq!(p["items"][0]["message"]["pinned_to"], json!(["C0ENG00001"]));
    ok(&mut w, "pins.remove", pin.clone());
    assert_eq!(err(&mut w, "pins.remove", pin), "not_pinned");
}

#[test]
fn search_modifiers() {
    let mut w = world();
    let hits = |w: &mut World, q: &str| -> Vec<String> {
        let s = ok(w, "search.messages", json!({"query": q, "count": 100}));
        s["messages"]["matches"].as_array().unwrap().iter().map(|m| m["text"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(hits(&mut w, "deploy in:#eng from:@carol").len(), 2);
    assert_eq!(hits(&mut w, "has:link in:eng"), vec!["The orders migration <https://github.com/acme/api/pull/42|#42> has to land first."]);
    assert_eq!(hits(&mut w, "has:pin").len(), 1);
    assert_eq!(hits(&mut w, "has::thumbsup:").len(), 1);
    assert_eq!(hits(&mut w, "\"starting the deploy\"").len(), 1);
    assert_eq!(hits(&mut w, "deploy -checklist in:<#C0ENG00001|eng>").len(), 2);
    assert_eq!(hits(&mut w, "before:2026-01-01").len(), 0);
    assert!(hits(&mut w, "after:2025-12-31").len() > 5);
    assert_eq!(hits(&mut w, "in:@alice").len(), 1);
    assert_eq!(hits(&mut w, "is:thread deploy").len(), 2);
    assert_eq!(err(&mut w, "search.messages", json!({})), "no_query");
    let f = ok(&mut w, "search.files", json!({"query": "checklist"}));
    assert_eq!(f["files"]["total"], 1);
    let all = ok(&mut w, "search.all", json!({"query": "checklist"}));
    assert_eq!(all["messages"]["total"], 1);
}

#[test]
fn dms_and_group_dms() {
    let mut w = world();
    let o = ok(&mut w, "conversations.open", json!({"users": "U0ALICE001"}));
    assert_eq!(o["channel"]["id"], "D0ALICEAGT1");
    assert_eq!(o["already_open"], true);
    let o = ok(&mut w, "conversations.open", json!({"users": "U0BOB00001", "return_im": true}));
    let d = o["channel"]["id"].as_str().unwrap().to_string();
    assert!(d.starts_with('D'));
    assert_eq!(o["channel"]["user"], "U0BOB00001");
    post(&mut w, &d, "hi bob");
    // Posting to a user id goes to the DM with that user.
    let p = ok(&mut w, "chat.postMessage", json!({"channel": "U0BOB00001", "text": "again"}));
    assert_eq!(p["channel"], json!(d));
    let m = ok(&mut w, "conversations.open", json!({"users": ["U0BOB00001", "U0CAROL001"]}));
    let g = m["channel"]["id"].as_str().unwrap().to_string();
    let info = ok(&mut w, "conversations.info", json!({"channel": g}));
    assert_eq!(info["channel"]["is_mpim"], true);
    assert_eq!(err(&mut w, "conversations.open", json!({"users": "U_NOBODY"})), "user_not_found");
    assert_eq!(err(&mut w, "conversations.open", json!({})), "users_list_not_supplied");
    ok(&mut w, "conversations.close", json!({"channel": d}));
    let again = ok(&mut w, "conversations.close", json!({"channel": d}));
    assert_eq!(again["already_closed"], true);
}

#[test]
fn channel_lifecycle() {
    let mut w = world();
    let c = ok(&mut w, "conversations.create", json!({"name": "release-2-3"}));
    let id = c["channel"]["id"].as_str().unwrap().to_string();
    assert_eq!(c["channel"]["is_member"], true);
    assert_eq!(err(&mut w, "conversations.create", json!({"name": "release-2-3"})), "name_taken");
    assert_eq!(err(&mut w, "conversations.create", json!({"name": "Has Spaces"})), "invalid_name_specials");
    assert_eq!(err(&mut w, "conversations.create", json!({})), "invalid_name_required");
    ok(&mut w, "conversations.invite", json!({"channel": id, "users": "U0BOB00001,U0CAROL001"}));
    assert_eq!(err(&mut w, "conversations.invite", json!({"channel": id, "users": "U0BOB00001"})), "already_in_channel");
    let m = ok(&mut w, "conversations.members", json!({"channel": id}));
    assert_eq!(m["members"].as_array().unwrap().len(), 3);
    ok(&mut w, "conversations.kick", json!({"channel": id, "user": "U0CAROL001"}));
    ok(&mut w, "conversations.setTopic", json!({"channel": id, "topic": "v2.3"}));
    ok(&mut w, "conversations.setPurpose", json!({"channel": id, "purpose": "Release"}));
    let r = ok(&mut w, "conversations.rename", json!({"channel": id, "name": "release-v2-3"}));
    assert_eq!(r["channel"]["previous_names"], json!(["release-2-3"]));
    assert_eq!(r["channel"]["topic"]["value"], "v2.3");
    ok(&mut w, "conversations.archive", json!({"channel": id}));
    assert_eq!(err(&mut w, "conversations.archive", json!({"channel": id})), "already_archived");
    assert_eq!(err(&mut w, "conversations.setTopic", json!({"channel": id, "topic": "x"})), "is_archived");
    let l = ok(&mut w, "conversations.list", json!({"exclude_archived": true}));
    assert!(!l["channels"].as_array().unwrap().iter().any(|c| c["id"] == json!(id)));
    ok(&mut w, "conversations.unarchive", json!({"channel": id}));
    ok(&mut w, "conversations.leave", json!({"channel": id}));
    let left = ok(&mut w, "conversations.leave", json!({"channel": id}));
    assert_eq!(left["not_in_channel"], true);
    assert_eq!(err(&mut w, "conversations.archive", json!({"channel": "C0GENERAL1"})), "cant_archive_general");
    assert_eq!(err(&mut w, "conversations.leave", json!({"channel": "C0GENERAL1"})), "cant_leave_general");
}

#[test]
fn file_upload_flow() {
    let mut w = world();
    let u = ok(&mut w, "files.getUploadURLExternal", json!({"filename": "notes.txt", "length": 5}));
    let url = u["upload_url"].as_str().unwrap();
    assert!(url.starts_with("http://twin.test/upload/v1/F"), "{url}");
    let fid = u["file_id"].as_str().unwrap().to_string();
    let path = url.strip_prefix("http://twin.test").unwrap();
    let mut req = Request::new(Method::Post, path);
    req.body = b"hello".to_vec();
    req.auth = pome_twin_sdk::Auth::Missing;
    assert!(World::serves_without_auth(&req));
    let mut c = Call::new(req);
    let resp = World::router().dispatch(&mut w, &mut c);
    assert_eq!((resp.status, resp.body.as_slice()), (200, b"OK - 5".as_slice()));
    let done = ok(&mut w, "files.completeUploadExternal", json!({"files": json!([{"id": fid, "title": "Notes"}]).to_string(), "channel_id": "C0ENG00001", "initial_comment": "see attached"}));
    assert_eq!(done["files"][0]["title"], "Notes");
    let i = ok(&mut w, "files.info", json!({"file": fid}));
    assert_eq!(i["file"]["size"], 5);
    assert_eq!(i["file"]["channels"], json!(["C0ENG00001"]));
    let h = ok(&mut w, "conversations.history", json!({"channel": "C0ENG00001", "limit": 1}));
    assert_eq!(h["messages"][0]["text"], "see attached");
    assert_eq!(h["messages"][0]["files"][0]["id"], json!(fid));
    let l = ok(&mut w, "files.list", json!({"channel": "C0ENG00001"}));
    assert_eq!(l["paging"]["total"], 2);
    // Download through url_private.
    let dl = i["file"]["url_private"].as_str().unwrap().strip_prefix("http://twin.test").unwrap().to_string();
    let mut c = Call::new(Request::new(Method::Get, &dl));
    let resp = World::router().dispatch(&mut w, &mut c);
    assert_eq!(resp.body, b"hello");
    ok(&mut w, "files.delete", json!({"file": fid}));
    assert_eq!(err(&mut w, "files.info", json!({"file": fid})), "file_not_found");
    // Completing a file whose bytes never arrived fails.
    let u = ok(&mut w, "files.getUploadURLExternal", json!({"filename": "x.bin", "length": 3}));
    assert_eq!(err(&mut w, "files.completeUploadExternal", json!({"files": [{"id": u["file_id"]}]})), "file_not_found");
}

#[test]
fn users_groups_and_the_rest() {
    let mut w = world();
    let l = ok(&mut w, "users.list", json!({"limit": 2}));
    assert_eq!(l["members"].as_array().unwrap().len(), 2);
    assert!(!l["response_metadata"]["next_cursor"].as_str().unwrap().is_empty());
    assert_eq!(ok(&mut w, "users.lookupByEmail", json!({"email": "BOB@acme.test"}))["user"]["id"], "U0BOB00001");
    assert_eq!(err(&mut w, "users.lookupByEmail", json!({"email": "x@y"})), "users_not_found");
    assert_eq!(err(&mut w, "users.info", json!({"user": "U404"})), "user_not_found");
    let uc = ok(&mut w, "users.conversations", json!({"types": "public_channel,private_channel,im"}));
    assert_eq!(uc["channels"].as_array().unwrap().len(), 5);
    let p = ok(&mut w, "users.profile.set", json!({"profile": {"status_text": "on call", "status_emoji": ":pager:"}}));
    assert_eq!(p["profile"]["status_text"], "on call");
    assert_eq!(ok(&mut w, "users.getPresence", json!({"user": "U0CAROL001"}))["presence"], "away");
    let g = ok(&mut w, "usergroups.create", json!({"name": "On-call", "handle": "oncall"}));
    let gid = g["usergroup"]["id"].as_str().unwrap().to_string();
    ok(&mut w, "usergroups.users.update", json!({"usergroup": gid, "users": "U0BOB00001,U0CAROL001"}));
    assert_eq!(ok(&mut w, "usergroups.users.list", json!({"usergroup": gid}))["users"], json!(["U0BOB00001", "U0CAROL001"]));
    assert_eq!(err(&mut w, "usergroups.create", json!({"name": "On-call"})), "name_already_exists");
    let b = ok(&mut w, "bookmarks.add", json!({"channel_id": "C0ENG00001", "title": "CI", "type": "link", "link": "https://ci.acme.test"}));
    let bid = b["bookmark"]["id"].as_str().unwrap().to_string();
    ok(&mut w, "bookmarks.edit", json!({"channel_id": "C0ENG00001", "bookmark_id": bid, "title": "CI dashboard"}));
    assert_eq!(ok(&mut w, "bookmarks.list", json!({"channel_id": "C0ENG00001"}))["bookmarks"][1]["title"], "CI dashboard");
    ok(&mut w, "bookmarks.remove", json!({"channel_id": "C0ENG00001", "bookmark_id": bid}));
    assert_eq!(err(&mut w, "bookmarks.remove", json!({"channel_id": "C0ENG00001", "bookmark_id": bid})), "not_found");
    let r = ok(&mut w, "reminders.add", json!({"text": "standup", "time": "in 10 minutes"}));
    let rid = r["reminder"]["id"].as_str().unwrap().to_string();
    assert_eq!(ok(&mut w, "reminders.list", json!({}))["reminders"].as_array().unwrap().len(), 1);
    ok(&mut w, "reminders.delete", json!({"reminder": rid}));
    assert_eq!(err(&mut w, "reminders.delete", json!({"reminder": rid})), "not_found");
    assert_eq!(ok(&mut w, "team.info", json!({}))["team"]["domain"], "acme");
    assert_eq!(ok(&mut w, "emoji.list", json!({}))["emoji"]["squirrel"], "alias:shipit");
    let s = ok(&mut w, "dnd.setSnooze", json!({"num_minutes": 30}));
    assert_eq!(s["snooze_enabled"], true);
    assert_eq!(ok(&mut w, "dnd.info", json!({}))["snooze_enabled"], true);
    ok(&mut w, "dnd.endSnooze", json!({}));
    let sched = ok(&mut w, "chat.scheduleMessage", json!({"channel": "C0ENG00001", "text": "later", "post_at": pome_twin_sdk::time::now_unix() + 3600}));
    let l = ok(&mut w, "chat.scheduledMessages.list", json!({}));
    assert_eq!(l["scheduled_messages"][0]["id"], sched["scheduled_message_id"]);
    ok(&mut w, "chat.deleteScheduledMessage", json!({"channel": "C0ENG00001", "scheduled_message_id": sched["scheduled_message_id"]}));
    assert_eq!(err(&mut w, "chat.scheduleMessage", json!({"channel": "C0ENG00001", "text": "x", "post_at": 1})), "time_in_past");
    let e = ok(&mut w, "chat.postEphemeral", json!({"channel": "C0ENG00001", "user": "U0BOB00001", "text": "psst"}));
    assert!(e["message_ts"].is_string());
    assert_eq!(err(&mut w, "chat.postEphemeral", json!({"channel": "C0ENG00001", "user": "U0DAVE0001", "text": "psst"})), "user_not_in_channel");
    let some_ts = w.channels[1].messages[1].ts.clone();
    let pl = ok(&mut w, "chat.getPermalink", json!({"channel": "C0ENG00001", "message_ts": some_ts}));
    assert!(pl["permalink"].as_str().unwrap().starts_with("http://twin.test/archives/C0ENG00001/p"));
    let me = ok(&mut w, "chat.meMessage", json!({"channel": "C0ENG00001", "text": "waves"}));
    assert!(me["ts"].is_string());
}

#[test]
fn scheduled_messages_post_when_due() {
    let mut w = world();
    ok(&mut w, "chat.scheduleMessage", json!({"channel": "C0ENG00001", "text": "due", "post_at": pome_twin_sdk::time::now_unix() + 1}));
    // Pretend the clock moved past it.
    w.scheduled[0].post_at -= 10;
    let h = ok(&mut w, "conversations.history", json!({"channel": "C0ENG00001", "limit": 1}));
    assert_eq!(h["messages"][0]["text"], "due");
    assert!(w.scheduled.is_empty());
}

#[test]
fn rate_limit_injection_answers_429_with_retry_after() {
    let mut seed = crate::seed::default_seed();
    seed["rate_limits"] = json!([{"method": "chat.postMessage", "after": 1, "count": 1, "retry_after": 7}]);
    let mut w = World::init(Some(seed)).unwrap();
    post(&mut w, "C0ENG00001", "one");
    let (resp, body, _) = call(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "two"}));
    assert_eq!(resp.status, 429);
    assert_eq!(resp.header("retry-after"), Some("7"));
    assert_eq!(body["error"], "ratelimited");
    post(&mut w, "C0ENG00001", "three");
}

#[test]
fn auth_and_host_errors_in_slack_shape() {
    let mut req = Request::new(Method::Post, "/api/auth.test");
    req.auth = pome_twin_sdk::Auth::Missing;
    assert_eq!(World::auth_error(&Call::new(req.clone())).json_body(), json!({"ok": false, "error": "not_authed"}));
    req.auth = pome_twin_sdk::Auth::Invalid;
    let r = World::auth_error(&Call::new(req));
    assert_eq!((r.status, r.json_body()["error"].clone()), (200, json!("invalid_auth")));
    let h = World::host_error(&pome_twin_sdk::HostError { kind: pome_twin_sdk::HostErrorKind::RateLimited, message: "slow down".into() });
    assert_eq!(h.status, 429);
    assert!(h.header("retry-after").is_some());
    assert_eq!(h.json_body()["error"], "ratelimited");
}

#[test]
fn form_bodies_and_query_args_work_like_json() {
    let mut w = world();
    let req = Request::new(Method::Post, "/api/chat.postMessage").with_form(&[("channel", "C0ENG00001"), ("text", "from a form")]);
    let mut c = Call::new(req);
    let resp = World::router().dispatch(&mut w, &mut c);
    assert_eq!(resp.json_body()["message"]["text"], "from a form");
    let mut c = Call::new(Request::new(Method::Get, "/api/conversations.info?channel=C0ENG00001"));
    let resp = World::router().dispatch(&mut w, &mut c);
    assert_eq!(resp.json_body()["channel"]["name"], "eng");
    let mut c = Call::new(Request::new(Method::Post, "/api/chat.postMessage").with_json(&json!([1])));
    assert_eq!(World::router().dispatch(&mut w, &mut c).json_body()["error"], "json_not_object");
}

#[test]
fn changes_are_recorded_and_snapshots_round_trip() {
    let mut w = world();
    let (_, _, c) = call(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "hello"}));
    assert_eq!(c.changes.len(), 1);
    assert_eq!(c.changes[0].entity, "message");
    assert!(c.changes[0].id.starts_with("C0ENG00001/"));
    let (_, _, c) = call(&mut w, "conversations.history", json!({"channel": "C0ENG00001"}));
    assert!(!c.mutated());
    let state = w.state();
    assert!(state.get("id_seq").is_none() && state["channels"][0].get("last_ts").is_none());
    assert!(state["channels"][0]["messages"].is_array());
    let bytes = postcard::to_stdvec(&w).unwrap();
    let back: World = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&w).unwrap());
    // The same seed gives the same world.
    assert_eq!(serde_json::to_value(world()).unwrap(), serde_json::to_value(world()).unwrap());
}

#[test]
fn link_names_turns_handles_into_links() {
    let mut w = world();
    let b = ok(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "@carol see #eng-alerts, cc @here and bob@acme.test", "link_names": true}));
    assert_eq!(b["message"]["text"], "<@U0CAROL001> see <#C0ENGALRT1|eng-alerts>, cc <!here> and bob@acme.test");
    let b = ok(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "@carol"}));
    assert_eq!(b["message"]["text"], "@carol", "without link_names text is kept as sent");
}

#[test]
fn charset_warnings_like_slack() {
    let mut w = world();
    let mut req = Request::new(Method::Post, "/api/auth.test").with_json(&json!({}));
    req.headers = vec![("content-type".into(), "application/json".into())];
    let body = World::router().dispatch(&mut w, &mut Call::new(req)).json_body();
    assert_eq!(body["warning"], "missing_charset");
    assert_eq!(body["response_metadata"]["warnings"], json!(["missing_charset"]));
    let mut req = Request::new(Method::Post, "/api/auth.test").with_json(&json!({}));
    req.headers = vec![("content-type".into(), "application/json; charset=utf-8".into())];
    let body = World::router().dispatch(&mut w, &mut Call::new(req)).json_body();
    assert!(body.get("warning").is_none());
}

/// Every `[code]` criterion that real tasks grade on Slack binds to a declared check, and is
/// decided (not errored) on the task's own seed: every channel and user it names exists.
#[test]
fn every_slack_task_criterion_binds_to_a_declared_check() {
    let dir = compat_dir();
    let mut bound = 0;
    for sub in ["bundled", "cross-twin"] {
        let entries = std::fs::read_dir(dir.join(sub)).unwrap_or_else(|e| panic!("{sub}: {e}"));
        let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "md")).collect();
        files.sort();
        for f in files {
            let md = std::fs::read_to_string(&f).unwrap();
            let slack_only = md.contains("twins: [\"slack\"]");
            for line in md.lines() {
                let Some(rest) = line.trim().strip_prefix("- [code") else { continue };
                let Some((tag, sentence)) = rest.split_once(']') else { continue };
                if !(tag.starts_with(":slack") || (slack_only && !tag.starts_with(':'))) {
                    continue;
                }
                let sentence = sentence.trim();
                let decls = crate::checks::declared();
                let decl = decls.iter().find(|c| c.fits(sentence)).unwrap_or_else(|| panic!("{}: {sentence:?} binds to no declared check", f.display()));
                let params = decl.bind(sentence).unwrap();
                decl.validate(&params).unwrap_or_else(|e| panic!("{}: {sentence:?}: {e}", f.display()));
                let v: Value = serde_json::from_str(&std::fs::read_to_string(f.with_extension("seed.json")).unwrap()).unwrap();
                let seed = World::init(Some(v.get("slack").cloned().unwrap_or(v))).unwrap().state();
                let world = pome_twin_sdk::CheckWorld { seed: &seed, state: &seed, tape: &[] };
                World::evaluate_check(&decl.id, &params, &world).unwrap_or_else(|e| panic!("{}: {sentence:?}: {e}", f.display()));
                bound += 1;
            }
        }
    }
    assert!(bound >= 15, "{bound}");
    let d: Value = serde_json::from_str(&pome_twin_sdk::describe::of::<World>().to_json()).unwrap();
    assert_eq!(d["checks"].as_array().unwrap().len(), crate::checks::CHECKS.len());
}

#[test]
fn multipart_form_bodies_are_read_like_forms() {
    let mut w = world();
    let mut req = Request::new(Method::Post, "/api/chat.postMessage");
    req.headers = vec![("content-type".into(), "multipart/form-data; boundary=XyZ".into())];
    req.body = b"--XyZ\r\nContent-Disposition: form-data; name=\"channel\"\r\n\r\nC0ENG00001\r\n--XyZ\r\nContent-Disposition: form-data; name=\"text\"\r\n\r\nfrom curl -F\r\n--XyZ--\r\n".to_vec();
    let body = World::router().dispatch(&mut w, &mut Call::new(req)).json_body();
    assert_eq!(body["message"]["text"], "from curl -F", "{body}");
}

#[test]
fn public_file_links_work_without_a_token_until_revoked() {
    let mut w = world();
    assert_eq!(err(&mut w, "files.sharedPublicURL", json!({"file": "F0CHECKLST1"})), "not_allowed", "alice's file, not the agent's");
    // The agent's own file.
    let u = ok(&mut w, "files.getUploadURLExternal", json!({"filename": "a.txt", "length": 2}));
    let fid = u["file_id"].as_str().unwrap().to_string();
    let mut c = Call::new({ let mut r = Request::new(Method::Post, &format!("/upload/v1/{fid}")); r.body = b"hi".to_vec(); r });
    World::router().dispatch(&mut w, &mut c);
    ok(&mut w, "files.completeUploadExternal", json!({"files": [{"id": fid}]}));
    let shared = ok(&mut w, "files.sharedPublicURL", json!({"file": fid}));
    let link = shared["file"]["permalink_public"].as_str().unwrap().strip_prefix("http://twin.test").unwrap().to_string();
    let mut req = Request::new(Method::Get, &link);
    req.auth = pome_twin_sdk::Auth::Missing;
    assert!(World::serves_without_auth(&req));
    assert_eq!(World::router().dispatch(&mut w, &mut Call::new(req.clone())).body, b"hi");
    ok(&mut w, "files.revokePublicURL", json!({"file": fid}));
    assert_eq!(World::router().dispatch(&mut w, &mut Call::new(req)).status, 404);
}

/// Hostile arguments get Slack errors, never a panic (a panic would trap the store).
#[test]
fn hostile_arguments_do_not_panic() {
    let mut w = world();
    let nasty = [
        json!({"channel": "C0ENG00001", "text": "x", "thread_ts": "99999999999999999999.9"}),
        json!({"channel": "C0ENG00001", "limit": -5, "cursor": "bmV4dF90czo5OTk5OTk5OTk5OTk5OTk5OTk5OTk5OTk5"}),
        json!({"channel": ["C0ENG00001"], "ts": {"a": 1}, "text": null}),
        json!({"query": "before:9999-99-99 after:---- on:2026-13-01 during:99999 in:<#> from:<@>", "count": 1e30, "page": -1}),
        json!({"time": "in 9999999999999999 weeks", "text": "x", "num_minutes": 9_223_372_036_854_775_807i64}),
        json!({"users": ",,,", "name": "::skin-tone-99", "timestamp": "1.2.3", "file": "", "page": 9_223_372_036_854_775_807i64}),
    ];
    for (name, _, _) in crate::METHODS {
        for args in &nasty {
            let (resp, body, _) = call(&mut w, name, args.clone());
            assert!(body.get("ok").is_some(), "{name} {args}: {resp:?}");
        }
    }
}

#[test]
fn bare_urls_are_linked_like_slack_does() {
    assert_eq!(crate::chat::linkify("merged https://github.com/a/b/pull/1."), "merged <https://github.com/a/b/pull/1>.");
    assert_eq!(crate::chat::linkify("(see https://x.test/a?b=1) ok"), "(see <https://x.test/a?b=1>) ok");
    assert_eq!(crate::chat::linkify("<https://x.test|x> and <@U1>"), "<https://x.test|x> and <@U1>");
    assert_eq!(crate::chat::linkify("nohttps://x.test é"), "nohttps://x.test é");
    let mut w = world();
    let b = ok(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "PR https://github.com/acme/api/pull/7 merged"}));
    assert_eq!(b["message"]["text"], "PR <https://github.com/acme/api/pull/7> merged");
    let b = ok(&mut w, "chat.postMessage", json!({"channel": "C0ENG00001", "text": "raw https://x.test", "parse": "none"}));
    assert_eq!(b["message"]["text"], "raw https://x.test");
}

#[test]
fn integration_messages_are_bot_messages_with_a_stable_bot_id() {
    let seed = json!({"users": [{"id": "U1", "name": "a"}], "channels": [{"name": "x", "members": ["U1"], "messages": [
        {"username": "ci", "text": "one"}, {"username": "ci", "text": "two"}, {"username": "deploys", "text": "three"}]}]});
    let mut w = World::init(Some(seed)).unwrap();
    w.agent = "U1".into();
    let cid = w.channels[0].id.clone();
    let h = ok(&mut w, "conversations.history", json!({"channel": cid}));
    let m = h["messages"].as_array().unwrap();
    assert_eq!(m[2]["subtype"], "bot_message");
    assert_eq!(m[2]["username"], "ci");
    assert!(m[2].get("user").is_none());
    assert_eq!(m[1]["bot_id"], m[2]["bot_id"]);
    assert_ne!(m[0]["bot_id"], m[2]["bot_id"]);
}

fn tool(w: &mut World, name: &str, args: Value) -> Value {
    let mut req = Request::new(Method::Post, &format!("/mcp-tools/{name}")).with_json(&args);
    req.headers = vec![("content-type".into(), "application/json;charset=utf-8".into())];
    let mut c = Call::new(req);
    World::router().dispatch(w, &mut c).json_body()
}

#[test]
fn canvases_are_edited_by_section_and_looked_up() {
    let mut w = world();
    let md = "# Plan\nShip v2.\n\n## Risks\n- flaky tests\n- migration";
    let id = ok(&mut w, "canvases.create", json!({"title": "Launch", "document_content": {"type": "markdown", "markdown": md}}))["canvas_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(id.starts_with('F'));
    let risks = ok(&mut w, "canvases.sections.lookup", json!({"canvas_id": id, "criteria": {"section_types": ["h2"]}}))["sections"].clone();
    assert_eq!(risks.as_array().unwrap().len(), 1);
    let risks = risks[0]["id"].as_str().unwrap().to_string();
    let list = ok(&mut w, "canvases.sections.lookup", json!({"canvas_id": id, "criteria": {"contains_text": "MIGRATION"}}))["sections"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A form sends `changes` as JSON text, as slack_sdk does.
    let changes = json!([
        {"operation": "insert_after", "section_id": risks, "document_content": {"type": "markdown", "markdown": "Owner: <@U0BOB00001>"}},
        {"operation": "replace", "section_id": list, "document_content": {"type": "markdown", "markdown": "- none left"}},
        {"operation": "rename", "title_content": {"type": "markdown", "markdown": "Launch v2"}},
    ]);
    ok(&mut w, "canvases.edit", json!({"canvas_id": id, "changes": changes.to_string()}));
    let c = w.canvases.iter().find(|c| c.id == id).unwrap();
    assert_eq!(c.title, "Launch v2");
    assert_eq!(c.markdown(), "# Plan\n\nShip v2.\n\n## Risks\n\nOwner: <@U0BOB00001>\n\n- none left");
    // A failing change leaves the canvas as it was.
    let bad = json!([{"operation": "delete", "section_id": list}, {"operation": "delete", "section_id": "temp:C:nope"}]);
    assert_eq!(err(&mut w, "canvases.edit", json!({"canvas_id": id, "changes": bad})), "canvas_editing_failed");
    assert_eq!(w.canvases.iter().find(|c| c.id == id).unwrap().markdown().matches("none left").count(), 1);
    assert_eq!(err(&mut w, "canvases.edit", json!({"canvas_id": "F0NOPE", "changes": changes})), "canvas_not_found");
    ok(&mut w, "canvases.delete", json!({"canvas_id": id}));
    assert!(w.canvases.is_empty());
}

#[test]
fn a_channel_has_one_canvas() {
    let mut w = world();
    let body = json!({"channel_id": "C0ENG00001", "document_content": {"type": "markdown", "markdown": "Runbook"}});
    ok(&mut w, "conversations.canvases.create", body.clone());
    assert_eq!(err(&mut w, "conversations.canvases.create", body), "channel_canvas_already_exists");
    // Not a member of #random: the agent (a bot) cannot add its canvas.
    assert_eq!(err(&mut w, "conversations.canvases.create", json!({"channel_id": "C0RANDOM01"})), "not_in_channel");
}

#[test]
fn drafts_are_kept_until_sent_with_their_id() {
    let mut w = world();
    let d = tool(&mut w, "slack_send_message_draft", json!({"channel_id": "C0ENG00001", "message": "LGTM"}));
    assert_eq!(d["ok"], true, "{d}");
    assert_eq!(tool(&mut w, "slack_send_message_draft", json!({"channel_id": "C0ENG00001", "message": "again"}))["error"], "draft_already_exists");
    assert_eq!(w.drafts.len(), 1);
    assert!(!w.channels.iter().any(|c| c.messages.iter().any(|m| m.text == "LGTM")), "a draft is not posted");
    let sent = tool(&mut w, "slack_send_message", json!({"channel_id": "C0ENG00001", "message": "LGTM", "draft_id": d["draft_id"]}));
    assert_eq!(sent["ok"], true, "{sent}");
    assert!(sent["message_link"].as_str().unwrap().contains("/archives/C0ENG00001/p"));
    assert!(w.drafts.is_empty());
    assert_eq!(tool(&mut w, "slack_send_message", json!({"channel_id": "C0ENG00001", "message": "x", "draft_id": d["draft_id"]}))["error"], "draft_not_found");
}

#[test]
fn create_conversation_makes_a_channel_with_members_or_a_group_dm() {
    let mut w = world();
    let ch = tool(&mut w, "slack_create_conversation", json!({"channel_name": "launch", "is_private": true, "user_ids": ["U0BOB00001", "U0CAROL001"]}));
    assert_eq!(ch["ok"], true, "{ch}");
    let c = w.channels.iter().find(|c| c.name == "launch").unwrap();
    assert!(c.is_private);
    assert_eq!(c.members, ["U0AGENT001", "U0BOB00001", "U0CAROL001"]);
    // An unknown user refuses the whole call before any channel is made.
    let bad = tool(&mut w, "slack_create_conversation", json!({"channel_name": "other", "user_ids": ["U0NOBODY"]}));
    assert_eq!(bad["error"], "user_not_found");
    assert!(!w.channels.iter().any(|c| c.name == "other"));
    let g = tool(&mut w, "slack_create_conversation", json!({"user_ids": ["U0BOB00001", "U0CAROL001"]}));
    assert_eq!(g["channel"]["is_mpim"], true, "{g}");
}

#[test]
fn mcp_canvas_tools_read_and_update_by_section() {
    let mut w = world();
    let c = tool(&mut w, "slack_create_canvas", json!({"title": "Notes", "content": "# Agenda\n- one\n- two\n\nClosing words"}));
    let id = c["canvas"]["canvas_id"].as_str().unwrap().to_string();
    let map = tool(&mut w, "slack_read_canvas", json!({"canvas_id": id}))["canvas"]["section_id_mapping"].clone();
    let ids: Vec<String> = map.as_array().unwrap().iter().map(|s| s["section_id"].as_str().unwrap().to_string()).collect();
    assert_eq!(map[0]["type"], "title");
    assert_eq!(ids.len(), 4, "{map}");
    let up = tool(
        &mut w,
        "slack_update_canvas",
        json!({"canvas_id": id, "sections": [
            {"edit_type": "replace", "section_id": ids[0], "content": "Meeting notes"},
            {"edit_type": "append", "section_id": ids[2], "content": "- three"},
            {"edit_type": "delete", "section_id": ids[3]},
        ]}),
    );
    assert_eq!(up["ok"], true, "{up}");
    assert_eq!(up["canvas"]["title"], "Meeting notes");
    assert_eq!(up["canvas"]["markdown"], "# Agenda\n\n- one\n- two\n\n- three");
    let legacy = tool(&mut w, "slack_update_canvas", json!({"canvas_id": id, "action": "prepend", "content": "Intro"}));
    assert!(legacy["canvas"]["markdown"].as_str().unwrap().starts_with("Intro\n\n# Agenda"));
}

#[test]
fn mcp_searches_cover_channels_users_emoji_and_messages() {
    let mut w = world();
    let ch = tool(&mut w, "slack_search_channels", json!({"query": "eng"}));
    let names: Vec<&str> = ch["channels"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["eng", "eng-alerts"]);
    let u = tool(&mut w, "slack_search_users", json!({"query": "engineer -manager"}));
    let ids: Vec<&str> = u["users"].as_array().unwrap().iter().map(|u| u["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["U0BOB00001"]);
    let all_emoji: Vec<String> = w.emoji.keys().cloned().collect();
    let e = tool(&mut w, "slack_search_emojis", json!({"query": all_emoji[0].to_uppercase()}));
    assert_eq!(e["emojis"][0]["name"], all_emoji[0].as_str(), "{e}");
    let m = tool(&mut w, "slack_search_public", json!({"query": "deploy", "content_types": "messages", "limit": 1}));
    assert_eq!(m["messages"].as_array().unwrap().len(), 1, "{m}");
    assert_ne!(m["response_metadata"]["next_cursor"], "");
    let next = tool(&mut w, "slack_search_public", json!({"query": "deploy", "content_types": "messages", "limit": 1, "cursor": m["response_metadata"]["next_cursor"]}));
    assert_ne!(next["messages"][0]["ts"], m["messages"][0]["ts"]);
}

#[test]
fn seeded_canvases_are_read_and_edited_like_made_ones() {
    let seed = json!({"canvases": [{"id": "F0SPEC0001", "title": "Spec", "markdown": "# Scope\nAll of it\n\n## Out\n- nothing"}]});
    let mut w = crate::seed::from_seed(&seed).unwrap();
    let h2 = ok(&mut w, "canvases.sections.lookup", json!({"canvas_id": "F0SPEC0001", "criteria": {"section_types": ["h2"]}}));
    assert_eq!(h2["sections"].as_array().unwrap().len(), 1);
    let read = tool(&mut w, "slack_read_canvas", json!({"canvas_id": "F0SPEC0001"}));
    assert_eq!(read["canvas"]["markdown"], "# Scope\n\nAll of it\n\n## Out\n\n- nothing");
    let bad = json!({"canvases": [{"id": "C0NOTAFILE", "title": "x"}]});
    assert!(crate::seed::from_seed(&bad).unwrap_err().contains("canvases[0].id"));
    let lonely = json!({"canvases": [{"title": "x", "is_channel_canvas": true}]});
    assert!(crate::seed::from_seed(&lonely).is_err());
}
