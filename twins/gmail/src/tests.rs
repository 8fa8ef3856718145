//! Native tests: handlers called directly, the way the host calls them.

use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value, json};

use crate::World;

pub fn world() -> World {
    World::init(Some(serde_json::from_str(include_str!("../../../tests/tasks-compat/bundled/22-gmail-inbox-triage.seed.json")).unwrap())).unwrap()
}

pub fn call(w: &mut World, method: Method, path: &str, body: Option<Value>) -> (Response, Call) {
    let mut req = Request::new(method, path);
    if let Some(b) = body {
        req = req.with_json(&b);
    }
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    (r, c)
}

pub fn get(w: &mut World, path: &str) -> Value {
    let (r, _) = call(w, Method::Get, path, None);
    assert_eq!(r.status, 200, "{path}: {}", String::from_utf8_lossy(&r.body));
    r.json_body()
}

#[test]
fn the_task_seed_loads_and_lists_newest_first() {
    let mut w = world();
    let v = get(&mut w, "/gmail/v1/users/me/messages");
    let ids: Vec<&str> = v["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    // Draft messages are messages too, as in Gmail; the seeded draft is the newest.
    assert_eq!(ids, ["1900000000000005", "msg_support", "msg_build_reply", "msg_build", "msg_welcome"]);
    assert_eq!(v["resultSizeEstimate"], json!(5));
}

fn b64(s: &[u8]) -> String {
    crate::mime::b64url(s)
}

fn send(w: &mut World, raw: &str, thread: Option<&str>) -> Value {
    let mut body = json!({"raw": b64(raw.as_bytes())});
    if let Some(t) = thread {
        body["threadId"] = json!(t);
    }
    let (r, _) = call(w, Method::Post, "/gmail/v1/users/me/messages/send", Some(body));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json_body()
}

const WITH_ATTACHMENT: &str = "From: Pome Agent <pome-agent@pome-twin.test>\r\nTo: bob@example.com\r\nSubject: =?UTF-8?B?UmVwb3J0IMOp?=\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: multipart/alternative; boundary=\"b2\"\r\n\r\n--b2\r\nContent-Type: text/plain; charset=UTF-8\r\n\r\nSee the report.\r\n--b2\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<p>See the report.</p>\r\n--b2--\r\n--b1\r\nContent-Type: application/pdf; name=\"r.pdf\"\r\nContent-Disposition: attachment; filename=\"r.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n";

#[test]
fn a_sent_message_carries_delivery_headers_and_its_mime_tree_in_every_format() {
    let mut w = world();
    let sent = send(&mut w, WITH_ATTACHMENT, None);
    let id = sent["id"].as_str().unwrap().to_string();
    assert_eq!(sent["labelIds"], json!(["SENT"]));
    let full = get(&mut w, &format!("/gmail/v1/users/me/messages/{id}?format=full"));
    let names: Vec<&str> = full["payload"]["headers"].as_array().unwrap().iter().map(|h| h["name"].as_str().unwrap()).collect();
    for h in ["MIME-Version", "Date", "Message-ID", "From", "To", "Subject", "Content-Type"] {
        assert!(names.contains(&h), "{h} missing from {names:?}");
    }
    let subject = full["payload"]["headers"].as_array().unwrap().iter().find(|h| h["name"] == "Subject").unwrap();
    assert_eq!(subject["value"], "Report é");
    assert_eq!(full["payload"]["mimeType"], "multipart/mixed");
    assert_eq!(full["payload"]["parts"][0]["parts"][0]["mimeType"], "text/plain");
    assert_eq!(full["snippet"], "See the report.");
    let att = &full["payload"]["parts"][1];
    assert_eq!(att["filename"], "r.pdf");
    assert_eq!(att["body"]["size"], 9);
    let att_id = att["body"]["attachmentId"].as_str().unwrap();
    let a = get(&mut w, &format!("/gmail/v1/users/me/messages/{id}/attachments/{att_id}"));
    assert_eq!(crate::mime::b64_decode_any(a["data"].as_str().unwrap()).unwrap(), b"%PDF-1.4\n");

    let raw = get(&mut w, &format!("/gmail/v1/users/me/messages/{id}?format=raw"));
    let bytes = crate::mime::b64_decode_any(raw["raw"].as_str().unwrap()).unwrap();
    assert!(bytes.ends_with(WITH_ATTACHMENT.as_bytes()), "the sender's bytes are kept byte for byte after the added headers");
    let again = get(&mut w, &format!("/gmail/v1/users/me/messages/{id}?format=raw"));
    assert_eq!(raw, again);

    let meta = get(&mut w, &format!("/gmail/v1/users/me/messages/{id}?format=metadata&metadataHeaders=Subject&metadataHeaders=To"));
    assert_eq!(meta["payload"]["headers"].as_array().unwrap().len(), 2);
    assert!(meta["payload"].get("parts").is_none());
    let min = get(&mut w, &format!("/gmail/v1/users/me/messages/{id}?format=minimal"));
    assert!(min.get("payload").is_none() && min.get("raw").is_none());
    assert_eq!(min["historyId"].as_str().unwrap().parse::<u64>().is_ok(), true);
}

#[test]
fn a_reply_joins_the_thread_by_in_reply_to_and_subject_and_not_by_subject_alone() {
    let mut w = world();
    let reply = "To: alice@example.com\r\nSubject: Re: Production export is stuck\r\nIn-Reply-To: <support-001@example.com>\r\nReferences: <support-001@example.com>\r\n\r\nLooking now.\r\n";
    let r = send(&mut w, reply, None);
    assert_eq!(r["threadId"], "thread_support");
    let unrelated = "To: alice@example.com\r\nSubject: Re: Production export is stuck\r\n\r\nNo headers.\r\n";
    let r2 = send(&mut w, unrelated, None);
    assert_ne!(r2["threadId"], "thread_support");
    let by_id = send(&mut w, "To: alice@example.com\r\nSubject: Production export is stuck\r\n\r\nBy id.\r\n", Some("thread_support"));
    assert_eq!(by_id["threadId"], "thread_support");
    let t = get(&mut w, "/gmail/v1/users/me/threads/thread_support?format=minimal");
    assert_eq!(t["messages"].as_array().unwrap().len(), 3);
}

#[test]
fn search_answers_gmail_operators_and_rejects_unknown_ones() {
    let mut w = world();
    let q = |w: &mut World, q: &str| -> Vec<String> {
        let v = get(w, &format!("/gmail/v1/users/me/messages?q={}", q.replace(' ', "%20").replace(':', "%3A").replace('"', "%22")));
        v["messages"].as_array().map(|a| a.iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
    };
    assert_eq!(q(&mut w, "from:alice@example.com is:unread"), ["msg_support"]);
    assert_eq!(q(&mut w, "has:attachment"), ["msg_build"]);
    assert_eq!(q(&mut w, "filename:build.log"), ["msg_build"]);
    assert_eq!(q(&mut w, "label:build"), ["msg_build"]);
    assert_eq!(q(&mut w, "\"production export\""), ["msg_support"]);
    assert_eq!(q(&mut w, "in:sent"), ["msg_build_reply"]);
    assert_eq!(q(&mut w, "subject:build -in:sent"), ["msg_build"]);
    assert_eq!(q(&mut w, "{from:alice from:ci}"), ["msg_support", "msg_build"]);
    assert_eq!(q(&mut w, "from:alice OR from:welcome"), ["msg_support", "msg_welcome"]);
    assert_eq!(q(&mut w, "after:2026/07/19 before:2026/07/19"), Vec::<String>::new());
    assert_eq!(q(&mut w, "after:2026/07/19 in:inbox"), ["msg_support", "msg_build"]);
    assert_eq!(q(&mut w, "larger:1 smaller:1M in:inbox").len(), 3);
    let (r, _) = call(&mut w, Method::Get, "/gmail/v1/users/me/messages?q=frmo%3Aalice", None);
    assert_eq!(r.status, 400);
    assert_eq!(r.json_body()["error"]["status"], "INVALID_ARGUMENT");
    // Trash is out of a search unless asked for.
    call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_support/trash", None);
    assert_eq!(q(&mut w, "from:alice"), Vec::<String>::new());
    assert_eq!(q(&mut w, "from:alice in:anywhere"), ["msg_support"]);
}

#[test]
fn paging_is_opaque_and_tied_to_its_query() {
    let mut w = world();
    let p1 = get(&mut w, "/gmail/v1/users/me/messages?maxResults=2");
    assert_eq!(p1["messages"].as_array().unwrap().len(), 2);
    let tok = p1["nextPageToken"].as_str().unwrap().to_string();
    let p2 = get(&mut w, &format!("/gmail/v1/users/me/messages?maxResults=2&pageToken={tok}"));
    assert_eq!(p2["messages"][0]["id"], "msg_build_reply");
    let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/messages?q=in%3Ainbox&pageToken={tok}"), None);
    assert_eq!(r.status, 400);
}

#[test]
fn labels_have_system_entries_counts_and_conflicts() {
    let mut w = world();
    let l = get(&mut w, "/gmail/v1/users/me/labels");
    let ids: Vec<&str> = l["labels"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    for s in ["INBOX", "SENT", "DRAFT", "SPAM", "TRASH", "UNREAD", "STARRED", "IMPORTANT", "CHAT", "CATEGORY_SOCIAL", "Label_follow_up"] {
        assert!(ids.contains(&s), "{s}");
    }
    let inbox = get(&mut w, "/gmail/v1/users/me/labels/INBOX");
    assert_eq!((inbox["messagesTotal"].as_u64(), inbox["messagesUnread"].as_u64(), inbox["threadsTotal"].as_u64()), (Some(3), Some(2), Some(3)));
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/labels", Some(json!({"name": "follow up"})));
    assert_eq!(r.status, 409);
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/labels", Some(json!({"name": "Escalated", "labelListVisibility": "labelShow"})));
    let id = r.json_body()["id"].as_str().unwrap().to_string();
    let (r, _) = call(&mut w, Method::Patch, &format!("/gmail/v1/users/me/labels/{id}"), Some(json!({"name": "Escalated/Urgent"})));
    assert_eq!(r.json_body()["name"], "Escalated/Urgent");
    let (r, _) = call(&mut w, Method::Delete, "/gmail/v1/users/me/labels/INBOX", None);
    assert_eq!(r.status, 400);
    let (r, c) = call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_support/modify", Some(json!({"addLabelIds": ["Label_follow_up"], "removeLabelIds": ["UNREAD"]})));
    assert_eq!(r.json_body()["labelIds"], json!(["INBOX", "Label_follow_up"]));
    assert!(c.mutated());
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_support/modify", Some(json!({"addLabelIds": ["Nope"]})));
    assert_eq!(r.status, 400);
}

#[test]
fn drafts_update_with_a_new_message_id_and_send_into_sent() {
    let mut w = world();
    let raw = b64(b"To: alice@example.com\r\nSubject: Re: Production export is stuck\r\nIn-Reply-To: <support-001@example.com>\r\n\r\nInvestigating.\r\n");
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/drafts", Some(json!({"message": {"raw": raw, "threadId": "thread_support"}})));
    let d = r.json_body();
    let did = d["id"].as_str().unwrap().to_string();
    let m1 = d["message"]["id"].as_str().unwrap().to_string();
    assert_eq!(d["message"]["threadId"], "thread_support");
    let raw2 = b64(b"To: alice@example.com\r\nSubject: Re: Production export is stuck\r\n\r\nStill investigating.\r\n");
    let (r, _) = call(&mut w, Method::Put, &format!("/gmail/v1/users/me/drafts/{did}"), Some(json!({"id": did, "message": {"raw": raw2}})));
    let d2 = r.json_body();
    assert_eq!(d2["id"], did.as_str());
    assert_ne!(d2["message"]["id"], m1.as_str());
    assert_eq!(d2["message"]["threadId"], "thread_support");
    let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/messages/{m1}"), None);
    assert_eq!(r.status, 404);
    let list = get(&mut w, "/gmail/v1/users/me/drafts");
    assert_eq!(list["drafts"].as_array().unwrap().len(), 2);
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/drafts/send", Some(json!({"id": did})));
    let sent = r.json_body();
    assert_eq!(sent["labelIds"], json!(["SENT"]));
    assert_eq!(sent["threadId"], "thread_support");
    let (r, _) = call(&mut w, Method::Get, &format!("/gmail/v1/users/me/drafts/{did}"), None);
    assert_eq!(r.status, 404);
}

#[test]
fn history_lists_changes_after_a_start_id_and_404s_before_the_kept_window() {
    let mut w = world();
    let start = get(&mut w, "/gmail/v1/users/me/profile")["historyId"].as_str().unwrap().to_string();
    call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_support/modify", Some(json!({"removeLabelIds": ["UNREAD"]})));
    send(&mut w, "To: bob@example.com\r\nSubject: hi\r\n\r\nhello\r\n", None);
    let h = get(&mut w, &format!("/gmail/v1/users/me/history?startHistoryId={start}"));
    let recs = h["history"].as_array().unwrap();
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0]["labelsRemoved"][0]["labelIds"], json!(["UNREAD"]));
    assert!(recs[1]["messagesAdded"].is_array());
    let only = get(&mut w, &format!("/gmail/v1/users/me/history?startHistoryId={start}&historyTypes=messageAdded"));
    assert_eq!(only["history"].as_array().unwrap().len(), 1);
    assert!(h["historyId"].as_str().unwrap().parse::<u64>().unwrap() > start.parse::<u64>().unwrap());
    let (r, _) = call(&mut w, Method::Get, "/gmail/v1/users/me/history?startHistoryId=5", None);
    assert_eq!(r.status, 404);
}

#[test]
fn errors_have_googles_shape() {
    let mut w = world();
    let (r, _) = call(&mut w, Method::Get, "/gmail/v1/users/me/messages/nope", None);
    assert_eq!(r.status, 404);
    let e = r.json_body();
    assert_eq!(e["error"]["status"], "NOT_FOUND");
    assert_eq!(e["error"]["errors"][0]["reason"], "notFound");
    assert_eq!(e["error"]["errors"][0]["domain"], "global");
    let (r, _) = call(&mut w, Method::Get, "/gmail/v1/users/someone@else.test/profile", None);
    assert_eq!(r.status, 403);
    let (r, c) = call(&mut w, Method::Get, "/gmail/v1/users/me/settings/notASetting", None);
    assert_eq!(r.status, 501);
    assert!(c.unsupported);
}

#[test]
fn a_seeded_rate_limit_answers_429_with_retry_after_then_lets_calls_through() {
    let mut seed = serde_json::to_value(crate::seed::default_seed()).unwrap();
    seed["faults"] = json!([{"type": "rateLimit", "method": "messages.list", "after": 1, "count": 1, "retryAfter": 7}]);
    let mut w = World::init(Some(seed)).unwrap();
    let statuses: Vec<u16> = (0..3).map(|_| call(&mut w, Method::Get, "/gmail/v1/users/me/messages", None).0.status).collect();
    assert_eq!(statuses, [200, 429, 200]);
    let mut w = World::init(Some(json!({"primaryMailbox": {"email": "a@b.test"}, "faults": [{"type": "rateLimit", "retryAfter": 7}]}))).unwrap();
    let (r, _) = call(&mut w, Method::Get, "/gmail/v1/users/me/profile", None);
    assert_eq!((r.status, r.header("retry-after")), (429, Some("7")));
    assert_eq!(r.json_body()["error"]["status"], "RESOURCE_EXHAUSTED");
}

#[test]
fn bad_seeds_name_their_path() {
    let bad = |v: Value| World::init(Some(v)).err().unwrap();
    assert!(bad(json!({"primaryMailbox": {"email": "a@b.test", "messages": [{"id": "m", "from": "x@y", "labels": ["Nope"]}]}})).contains("primaryMailbox.messages[0].labels[0]"));
    assert!(bad(json!({"primaryMailbox": {"email": "a@b.test", "messages": [{"id": "m", "form": "x@y"}]}})).contains("primaryMailbox.messages[0].form"));
    assert!(bad(json!({"primaryMailbox": {"email": "a@b.test"}, "deliveryMode": "all"})).contains("seed.deliveryMode"));
    assert!(bad(json!({"primaryMailbox": {"email": "a@b.test"}, "extra": 1})).contains("seed.extra"));
}

#[test]
fn with_seeded_mailboxes_mail_to_another_seeded_mailbox_arrives_unread_in_its_inbox() {
    let mut w = World::init(Some(json!({
        "primaryMailbox": {"email": "me@corp.test"},
        "mailboxes": [{"email": "bob@corp.test"}],
        "deliveryMode": "seeded-mailboxes"
    })))
    .unwrap();
    send(&mut w, "To: bob@corp.test\r\nBcc: carol@corp.test\r\nSubject: hi bob\r\n\r\nhello\r\n", None);
    let bob = &w.mailboxes[1];
    let m = bob.messages.values().next().unwrap();
    assert_eq!(m.label_ids, ["INBOX", "UNREAD"]);
    let raw = String::from_utf8_lossy(&m.raw);
    assert!(raw.starts_with("Delivered-To: bob@corp.test\r\nReceived: "));
    assert!(!raw.contains("carol@corp.test"), "the recipient's copy carries no Bcc");
    let sent = w.mailboxes[0].messages.values().find(|m| m.has("SENT")).unwrap();
    assert_eq!(sent.bcc, ["carol@corp.test"], "the sender's copy keeps it");
}

#[test]
fn the_same_seed_and_requests_give_the_same_bytes() {
    let run = || {
        let mut w = world();
        let mut out = Vec::new();
        // Native tests run on the wall clock, so this replay avoids stamping new messages;
        // in the component every clock read is the sandbox's virtual one.
        call(&mut w, Method::Post, "/gmail/v1/users/me/labels", Some(json!({"name": "Triage"})));
        call(&mut w, Method::Post, "/gmail/v1/users/me/threads/thread_build/modify", Some(json!({"addLabelIds": ["STARRED"]})));
        for p in ["/gmail/v1/users/me/messages?q=has%3Aattachment", "/gmail/v1/users/me/labels/SENT", "/gmail/v1/users/me/history?startHistoryId=1000"] {
            out.push(call(&mut w, Method::Get, p, None).0.body);
        }
        out.push(serde_json::to_vec(&w.state()).unwrap());
        out
    };
    let (a, b) = (run(), run());
    assert!(a == b, "two replays differ");
}

#[test]
fn a_world_survives_snapshot_and_restore_with_its_index_rebuilt() {
    let mut w = world();
    send(&mut w, WITH_ATTACHMENT, None);
    let bytes = postcard::to_allocvec(&w).unwrap();
    let mut back: World = postcard::from_bytes(&bytes).unwrap();
    let v = get(&mut back, "/gmail/v1/users/me/messages?q=filename%3Ar.pdf");
    assert_eq!(v["resultSizeEstimate"], 1);
}

// ---------------------------------------------------------------------------------------
// Checks: every `[code]` criterion of the Gmail tasks binds, a scripted good agent passes
// and a scripted defective agent fails on the criterion its defect breaks.

mod checks {
    use super::*;
    use pome_twin_sdk::{CheckWorld, Params};

    const TASKS: &[(&str, &str, &str)] = &[
        ("22", include_str!("../../../tests/tasks-compat/bundled/22-gmail-inbox-triage.md"), include_str!("../../../tests/tasks-compat/bundled/22-gmail-inbox-triage.seed.json")),
        ("23", include_str!("../../../tests/tasks-compat/bundled/23-gmail-first-party-parity.md"), include_str!("../../../tests/tasks-compat/bundled/23-gmail-first-party-parity.seed.json")),
        ("27", include_str!("../../../tests/tasks-compat/bundled/27-gmail-github-support-escalation.md"), include_str!("../../../tests/tasks-compat/bundled/27-gmail-github-support-escalation.seed.json")),
    ];

    fn criteria(md: &str) -> Vec<String> {
        md.lines()
            .filter_map(|l| l.trim().strip_prefix("- [code]").or_else(|| l.trim().strip_prefix("- [code:gmail]")))
            .map(|s| s.trim().to_string())
            .collect()
    }

    fn seed_of(task: &str) -> World {
        let (_, _, seed) = TASKS.iter().find(|(t, _, _)| *t == task).unwrap();
        let mut v: Value = serde_json::from_str(seed).unwrap();
        if let Some(g) = v.get("gmail") {
            v = g.clone();
        }
        World::init(Some(v)).unwrap()
    }

    fn bind(sentence: &str) -> (String, Params) {
        let hits: Vec<_> = World::checks().into_iter().filter_map(|c| c.bind(sentence).map(|p| (c.id.clone(), p, c))).collect();
        assert_eq!(hits.len(), 1, "{sentence:?} binds to {:?}", hits.iter().map(|h| &h.0).collect::<Vec<_>>());
        let (id, p, decl) = hits.into_iter().next().unwrap();
        decl.validate(&p).unwrap();
        (id, p)
    }

    /// Decide every `[code]` criterion of `task` over (seed, now): `(sentence, holds)`.
    fn grade(task: &str, seed: &World, now: &World) -> Vec<(String, bool)> {
        let (_, md, _) = TASKS.iter().find(|(t, _, _)| *t == task).unwrap();
        let (s, f) = (seed.state(), now.state());
        let world = CheckWorld { seed: &s, state: &f, tape: &[] };
        criteria(md)
            .into_iter()
            .filter(|c| !c.contains("Issue #"))
            .map(|c| {
                let (id, p) = bind(&c);
                let o = World::evaluate_check(&id, &p, &world).unwrap();
                (c, o.holds)
            })
            .collect()
    }

    fn failing(g: &[(String, bool)]) -> Vec<&str> {
        g.iter().filter(|(_, h)| !h).map(|(c, _)| c.as_str()).collect()
    }

    fn modify(w: &mut World, what: &str, id: &str, add: &[&str], remove: &[&str]) {
        let (r, _) = call(w, Method::Post, &format!("/gmail/v1/users/me/{what}/{id}/modify"), Some(json!({"addLabelIds": add, "removeLabelIds": remove})));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    }

    fn draft(w: &mut World, to: &str) {
        let raw = b64(format!("To: {to}\r\nSubject: Re: Production export is stuck\r\n\r\nWe are investigating the issue.\r\n").as_bytes());
        let (r, _) = call(w, Method::Post, "/gmail/v1/users/me/drafts", Some(json!({"message": {"raw": raw}})));
        assert_eq!(r.status, 200);
    }

    #[test]
    fn every_code_criterion_of_the_gmail_tasks_binds_to_one_declared_check() {
        for (task, md, _) in TASKS {
            let cs = criteria(md);
            assert!(!cs.is_empty(), "task {task}");
            for c in cs.iter().filter(|c| !c.contains("Issue #")) {
                bind(c);
            }
        }
    }

    #[test]
    fn task_22_a_good_agent_passes_and_each_defect_fails_its_criterion() {
        let seed = seed_of("22");
        assert_eq!(failing(&grade("22", &seed, &seed)).len(), 2, "nothing holds before the agent acts");
        let mut good = seed.clone();
        let found = get(&mut good, "/gmail/v1/users/me/messages?q=from%3Aalice%40example.com%20is%3Aunread");
        assert_eq!(found["messages"][0]["id"], "msg_support");
        modify(&mut good, "messages", "msg_support", &["Label_follow_up"], &[]);
        draft(&mut good, "alice@example.com");
        assert!(failing(&grade("22", &seed, &good)).is_empty());

        let mut no_label = seed.clone();
        draft(&mut no_label, "alice@example.com");
        assert_eq!(failing(&grade("22", &seed, &no_label)), ["Message msg_support has label Label_follow_up"]);

        let mut wrong_recipient = seed.clone();
        modify(&mut wrong_recipient, "messages", "msg_support", &["Label_follow_up"], &[]);
        draft(&mut wrong_recipient, "bob@example.com");
        assert_eq!(failing(&grade("22", &seed, &wrong_recipient)), ["A draft addressed to alice@example.com exists"]);
    }

    #[test]
    fn task_23_a_good_agent_passes_and_each_defect_fails_its_criterion() {
        let seed = seed_of("23");
        let mut good = seed.clone();
        modify(&mut good, "messages", "msg_parity", &["STARRED"], &[]);
        modify(&mut good, "threads", "thread_trash_target", &["TRASH"], &[]);
        modify(&mut good, "messages", "msg_spam_target", &["SPAM"], &[]);
        let (r, _) = call(&mut good, Method::Post, "/gmail/v1/users/me/labels", Some(json!({"name": "Parity Complete"})));
        assert_eq!(r.status, 200);
        draft(&mut good, "alice@example.com");
        assert!(failing(&grade("23", &seed, &good)).is_empty());

        let mut unstarred = good.clone();
        modify(&mut unstarred, "messages", "msg_parity", &[], &["STARRED"]);
        assert_eq!(failing(&grade("23", &seed, &unstarred)), ["Message msg_parity has label STARRED"]);

        let mut no_label = seed.clone();
        modify(&mut no_label, "messages", "msg_parity", &["STARRED"], &[]);
        let (r, _) = call(&mut no_label, Method::Post, "/gmail/v1/users/me/labels", Some(json!({"name": "Parity Completed"})));
        assert_eq!(r.status, 200);
        assert_eq!(failing(&grade("23", &seed, &no_label)), ["A label named Parity Complete exists"]);

        let mut drafts_deleted = good.clone();
        let (r, _) = call(&mut drafts_deleted, Method::Delete, "/gmail/v1/users/me/drafts/draft_parity", None);
        assert_eq!(r.status, 204);
        let (r, _) = call(&mut drafts_deleted, Method::Delete, "/gmail/v1/users/me/drafts/draft_ack", None);
        assert_eq!(r.status, 204);
        assert_eq!(failing(&grade("23", &seed, &drafts_deleted)), ["At least two drafts exist"]);
    }

    #[test]
    fn task_27_a_good_agent_passes_and_labeling_the_wrong_message_fails() {
        let seed = seed_of("27");
        let mut good = seed.clone();
        let t = get(&mut good, "/gmail/v1/users/me/threads?q=from%3Aalice%20is%3Aunread");
        assert_eq!(t["threads"][0]["id"], "thread_support");
        modify(&mut good, "threads", "thread_support", &["Label_follow_up"], &[]);
        assert!(failing(&grade("27", &seed, &good)).is_empty());
        let mut sent_instead = seed.clone();
        send(&mut sent_instead, "To: alice@example.com\r\nSubject: Re: Production export is stuck\r\n\r\nOn it.\r\n", None);
        assert_eq!(failing(&grade("27", &seed, &sent_instead)), ["Message msg_support has label Label_follow_up"]);
    }

    fn decide(sentence: &str, seed: &World, now: &World) -> bool {
        let (id, p) = bind(sentence);
        let (s, f) = (seed.state(), now.state());
        World::evaluate_check(&id, &p, &CheckWorld { seed: &s, state: &f, tape: &[] }).unwrap().holds
    }

    #[test]
    fn the_extra_mail_checks_hold_and_fail_where_they_should() {
        let seed = seed_of("22");
        let mut w = seed.clone();
        assert!(decide("No message was sent", &seed, &w));
        assert!(decide("No message was sent to alice@example.com", &seed, &w));
        assert!(!decide("A message to alice@example.com was sent", &seed, &w));
        assert!(!decide("A reply exists in the thread with subject \"Production export is stuck\"", &seed, &w));
        assert!(!decide("Message msg_support is read", &seed, &w));
        assert!(!decide("Message msg_support is not in the inbox", &seed, &w));
        assert!(!decide("Message msg_support is in the trash", &seed, &w));
        assert!(decide("The mailbox pome-agent@pome-twin.test has exactly 2 messages labeled UNREAD", &seed, &w));
        assert!(!decide("The mailbox pome-agent@pome-twin.test has exactly 3 messages labeled UNREAD", &seed, &w));
        assert!(!decide("Exactly one SENT message is addressed to each of the 2 recipients", &seed, &w));

        send(&mut w, "To: alice@example.com\r\nSubject: Re: Production export is stuck\r\nIn-Reply-To: <support-001@example.com>\r\n\r\nOn it.\r\n", None);
        send(&mut w, "To: bob@example.com\r\nSubject: FYI\r\n\r\nAlice's export is stuck.\r\n", None);
        modify(&mut w, "messages", "msg_support", &[], &["UNREAD", "INBOX"]);
        assert!(!decide("No message was sent", &seed, &w));
        assert!(!decide("No message was sent to alice@example.com", &seed, &w));
        assert!(decide("A message to alice@example.com was sent", &seed, &w));
        assert!(decide("A reply exists in the thread with subject \"Production export is stuck\"", &seed, &w));
        assert!(!decide("A draft reply exists in the thread with subject \"Production export is stuck\"", &seed, &w));
        assert!(decide("Message msg_support is read", &seed, &w));
        assert!(decide("Message msg_support is not in the inbox", &seed, &w));
        assert!(decide("Message msg_support does not have label UNREAD", &seed, &w));
        assert!(decide("Exactly one SENT message is addressed to each of the 2 recipients", &seed, &w));
        send(&mut w, "To: bob@example.com\r\nSubject: FYI again\r\n\r\nDuplicate.\r\n", None);
        assert!(!decide("Exactly one SENT message is addressed to each of the 2 recipients", &seed, &w));
        call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_support/trash", None);
        assert!(decide("Message msg_support is in the trash", &seed, &w));
    }
}

#[test]
fn client_side_encryption_key_pairs_and_identities_follow_gmails_rules() {
    let mut w = world();
    let base = "/gmail/v1/users/me/settings/cse";
    let (r, _) = call(&mut w, Method::Post, &format!("{base}/identities"), Some(json!({"primaryKeyPairId": "kp_missing"})));
    assert_eq!(r.status, 400);
    let (r, _) = call(&mut w, Method::Post, &format!("{base}/keypairs"), Some(json!({"pkcs7": "-----BEGIN PKCS7-----"})));
    let kp = r.json_body()["keyPairId"].as_str().unwrap().to_string();
    let (r, _) = call(&mut w, Method::Post, &format!("{base}/identities"), Some(json!({"primaryKeyPairId": kp})));
    assert_eq!(r.json_body()["emailAddress"], "pome-agent@pome-twin.test");
    let (r, _) = call(&mut w, Method::Post, &format!("{base}/keypairs/{kp}:obliterate"), None);
    assert_eq!(r.status, 400, "only a disabled key pair can be obliterated");
    let (r, c) = call(&mut w, Method::Post, &format!("{base}/keypairs/{kp}:disable"), None);
    assert_eq!((r.json_body()["enablementState"].as_str(), c.action.as_deref()), (Some("disabled"), Some("settings.cse.keypairs.disable")));
    let (r, _) = call(&mut w, Method::Post, &format!("{base}/keypairs/{kp}:obliterate"), None);
    assert_eq!(r.status, 204);
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/settings/sendAs/pome-agent@pome-twin.test/smimeInfo", Some(json!({"pkcs12": "MIIabc"})));
    let id = r.json_body()["id"].as_str().unwrap().to_string();
    assert_eq!(r.json_body()["isDefault"], true);
    let l = get(&mut w, "/gmail/v1/users/me/settings/sendAs/pome-agent@pome-twin.test/smimeInfo");
    assert_eq!(l["smimeInfo"][0]["id"], id.as_str());
}

#[test]
fn a_fields_selection_cuts_the_answer_and_a_bad_one_is_refused() {
    let mut w = world();
    let v = get(&mut w, "/gmail/v1/users/me/messages?maxResults=1&fields=messages(id),resultSizeEstimate");
    assert_eq!(v, json!({"messages": [{"id": "1900000000000005"}], "resultSizeEstimate": 5}));
    let m = get(&mut w, "/gmail/v1/users/me/messages/msg_support?fields=id,labelIds");
    assert_eq!(m, json!({"id": "msg_support", "labelIds": ["INBOX", "UNREAD"]}));
    let whole = get(&mut w, "/gmail/v1/users/me/messages/msg_support?format=minimal");
    assert!(whole.get("snippet").is_some(), "the next request without fields is whole");
    let (r, _) = call(&mut w, Method::Get, "/gmail/v1/users/me/messages?fields=messages(id", None);
    assert_eq!(r.status, 400);
}

#[test]
fn a_from_the_account_does_not_own_is_replaced_by_the_accounts_address() {
    let mut w = world();
    let sent = send(&mut w, "From: CEO <ceo@bank.example>\r\nTo: bob@example.com\r\nSubject: Wire\r\n\r\nPlease wire.\r\n", None);
    let m = get(&mut w, &format!("/gmail/v1/users/me/messages/{}?format=metadata&metadataHeaders=From", sent["id"].as_str().unwrap()));
    assert_eq!(m["payload"]["headers"], json!([{"name": "From", "value": "Pome Agent <pome-agent@pome-twin.test>"}]));
    call(&mut w, Method::Post, "/gmail/v1/users/me/settings/sendAs", Some(json!({"sendAsEmail": "support@pome-twin.test"})));
    let alias = send(&mut w, "From: Support <support@pome-twin.test>\r\nTo: bob@example.com\r\nSubject: Hi\r\n\r\nHello.\r\n", None);
    let m = get(&mut w, &format!("/gmail/v1/users/me/messages/{}?format=metadata&metadataHeaders=From", alias["id"].as_str().unwrap()));
    assert_eq!(m["payload"]["headers"][0]["value"], "Support <support@pome-twin.test>");
}

#[test]
fn the_gmail_mcp_server_lists_googles_tools_and_serves_task_23_through_them() {
    let mut w = checks_seed_23();
    let rpc = |w: &mut World, method: &str, params: Value| -> (Value, Option<String>) {
        let (r, c) = call(w, Method::Post, "/mcp/v1", Some(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})));
        assert_eq!(r.status, 200);
        (r.json_body(), c.action)
    };
    let tool = |w: &mut World, name: &str, args: Value| -> (Value, Option<String>) {
        let (v, a) = rpc(w, "tools/call", json!({"name": name, "arguments": args}));
        assert_eq!(v["result"]["isError"], false, "{name}: {v}");
        (v["result"]["structuredContent"].clone(), a)
    };
    let (init, _) = rpc(&mut w, "initialize", json!({"protocolVersion": "2025-03-26"}));
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], false);
    let (list, _) = rpc(&mut w, "tools/list", json!({}));
    assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 13);

    let (found, a) = tool(&mut w, "search_threads", json!({"query": "from:alice is:unread"}));
    assert_eq!(a.as_deref(), Some("threads.list"));
    assert_eq!(found["threads"].as_array().unwrap().len(), 2);
    let (m, _) = tool(&mut w, "get_message", json!({"messageId": "msg_build"}));
    assert_eq!(m["attachments"][0]["filename"], "build.log");
    assert!(m["plaintextBody"].as_str().unwrap().contains("nightly build failed"));
    let (_, a) = tool(&mut w, "label_message", json!({"messageId": "msg_parity", "labelIds": ["STARRED"]}));
    assert_eq!(a.as_deref(), Some("messages.modify"));
    tool(&mut w, "apply_sensitive_thread_label", json!({"threadId": "thread_trash_target", "labelOption": "TRASH"}));
    tool(&mut w, "apply_sensitive_message_label", json!({"messageId": "msg_spam_target", "labelOption": "SPAM"}));
    let (l, _) = tool(&mut w, "create_label", json!({"displayName": "Parity Complete"}));
    assert_eq!(l["name"], "Parity Complete");
    let (d, a) = tool(&mut w, "create_draft", json!({"to": ["alice@example.com"], "body": "On it.", "replyToMessageId": "msg_support"}));
    assert_eq!((d["threadId"].as_str(), d["subject"].as_str(), a.as_deref()), (Some("thread_support"), Some("Re: Production export is stuck"), Some("drafts.create")));
    let (drafts, _) = tool(&mut w, "list_drafts", json!({}));
    assert_eq!(drafts["drafts"].as_array().unwrap().len(), 3);
    let mb = &w.mailboxes[0];
    assert!(mb.get("msg_parity").unwrap().has("STARRED"));
    assert!(mb.get("msg_trash_target").unwrap().has("TRASH"));
    assert!(mb.get("msg_spam_target").unwrap().has("SPAM"));
    let (bad, _) = rpc(&mut w, "tools/call", json!({"name": "label_message", "arguments": {"messageId": "nope", "labelIds": ["STARRED"]}}));
    assert_eq!(bad["result"]["isError"], true);
}

