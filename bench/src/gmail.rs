//! Gmail lines of `make bench`: sending a message, and a search over a mailbox of 10,000
//! messages, at 1 and 64 connections; memory per idle sandbox on the default world.

use serde_json::{Value, json};

use crate::{Server, wrk};

/// A mailbox of `n` messages: a tenth from alice, every third an invoice.
fn mailbox_seed(n: usize) -> Value {
    let messages: Vec<Value> = (0..n)
        .map(|i| {
            let from = if i % 10 == 0 { "alice@example.com".to_string() } else { format!("sender{}@example.com", i % 97) };
            let subject = if i % 3 == 0 { format!("Invoice {i}") } else { format!("Status update {i}") };
            json!({"id": format!("m{i:05}"), "from": from, "to": ["pome-agent@pome-twin.test"], "subject": subject,
                   "text": format!("Message number {i} about the quarterly numbers."),
                   "date": format!("2026-0{}-{:02}T{:02}:{:02}:00Z", 1 + i % 6, 1 + i % 28, i % 24, i % 60),
                   "labels": if i % 4 == 0 { json!(["INBOX", "UNREAD"]) } else { json!(["INBOX"]) }})
        })
        .collect();
    json!({"primaryMailbox": {"email": "pome-agent@pome-twin.test", "displayName": "Pome Agent", "messages": messages}})
}

pub async fn run(server: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let raw = "From: pome-agent@pome-twin.test\r\nTo: bob@example.com\r\nSubject: Load test\r\n\r\nSent by wrk.\r\n";
    let raw = base64_url(raw.as_bytes());
    let send_script = dir.path().join("send.lua");
    std::fs::write(&send_script, format!("wrk.method = \"POST\"\nwrk.body = '{{\"raw\": \"{raw}\"}}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n")).unwrap();
    let empty = dir.path().join("get.lua");
    std::fs::write(&empty, "").unwrap();
    let default = json!({"twins": ["gmail"]});
    let big = json!({"twins": ["gmail"], "seed": mailbox_seed(10_000)});
    let cases = [
        ("send a message (default world)", &default, "/gmail/v1/users/me/messages/send", &send_script),
        ("search of 10,000: from:alice subject:invoice", &big, "/gmail/v1/users/me/messages?q=from%3Aalice%20subject%3Ainvoice&maxResults=50", &empty),
        ("search of 10,000: is:unread -subject:invoice", &big, "/gmail/v1/users/me/messages?q=is%3Aunread%20-subject%3Ainvoice&maxResults=50", &empty),
    ];
    for (label, body, path, script) in cases {
        for conns in [1u32, 64] {
            let sb = server.create(body).await;
            let id = sb["id"].as_str().unwrap();
            let r = wrk(&format!("{}/s/{id}/gmail{path}", server.url), sb["agent_token"].as_str().unwrap(), conns, Some(script));
            crate::report(&format!("gmail {label}"), conns, &r);
            server.discard(id).await;
        }
    }
    let body = json!({"twins": ["gmail"]});
    let warm = server.create(&body).await;
    server.discard(warm["id"].as_str().unwrap()).await;
    let base = server.memory();
    let mut made = Vec::with_capacity(1000);
    for _ in 0..1000 {
        made.push(server.create(&body).await["id"].as_str().unwrap().to_string());
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    println!("memory   1000 idle gmail sandboxes: {}", server.memory().per_sandbox(base, 1000));
    // Closed again, so the next measurement starts from an empty server.
    for id in made {
        server.discard(&id).await;
    }
}

pub(crate) fn base64_url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..=c.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}
