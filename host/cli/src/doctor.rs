//! `pome doctor`: first contact with a server. One line per check, `ok` or `FAIL` and, for a
//! failure, how to fix it; the exit code is that of the first failure (ORCHESTRATION for a
//! server that cannot be reached or serves no twins, AUTH for a missing or refused key).

use std::time::Duration;

use serde_json::Value;

use crate::client::{ClientArgs, exit};

/// What one check found.
enum Check {
    Ok(String),
    Fail { code: i32, what: String, fix: String },
    Skip(String),
    Info(String),
}

/// Runs every check, prints one line each, and returns the exit code.
pub async fn doctor(args: ClientArgs) -> i32 {
    let base = args.api_url.trim_end_matches('/').to_string();
    let key = args.api_key.clone().filter(|k| !k.is_empty());
    let http = match reqwest::Client::builder().timeout(Duration::from_secs(10)).build() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pome: building an HTTP client: {e}");
            return exit::ORCHESTRATION;
        }
    };
    let mut code = exit::OK;
    let mut report = |name: &str, check: Check| match check {
        Check::Ok(what) => println!("ok    {name}: {what}"),
        Check::Info(what) => println!("info  {name}: {what}"),
        Check::Skip(why) => println!("skip  {name}: {why}"),
        Check::Fail { code: c, what, fix } => {
            println!("FAIL  {name}: {what}\n      fix: {fix}");
            if code == exit::OK {
                code = c;
            }
        }
    };

    let reachable = server(&http, &base).await;
    let up = matches!(reachable, Check::Ok(_));
    report("server", reachable);

    let key_ok = match (&key, up) {
        (None, _) => {
            report("key", Check::Fail { code: exit::AUTH, what: "no API key".into(), fix: "set POME_API_KEY (printed by `pome serve` on first start) or pass --api-key".into() });
            false
        }
        (Some(_), false) => {
            report("key", Check::Skip("the server is not reachable".into()));
            false
        }
        (Some(k), true) => {
            let c = key_check(&http, &base, k).await;
            let ok = matches!(c, Check::Ok(_));
            report("key", c);
            ok
        }
    };

    match (&key, key_ok) {
        (Some(k), true) => report("twins", twins(&http, &base, k).await),
        _ => report("twins", Check::Skip("needs a reachable server and a valid key".into())),
    }

    // No API tells where this server delivers webhooks: say where that is decided.
    report("webhooks", Check::Info("delivered only where `pome serve --deliver-to` allows (nowhere without it); the server says so at start-up when it delivers nowhere".into()));

    code
}

/// `GET /healthz`.
async fn server(http: &reqwest::Client, base: &str) -> Check {
    let fix_start = "start it with `pome serve` or set POME_API_URL".to_string();
    match http.get(format!("{base}/healthz")).send().await {
        Err(e) if e.is_builder() => Check::Fail {
            code: exit::USAGE,
            what: format!("`{base}` is not a URL the client can use ({})", chain(&e)),
            fix: "set POME_API_URL (or --api-url) to the URL `pome serve` prints as `pome listening on …`".into(),
        },
        Err(e) => Check::Fail { code: exit::ORCHESTRATION, what: format!("cannot reach {base} ({})", chain(&e)), fix: fix_start },
        Ok(resp) => {
            let status = resp.status();
            let body = resp.text().await.unwrap_or_default();
            match status.as_u16() {
                200 => Check::Ok(format!("{base} answers /healthz")),
                503 => Check::Fail { code: exit::ORCHESTRATION, what: format!("{base} is shutting down (/healthz answered 503 {})", body.trim()), fix: format!("wait for it to stop and {fix_start}") },
                s => Check::Fail {
                    code: exit::ORCHESTRATION,
                    what: format!("{base} answered /healthz with HTTP {s}: is it a pome server?"),
                    fix: "point POME_API_URL (or --api-url) at the URL `pome serve` prints as `pome listening on …`".into(),
                },
            }
        }
    }
}

/// `GET /v1/usage` with the key.
async fn key_check(http: &reqwest::Client, base: &str, key: &str) -> Check {
    let (status, body) = match get(http, base, "/v1/usage", key).await {
        Ok(r) => r,
        Err(e) => return Check::Fail { code: exit::ORCHESTRATION, what: format!("GET /v1/usage failed ({})", chain(&e)), fix: "start the server with `pome serve` or set POME_API_URL".into() },
    };
    match status {
        200..=299 => Check::Ok(format!("valid; the team has {} of {} sandboxes open", body["sessions_used"], body["sessions_quota"])),
        401 | 403 => Check::Fail {
            code: exit::AUTH,
            what: format!("the key is not valid on this server: {} (HTTP {status})", message(&body)),
            fix: "set POME_API_KEY to the key `pome serve` printed on first start, or one made with `pome keys create` on this server".into(),
        },
        429 => Check::Fail {
            code: exit::AUTH,
            what: format!("this address is refused after too many failed keys: {} (HTTP 429)", message(&body)),
            fix: "wait ten seconds, then retry with the key `pome serve` printed on first start".into(),
        },
        s => Check::Fail { code: exit::ORCHESTRATION, what: format!("GET /v1/usage answered HTTP {s}: {}", message(&body)), fix: "see the server's log for the request id".into() },
    }
}

/// `GET /v1/twins`: the twins the server serves, by name.
async fn twins(http: &reqwest::Client, base: &str, key: &str) -> Check {
    let (status, body) = match get(http, base, "/v1/twins", key).await {
        Ok(r) => r,
        Err(e) => return Check::Fail { code: exit::ORCHESTRATION, what: format!("GET /v1/twins failed ({})", chain(&e)), fix: "start the server with `pome serve` or set POME_API_URL".into() },
    };
    if !(200..300).contains(&status) {
        return Check::Fail { code: exit::ORCHESTRATION, what: format!("GET /v1/twins answered HTTP {status}: {}", message(&body)), fix: "see the server's log for the request id".into() };
    }
    let names: Vec<&str> = body["data"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
    if names.is_empty() {
        return Check::Fail { code: exit::ORCHESTRATION, what: "the server serves no twins".into(), fix: "serve twins with `pome serve` (the embedded ones) or `--twins-dir DIR` of `*.wasm` components".into() };
    }
    Check::Ok(format!("{} served: {}", names.len(), names.join(", ")))
}

async fn get(http: &reqwest::Client, base: &str, path: &str, key: &str) -> Result<(u16, Value), reqwest::Error> {
    let resp = http.get(format!("{base}{path}")).header("x-api-key", key).send().await?;
    let status = resp.status().as_u16();
    Ok((status, resp.json().await.unwrap_or(Value::Null)))
}

/// An error with its causes (reqwest's own message leaves out why a connection failed).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// The server's error message, from its envelope.
fn message(body: &Value) -> String {
    body["error"]["message"].as_str().unwrap_or("no message").to_string()
}
