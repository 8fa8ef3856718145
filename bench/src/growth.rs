//! `pome-bench growth`: sustained writes on one sandbox while its world grows (issue #36,
//! item 1). Each case makes a fresh sandbox of the default world on a server of its own and
//! sends creates at 64 connections in consecutive windows, so the world holds hundreds of
//! thousands of objects by the last. A write should cost the same in the last window as in
//! the first: the line prints each window's rate and p99, the last window's rate against the
//! first's, and how long checkpoints stopped the store (from the server's
//! `pome_twin_checkpoint_pause_seconds` histogram: the bucket every pause fell within).
//!
//! `POME_BENCH_GROWTH_WINDOWS` (default 4) and `POME_BENCH_GROWTH_SECS` (default 10) size it.

use std::ffi::OsString;

use serde_json::json;

use crate::{KEY, report, spawn_pome, wrk_for};

struct Case {
    label: &'static str,
    twin: &'static str,
    path: &'static str,
    script: &'static str,
}

const CASES: [Case; 3] = [
    Case {
        label: "github create issue",
        twin: "github",
        path: "/repos/acme/api/issues",
        script: "wrk.method = \"POST\"\nwrk.body = '{\"title\": \"Load test issue\", \"body\": \"created by wrk\"}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n",
    },
    Case {
        label: "stripe create customer",
        twin: "stripe",
        path: "/v1/customers",
        script: "wrk.method = \"POST\"\nwrk.body = \"email=agent@example.com&name=Bench+Customer\"\nwrk.headers[\"Content-Type\"] = \"application/x-www-form-urlencoded\"\n",
    },
    Case {
        label: "stripe create + confirm PaymentIntent",
        twin: "stripe",
        path: "/v1/payment_intents",
        script: "wrk.method = \"POST\"\nwrk.body = \"amount=2000&currency=usd&payment_method=pm_card_visa&confirm=true\"\nwrk.headers[\"Content-Type\"] = \"application/x-www-form-urlencoded\"\n",
    },
];

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub async fn run() {
    let (windows, secs) = (env_u32("POME_BENCH_GROWTH_WINDOWS", 4).max(1), env_u32("POME_BENCH_GROWTH_SECS", 10).max(1));
    println!("growth: sustained creates on one sandbox, {windows} windows of {secs} s at 64 connections, a server of its own per case");
    let bare = crate::bare::measure(secs);
    let http = reqwest::Client::new();
    let dir = tempfile::tempdir().unwrap();
    for case in CASES {
        let data = tempfile::tempdir().unwrap();
        // Room for a world of hundreds of thousands of objects and a tape of a million rows.
        let args = ["--tape-rows", "5000000", "--tape-mib", "65536", "--store-memory-mib", "2048"].map(OsString::from);
        let (mut child, url) = spawn_pome(data.path(), args);
        let sb: serde_json::Value = http
            .post(format!("{url}/v1/sandboxes"))
            .header("x-api-key", KEY)
            .json(&json!({"twins": [case.twin]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let script = dir.path().join(format!("{}.lua", case.twin));
        std::fs::write(&script, case.script).unwrap();
        let target = format!("{url}/s/{}/{}{}", sb["id"].as_str().unwrap(), case.twin, case.path);
        let token = sb["agent_token"].as_str().unwrap().to_string();
        let mut rates = Vec::new();
        let mut worst_p99: f64 = 0.0;
        let mut failed = false;
        for w in 1..=windows {
            let r = wrk_for(&target, &token, 64, Some(&script), secs);
            report(&format!("growth {} window {w}", case.label), 64, &r);
            failed |= !r.all_succeeded();
            rates.push(r.rps);
            worst_p99 = worst_p99.max(r.p99_ms);
        }
        let metrics = http.get(format!("{url}/metrics")).header("x-api-key", KEY).send().await.unwrap().text().await.unwrap();
        let (taken, pause) = pauses(&metrics, case.twin);
        if failed {
            println!("growth {:<52} NO FIGURE: a window had answers that failed", case.label);
        } else {
            let (first, last) = (rates[0], rates[rates.len() - 1]);
            println!(
                "growth {:<52} last window {:.0}% of the first's rate ({}), worst p99 {worst_p99:.1} ms; {taken} checkpoints, each stopped the store {pause}",
                case.label,
                last / first * 100.0,
                bare.ratio(last, true),
            );
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Checkpoints taken for `twin`, and the least histogram bound every pause fell within.
fn pauses(metrics: &str, twin: &str) -> (u64, String) {
    let value = |line: &str| line.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let label = format!("twin=\"{twin}\"");
    let count = metrics
        .lines()
        .find(|l| l.starts_with("pome_twin_checkpoint_pause_seconds_count") && l.contains(&label))
        .map_or(0.0, value);
    let within = metrics
        .lines()
        .filter(|l| l.starts_with("pome_twin_checkpoint_pause_seconds_bucket") && l.contains(&label))
        .find(|l| value(l) >= count)
        .and_then(|l| l.split("le=\"").nth(1)?.split('"').next().map(str::to_string));
    let bound = match within.as_deref() {
        Some("+Inf") | None => "over 0.8 s".to_string(),
        Some(le) => format!("at most {:.1} ms", le.parse::<f64>().unwrap_or(0.0) * 1000.0),
    };
    (count as u64, if count == 0.0 { "never".to_string() } else { bound })
}