pub fn checks_seed_23() -> World {
    World::init(Some(serde_json::from_str(include_str!("../../../tests/tasks-compat/bundled/23-gmail-first-party-parity.seed.json")).unwrap())).unwrap()
}

#[test]
fn the_user_id_may_be_the_mailbox_address_percent_encoded_or_not() {
    let mut w = world();
    for user in ["me", "pome-agent@pome-twin.test", "pome-agent%40pome-twin.test", "Pome-Agent@Pome-Twin.test"] {
        let p = get(&mut w, &format!("/gmail/v1/users/{user}/profile"));
        assert_eq!(p["emailAddress"], "pome-agent@pome-twin.test", "{user}");
    }
}

#[test]
fn a_batch_answers_each_part_in_order_and_an_unsupported_part_marks_the_batch() {
    let mut w = world();
    let body = "--b\r\nContent-Type: application/http\r\nContent-ID: <q+1>\r\n\r\nGET /s/ses_x/gmail/gmail/v1/users/me/messages/msg_support?format=minimal HTTP/1.1\r\n\r\n\r\n\
--b\r\nContent-Type: application/http\r\nContent-ID: <q+2>\r\n\r\nPOST /s/ses_x/gmail/gmail/v1/users/me/messages/msg_support/modify HTTP/1.1\r\nContent-Type: application/json\r\n\r\n{\"removeLabelIds\": [\"UNREAD\"]}\r\n\
--b\r\nContent-Type: application/http\r\nContent-ID: <q+3>\r\n\r\nGET /s/ses_x/gmail/gmail/v1/users/me/settings/notASetting HTTP/1.1\r\n\r\n\r\n--b--\r\n";
    let mut req = Request::new(Method::Post, "/batch/gmail/v1");
    req.headers.push(("content-type".into(), "multipart/mixed; boundary=b".into()));
    req.body = body.as_bytes().to_vec();
    let mut c = Call::new(req);
    let r = World::router().dispatch(&mut w, &mut c);
    assert_eq!(r.status, 200);
    let text = String::from_utf8(r.body).unwrap();
    let ids: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("Content-ID: ")).collect();
    assert_eq!(ids, ["<response-q+1>", "<response-q+2>", "<response-q+3>"]);
    let statuses: Vec<&str> = text.lines().filter(|l| l.starts_with("HTTP/1.1 ")).collect();
    assert_eq!(statuses, ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 501 Not Implemented"]);
    assert!(c.mutated() && c.unsupported);
    assert!(!w.mailboxes[0].get("msg_support").unwrap().has("UNREAD"));
}
