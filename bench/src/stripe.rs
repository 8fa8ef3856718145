//! Stripe lines of `make bench`: create-and-confirm a PaymentIntent, and list customers of a
//! world of 1,000, at 1 and 64 connections; memory per idle sandbox on the default world.

use serde_json::{Value, json};

use crate::{Server, wrk};

fn customers_seed(n: usize) -> Value {
    let customers: Vec<Value> = (0..n)
        .map(|i| json!({"id": format!("cus_bench{i:05}"), "email": format!("customer{i}@example.com"), "name": format!("Customer {i}"), "created": 1_700_000_000 + i as i64}))
        .collect();
    json!({"customers": customers})
}

pub async fn run(server: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let confirm = dir.path().join("confirm.lua");
    std::fs::write(
        &confirm,
        "wrk.method = \"POST\"\nwrk.body = \"amount=2000&currency=usd&payment_method=pm_card_visa&confirm=true\"\nwrk.headers[\"Content-Type\"] = \"application/x-www-form-urlencoded\"\n",
    )
    .unwrap();
    let empty = dir.path().join("get.lua");
    std::fs::write(&empty, "").unwrap();
    let default = json!({"twins": ["stripe"]});
    let big = json!({"twins": ["stripe"], "seed": customers_seed(1000)});
    let cases = [
        ("create + confirm a PaymentIntent", &default, "/v1/payment_intents", &confirm),
        ("list customers of 1,000 (limit 10)", &big, "/v1/customers?limit=10", &empty),
    ];
    for (label, body, path, script) in cases {
        for conns in [1u32, 64] {
            let sb = server.create(body).await;
            let id = sb["id"].as_str().unwrap();
            let r = wrk(&format!("{}/s/{id}/stripe{path}", server.url), sb["agent_token"].as_str().unwrap(), conns, Some(script));
            crate::report(&format!("stripe {label}"), conns, &r);
            server.discard(id).await;
        }
    }
    let warm = server.create(&default).await;
    server.discard(warm["id"].as_str().unwrap()).await;
    let base = server.memory();
    for _ in 0..1000 {
        server.create(&default).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    println!("memory   1000 idle stripe sandboxes: {}", server.memory().per_sandbox(base, 1000));
}
