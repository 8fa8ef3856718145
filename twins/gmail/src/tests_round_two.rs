//! Native tests for issue #35's Gmail items: Trash and Spam by `labelIds`, drafts that survive
//! a failed send, the batch methods' ids, resumable uploads, a week of history, push
//! notifications through `users.watch`, and the shape-only surface.

use pome_twin_sdk::{Call, Fidelity, Method, Request, Response, Twin, Value, json};

use crate::World;
use crate::model::{HISTORY_KEPT_MS, HISTORY_MAX_BYTES, HistKind, HistoryRecord, Mailbox, Upload};
use crate::tests::{call, get, world};

fn b64(s: &[u8]) -> String {
    crate::mime::b64url(s)
}

fn ids_of(v: &Value, key: &str) -> Vec<String> {
    v[key].as_array().map(|a| a.iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()).unwrap_or_default()
}

#[test]
fn label_ids_trash_or_spam_list_that_folder_without_include_spam_trash() {
    let mut w = world();
    call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_support/trash", None);
    call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_welcome/modify", Some(json!({"addLabelIds": ["SPAM"]})));
    assert_eq!(ids_of(&get(&mut w, "/gmail/v1/users/me/messages?labelIds=TRASH"), "messages"), ["msg_support"]);
    assert_eq!(ids_of(&get(&mut w, "/gmail/v1/users/me/messages?labelIds=SPAM"), "messages"), ["msg_welcome"]);
    assert_eq!(ids_of(&get(&mut w, "/gmail/v1/users/me/threads?labelIds=TRASH"), "threads"), ["thread_support"]);
    // Naming one folder does not bring in the other, nor either into other lists.
    let inbox = ids_of(&get(&mut w, "/gmail/v1/users/me/messages?labelIds=INBOX"), "messages");
    assert!(!inbox.contains(&"msg_support".to_string()) && !inbox.contains(&"msg_welcome".to_string()), "{inbox:?}");
}

#[test]
fn a_draft_send_that_fails_leaves_the_draft_as_it_was() {
    let mut w = world();
    let before = get(&mut w, "/gmail/v1/users/me/drafts/draft_ack?format=raw");
    let history = get(&mut w, "/gmail/v1/users/me/profile")["historyId"].clone();
    for bad in [&b"\r\nonly a body: the header section is empty\r\n"[..], &b"Subject: nobody to send to\r\n\r\nhello\r\n"[..]] {
        let (r, c) = call(&mut w, Method::Post, "/gmail/v1/users/me/drafts/send", Some(json!({"id": "draft_ack", "message": {"raw": b64(bad)}})));
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
        assert!(c.changes.is_empty(), "a refused send changes nothing");
    }
    assert_eq!(get(&mut w, "/gmail/v1/users/me/drafts/draft_ack?format=raw"), before);
    assert_eq!(get(&mut w, "/gmail/v1/users/me/profile")["historyId"], history);
    // And it still sends once the message is right.
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/drafts/send", Some(json!({"id": "draft_ack"})));
    assert_eq!(r.status, 200);
}

#[test]
fn batch_methods_take_at_most_a_thousand_ids_and_refuse_malformed_ones_before_changing_anything() {
    let mut w = world();
    let many: Vec<String> = (0..1001).map(|i| format!("{i:016x}")).collect();
    for path in ["batchDelete", "batchModify"] {
        let (r, _) = call(&mut w, Method::Post, &format!("/gmail/v1/users/me/messages/{path}"), Some(json!({"ids": many, "removeLabelIds": ["UNREAD"]})));
        assert_eq!(r.status, 400);
        assert_eq!(r.json_body()["error"]["message"], "Number of ids cannot exceed 1000");
        let (r, c) = call(&mut w, Method::Post, &format!("/gmail/v1/users/me/messages/{path}"), Some(json!({"ids": ["msg_support", "not-an-id"], "removeLabelIds": ["UNREAD"]})));
        assert_eq!(r.status, 400);
        assert_eq!(r.json_body()["error"]["message"], "Invalid id value");
        assert!(c.changes.is_empty());
    }
    assert!(get(&mut w, "/gmail/v1/users/me/messages/msg_support")["labelIds"].as_array().unwrap().contains(&json!("UNREAD")));
    // A well-formed id of no message is passed over, as Gmail passes it over.
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/messages/batchModify", Some(json!({"ids": ["msg_support", "18c1f2a3b4d5e6f7"], "removeLabelIds": ["UNREAD"]})));
    assert_eq!(r.status, 204);
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/messages/batchDelete", Some(json!({"ids": ["msg_support", "18c1f2a3b4d5e6f7"]})));
    assert_eq!(r.status, 204);
    let (r, _) = call(&mut w, Method::Get, "/gmail/v1/users/me/messages/msg_support", None);
    assert_eq!(r.status, 404);
}

const UPLOAD: &str = "/upload/gmail/v1/users/me/messages/send";

fn chunk(w: &mut World, location: &str, range: &str, body: &[u8]) -> Response {
    let mut req = Request::new(Method::Put, location);
    req.headers.push(("content-range".into(), range.into()));
    req.body = body.to_vec();
    let mut c = Call::new(req);
    World::router().dispatch(w, &mut c)
}

fn begin_upload(w: &mut World) -> String {
    let (r, _) = call(w, Method::Post, &format!("{UPLOAD}?uploadType=resumable"), Some(json!({})));
    assert_eq!(r.status, 200);
    let loc = r.header("location").unwrap();
    loc[loc.find("/upload/").unwrap()..].to_string()
}

#[test]
fn a_resumable_upload_places_each_chunk_where_its_content_range_starts() {
    let mut w = world();
    let msg = b"To: bob@example.com\r\nSubject: chunked\r\n\r\nsent in three chunks\r\n";
    let n = msg.len();
    let loc = begin_upload(&mut w);
    let r = chunk(&mut w, &loc, &format!("bytes 0-19/{n}"), &msg[..20]);
    assert_eq!((r.status, r.header("range")), (308, Some("bytes=0-19")));
    // The client never heard that 308 and sends the first chunk again: it replaces itself.
    let r = chunk(&mut w, &loc, &format!("bytes 0-19/{n}"), &msg[..20]);
    assert_eq!((r.status, r.header("range")), (308, Some("bytes=0-19")));
    // A chunk past what is held would leave a hole.
    let r = chunk(&mut w, &loc, &format!("bytes 30-{}/{n}", n - 1), &msg[30..]);
    assert_eq!(r.status, 400);
    // A status query answers what is held.
    let r = chunk(&mut w, &loc, &format!("bytes */{n}"), b"");
    assert_eq!((r.status, r.header("range")), (308, Some("bytes=0-19")));
    let r = chunk(&mut w, &loc, &format!("bytes 20-{}/{n}", n - 1), &msg[20..]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let id = r.json_body()["id"].as_str().unwrap().to_string();
    let raw = get(&mut w, &format!("/gmail/v1/users/me/messages/{id}?format=raw"));
    assert!(crate::mime::b64_decode_any(raw["raw"].as_str().unwrap()).unwrap().ends_with(msg), "the message is the bytes sent, once");
}

#[test]
fn a_resumable_session_expires_a_week_after_it_began() {
    let mut w = world();
    let fresh = begin_upload(&mut w);
    let stale = begin_upload(&mut w);
    let now = pome_twin_sdk::time::now().timestamp_millis();
    let stale_id = stale.rsplit("upload_id=").next().unwrap().to_string();
    let up: &mut Upload = w.uploads.get_mut(&stale_id).unwrap();
    up.created_ms = now - crate::transport::UPLOAD_SESSION_MS - 1;
    let r = chunk(&mut w, &stale, "bytes 0-3/100", b"To: ");
    assert_eq!(r.status, 404);
    assert!(!w.uploads.contains_key(&stale_id), "an expired session is let go");
    let r = chunk(&mut w, &fresh, "bytes 0-3/100", b"To: ");
    assert_eq!(r.status, 308);
}

fn record(id: u64, at_ms: i64, labels: usize) -> HistoryRecord {
    HistoryRecord {
        id,
        message_id: format!("{id:016x}"),
        thread_id: format!("{id:016x}"),
        label_ids: (0..labels).map(|i| format!("Label_{i}")).collect(),
        kind: HistKind::Added,
        at_ms,
    }
}

#[test]
fn history_is_kept_for_a_week_of_the_sandbox_clock_then_let_go() {
    let mut mb = Mailbox::new("a@pome-twin.test", "A");
    let day = 24 * 3600 * 1000;
    for i in 0..10u64 {
        mb.keep_history(record(2000 + i, i as i64 * day, 1));
    }
    // At day 9 the records of days 0 and 1 are more than a week old.
    assert_eq!(mb.history.first().unwrap().id, 2002);
    assert_eq!(mb.history_floor, 2001, "a start id at the last record let go still sees every later change");
    assert_eq!(mb.history_bytes, mb.history.iter().map(HistoryRecord::weight).sum::<usize>());
}

#[test]
fn thousands_of_changes_within_the_week_are_all_kept() {
    let mut w = world();
    let start = get(&mut w, "/gmail/v1/users/me/profile")["historyId"].as_str().unwrap().to_string();
    for i in 0..1500 {
        let (add, remove) = if i % 2 == 0 { (json!([]), json!(["UNREAD"])) } else { (json!(["UNREAD"]), json!([])) };
        call(&mut w, Method::Post, "/gmail/v1/users/me/messages/msg_support/modify", Some(json!({"addLabelIds": add, "removeLabelIds": remove})));
    }
    let mut seen = 0;
    let mut page = String::new();
    loop {
        let v = get(&mut w, &format!("/gmail/v1/users/me/history?startHistoryId={start}&maxResults=500{page}"));
        seen += v["history"].as_array().map(Vec::len).unwrap_or(0);
        match v["nextPageToken"].as_str() {
            Some(t) => page = format!("&pageToken={t}"),
            None => break,
        }
    }
    assert_eq!(seen, 1500, "the 2,000-record cap of old is gone");
}

#[test]
fn history_is_bounded_by_bytes() {
    let mut mb = Mailbox::new("a@pome-twin.test", "A");
    let mut id = 2000;
    while mb.history_bytes <= HISTORY_MAX_BYTES - 10_000 {
        id += 1;
        mb.keep_history(record(id, 0, 20));
    }
    let kept = mb.history.len();
    id += 1;
    mb.keep_history(record(id, 0, 400));
    assert!(mb.history_bytes <= HISTORY_MAX_BYTES / 4 * 3, "trimmed well below the cap, not one record at a time");
    assert!(mb.history.len() < kept);
    assert_eq!(mb.history_floor, mb.history[0].id - 1);
    assert!(HISTORY_KEPT_MS >= 7 * 24 * 3600 * 1000);
}

fn pubsub_world() -> World {
    let mut seed: Value = serde_json::from_str(include_str!("../../../tests/tasks-compat/bundled/22-gmail-inbox-triage.seed.json")).unwrap();
    seed["pubsub"] = json!({
        "topics": ["projects/acme/topics/quiet"],
        "subscriptions": [
            {"name": "projects/acme/subscriptions/gmail-push", "topic": "projects/acme/topics/gmail",
             "pushConfig": {"pushEndpoint": "https://agent.example/gmail/push"}},
            {"name": "projects/acme/subscriptions/gmail-pull", "topic": "projects/acme/topics/gmail"}
        ]
    });
    World::init(Some(seed)).unwrap()
}

fn modify(w: &mut World, id: &str, add: &[&str], remove: &[&str]) -> Call {
    let (r, c) = call(w, Method::Post, &format!("/gmail/v1/users/me/messages/{id}/modify"), Some(json!({"addLabelIds": add, "removeLabelIds": remove})));
    assert_eq!(r.status, 200);
    c
}

#[test]
fn a_watch_pushes_the_pubsub_envelope_to_the_topics_push_subscription_on_each_change_until_stopped() {
    let mut w = pubsub_world();
    let quiet = modify(&mut w, "msg_support", &[], &["UNREAD"]);
    assert!(quiet.deliveries.is_empty(), "nothing is pushed before a watch");
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/watch", Some(json!({"topicName": "projects/acme/topics/gmail"})));
    assert_eq!(r.status, 200);
    let c = modify(&mut w, "msg_support", &["STARRED"], &[]);
    assert_eq!(c.deliveries.len(), 1, "one push, to the push subscription only");
    let d = &c.deliveries[0];
    assert_eq!((d.url.as_str(), d.method.as_str()), ("https://agent.example/gmail/push", "POST"));
    let env: Value = serde_json::from_slice(&d.body).unwrap();
    assert_eq!(env["subscription"], "projects/acme/subscriptions/gmail-push");
    assert_eq!(env["message"]["messageId"], env["message"]["message_id"]);
    assert_eq!(env["message"]["publishTime"], env["message"]["publish_time"]);
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.decode(env["message"]["data"].as_str().unwrap()).unwrap();
    let note: Value = serde_json::from_slice(&data).unwrap();
    let hid = get(&mut w, "/gmail/v1/users/me/profile")["historyId"].as_str().unwrap().parse::<u64>().unwrap();
    assert_eq!(note, json!({"emailAddress": "pome-agent@pome-twin.test", "historyId": hid}));
    // Reads push nothing; each later change pushes again, with a new Pub/Sub message id.
    let (_, c) = call(&mut w, Method::Get, "/gmail/v1/users/me/messages", None);
    assert!(c.deliveries.is_empty());
    let next = modify(&mut w, "msg_support", &[], &["STARRED"]);
    let env2: Value = serde_json::from_slice(&next.deliveries[0].body).unwrap();
    assert_ne!(env2["message"]["messageId"], env["message"]["messageId"]);
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/stop", None);
    assert_eq!(r.status, 204);
    assert!(modify(&mut w, "msg_support", &["STARRED"], &[]).deliveries.is_empty(), "stop ends the pushes");
}

#[test]
fn a_watch_pushes_only_changes_its_label_filter_lets_through_and_stops_at_its_expiration() {
    let mut w = pubsub_world();
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/watch", Some(json!({"topicName": "projects/acme/topics/gmail", "labelIds": ["Label_build"]})));
    assert_eq!(r.status, 200);
    assert!(modify(&mut w, "msg_support", &["STARRED"], &[]).deliveries.is_empty(), "msg_support has no Build label");
    assert_eq!(modify(&mut w, "msg_build", &["STARRED"], &[]).deliveries.len(), 1);
    call(&mut w, Method::Post, "/gmail/v1/users/me/watch", Some(json!({"topicName": "projects/acme/topics/gmail", "labelIds": ["Label_build"], "labelFilterBehavior": "exclude"})));
    assert_eq!(modify(&mut w, "msg_support", &[], &["STARRED"]).deliveries.len(), 1);
    assert!(modify(&mut w, "msg_build", &[], &["STARRED"]).deliveries.is_empty());
    // A watch not renewed within its week pushes nothing more.
    let mb = w.primary;
    w.mailboxes[mb].settings.watch.as_mut().unwrap()["expiration"] = json!("1");
    assert!(modify(&mut w, "msg_support", &["STARRED"], &[]).deliveries.is_empty());
}

#[test]
fn a_watch_names_a_topic_the_seed_has_and_a_push_inside_a_batch_leaves_with_the_batch() {
    let mut w = pubsub_world();
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/watch", Some(json!({"topicName": "projects/acme/topics/missing"})));
    assert_eq!(r.status, 404);
    assert_eq!(r.json_body()["error"]["message"], "Resource not found (resource=missing).");
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/watch", Some(json!({"topicName": "acme-gmail"})));
    assert_eq!(r.status, 400);
    // A topic with no push subscription takes the watch and pushes to no one.
    let (r, _) = call(&mut w, Method::Post, "/gmail/v1/users/me/watch", Some(json!({"topicName": "projects/acme/topics/quiet"})));
    assert_eq!(r.status, 200);
    assert!(modify(&mut w, "msg_support", &["STARRED"], &[]).deliveries.is_empty());
    call(&mut w, Method::Post, "/gmail/v1/users/me/watch", Some(json!({"topicName": "projects/acme/topics/gmail"})));
    let body = "--b\r\nContent-Type: application/http\r\nContent-ID: <1>\r\n\r\nPOST /gmail/v1/users/me/messages/msg_support/modify\r\nContent-Type: application/json\r\n\r\n{\"removeLabelIds\": [\"STARRED\"]}\r\n--b--\r\n";
    let mut req = Request::new(Method::Post, "/batch/gmail/v1");
    req.headers.push(("content-type".into(), "multipart/mixed; boundary=b".into()));
    req.body = body.as_bytes().to_vec();
    let mut c = Call::new(req);
    let r = World::router().dispatch(&mut w, &mut c);
    assert_eq!(r.status, 200);
    assert_eq!(c.deliveries.len(), 1);
}

#[test]
fn bad_pubsub_seeds_name_their_path() {
    let mut seed: Value = serde_json::from_str(include_str!("../../../tests/tasks-compat/bundled/22-gmail-inbox-triage.seed.json")).unwrap();
    seed["pubsub"] = json!({"subscriptions": [{"name": "projects/a/subscriptions/s", "topic": "t"}]});
    let err = World::init(Some(seed)).unwrap_err();
    assert!(err.starts_with("seed.pubsub.subscriptions[0].topic"), "{err}");
}

#[test]
fn the_seventeen_store_only_methods_are_declared_shape_only() {
    let surface = World::router().surface();
    let shape: Vec<&str> = surface.iter().filter(|r| r.fidelity == Fidelity::Shape && r.path.starts_with("/gmail/v1/")).map(|r| r.action.as_str()).collect();
    assert_eq!(shape, crate::SHAPE_ONLY, "every listed action is a route, in table order");
    // The key-pair verb route serves three of Gmail's methods: enable, disable, obliterate.
    assert_eq!(shape.len() - 1 + 3, 17);
    for a in ["messages.send", "watch", "settings.sendAs.create", "settings.forwardingAddresses.create"] {
        assert!(surface.iter().any(|r| r.action == a && r.fidelity == Fidelity::Semantic), "{a}");
    }
}
