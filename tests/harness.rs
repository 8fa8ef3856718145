//! The test harness: starts the real server in-process on `127.0.0.1:0` with the embedded
//! twins plus the hostile test twin, and talks to it over HTTP like any client.

use std::path::PathBuf;
use std::time::Duration;

use pome::limits::{Lifetimes, Limits};
use pome::server::{Running, ServeConfig};
use serde_json::{Value, json};

pub const API_KEY: &str = "pme_test_key_for_the_e2e_suite";

pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The directory holding the hostile twin, built by `make twins`.
/// The test twins, as a third party would ship them: a directory of components that the
/// server loads with `--twins-dir` (the misbehaving `hostile` twin and the toy `tickets` tracker).
pub fn hostile_dir() -> PathBuf {
    let dir = workspace().join("target/pome-test-twins");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["twin_hostile.wasm", "twin_tickets.wasm"] {
        let wasm = workspace().join("target/wasm32-wasip2/release").join(name);
        assert!(wasm.exists(), "{} is missing: run `make twins` first", wasm.display());
        let dst = dir.join(name);
        if std::fs::read(&dst).ok() != std::fs::read(&wasm).ok() {
            // Tests run in parallel threads of one process: each copy needs its own name.
            static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!("{name}.{}.{n}", std::process::id()));
            std::fs::copy(&wasm, &tmp).unwrap();
            std::fs::rename(&tmp, &dst).unwrap();
        }
    }
    dir
}

pub struct Opts {
    pub quota: usize,
    pub lifetimes: Lifetimes,
    pub limits: Limits,
    pub outbound: pome::outbound::Policy,
    /// Failed authentications allowed per address and window. The suites that send wrong
    /// credentials on purpose, many times from one address (fuzz, isolation), are not about
    /// the limiter, so it is out of their way; tests/secrets.rs tests it at its default.
    pub auth_failures_allowed: u32,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            quota: 10,
            lifetimes: Lifetimes::default(),
            limits: Limits { max_stores: 64, call_deadline: Duration::from_millis(500), ..Limits::default() },
            // Retries in milliseconds, so a test sees every attempt.
            outbound: pome::outbound::Policy { attempts: 3, backoff: Duration::from_millis(20), ..Default::default() },
            auth_failures_allowed: u32::MAX,
        }
    }
}

pub struct Server {
    pub url: String,
    pub running: Option<Running>,
    pub http: reqwest::Client,
    _data: tempfile::TempDir,
}

impl Server {
    pub async fn start() -> Server {
        Server::with(Opts::default()).await
    }

    pub async fn with(opts: Opts) -> Server {
        let data = tempfile::tempdir().unwrap();
        let cfg = ServeConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            data_dir: data.path().to_path_buf(),
            quota: opts.quota,
            lifetimes: opts.lifetimes,
            limits: opts.limits,
            twins_dir: Some(hostile_dir()),
            outbound: opts.outbound,
            api_key: Some(API_KEY.to_string()),
            public_url: None,
            public_host: None,
            tls: None,
            // Shared across tests so each component is compiled once per build.
            cache_dir: Some(workspace().join("target/pome-test-cache")),
            durability: Default::default(),
            store: None,
            lease: std::time::Duration::from_secs(10),
            advertise_url: None,
            drain_wait: std::time::Duration::ZERO,
            metrics_public: false,
            auth_failures_allowed: opts.auth_failures_allowed,
            host_limits: Default::default(),
        };
        let running = pome::server::start(cfg).await.expect("server starts");
        Server { url: format!("http://{}", running.addr), running: Some(running), http: reqwest::Client::new(), _data: data }
    }

    pub fn app(&self) -> &std::sync::Arc<pome::server::App> {
        &self.running.as_ref().unwrap().app
    }

    /// A control-plane call with the test team's key.
    pub async fn api(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        self.api_as(API_KEY, method, path, body).await
    }

    /// A control-plane call with `key`; its answer is checked against `/v1/openapi.json`
    /// (see [`openapi::check_answer`]) before the test sees it.
    pub async fn api_as(&self, key: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self.http.request(method.parse().unwrap(), format!("{}{path}", self.url)).header("x-api-key", key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).map(String::from);
        let text = resp.text().await.unwrap();
        openapi::check_answer(method, path, status, content_type.as_deref(), &text);
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Create a sandbox and return it, panicking with the server's answer if refused.
    /// Another team, `name`, whose API key is `key`: a stranger to this suite's own team.
    pub async fn another_team(&self, name: &str, key: &str) {
        let team = self.app().storage.create_team(name).await.unwrap();
        self.app().storage.add_api_key(&team, key).await.unwrap();
    }

    /// The server's `/metrics` text, read with the team's key.
    pub async fn metrics(&self) -> String {
        self.http.get(format!("{}/metrics", self.url)).header("x-api-key", API_KEY).send().await.unwrap().text().await.unwrap()
    }

    pub async fn sandbox(&self, twins: &[&str], seed: Option<Value>) -> Sandbox {
        let mut body = json!({"twins": twins});
        if let Some(s) = seed {
            body["seed"] = s;
        }
        let (status, v) = self.api("POST", "/v1/sandboxes", Some(body)).await;
        assert_eq!(status, 201, "create refused: {v}");
        Sandbox { id: v["id"].as_str().unwrap().into(), token: v["agent_token"].as_str().unwrap().into(), url: self.url.clone(), http: self.http.clone(), body: v }
    }
}

pub struct Sandbox {
    pub id: String,
    pub token: String,
    pub url: String,
    pub http: reqwest::Client,
    pub body: Value,
}

pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl Sandbox {
    pub fn base(&self, twin: &str) -> String {
        format!("{}/s/{}/{twin}", self.url, self.id)
    }

    /// A twin call with the agent token.
    pub async fn call(&self, twin: &str, method: &str, path: &str, body: Option<Value>) -> Reply {
        self.call_with(twin, method, path, body, Some(&format!("Bearer {}", self.token))).await
    }

    pub async fn call_with(&self, twin: &str, method: &str, path: &str, body: Option<Value>, auth: Option<&str>) -> Reply {
        let mut req = self.http.request(method.parse().unwrap(), format!("{}{path}", self.base(twin)));
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        Reply { status: resp.status().as_u16(), headers: resp.headers().clone(), text: resp.text().await.unwrap() }
    }

    pub async fn events(&self, twin: &str) -> Vec<Value> {
        let r = self.call(twin, "GET", "/_pome/events", None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        serde_json::from_str(&r.text).unwrap()
    }

    pub async fn state(&self, twin: &str) -> Value {
        let r = self.call(twin, "GET", "/_pome/state", None).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.json()
    }
}

// --- the server as its own process ------------------------------------------------------------

/// The release `pome` binary the process tests drive (built by `cargo build --release -p pome`).
pub fn pome_bin() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace().join("target"));
    let bin = target.join("release/pome");
    assert!(bin.exists(), "{} is missing: build it with `cargo build --release -p pome`", bin.display());
    bin
}

/// One `pome serve` process on a data directory that outlives it: for what only a real
/// process shows (a restart, `kill -9`, its own file-descriptor limit). Killed when dropped.
pub struct ServeProcess {
    child: std::process::Child,
    pub url: String,
}

impl ServeProcess {
    /// Start `pome serve` on `data` with `args` besides the listen address and the data
    /// directory, and wait until it answers `/healthz`. Its log is `data/serve.log`.
    pub async fn start(data: &std::path::Path, args: &[&str]) -> ServeProcess {
        ServeProcess::start_limited(data, args, None).await
    }

    /// As [`ServeProcess::start`], with the process's address space capped at
    /// `address_space_kib` (`ulimit -v`) when given.
    pub async fn start_limited(data: &std::path::Path, args: &[&str], address_space_kib: Option<u64>) -> ServeProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // Compiled twins are shared with the other suites (a cold compile of every twin takes
        // a while on a small machine); everything else in the data directory is this test's.
        let cache = workspace().join("target/pome-test-cache");
        std::fs::create_dir_all(&cache).unwrap();
        if !data.join("cache").exists() {
            std::os::unix::fs::symlink(&cache, data.join("cache")).unwrap();
        }
        let log = std::fs::OpenOptions::new().create(true).append(true).open(data.join("serve.log")).unwrap();
        let mut command = match address_space_kib {
            None => std::process::Command::new(pome_bin()),
            Some(kib) => {
                let mut sh = std::process::Command::new("sh");
                sh.args(["-c", &format!("ulimit -v {kib} && exec \"$0\" \"$@\"")]).arg(pome_bin());
                sh
            }
        };
        let child = command
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--data")
            .arg(data)
            .args(args)
            .env("POME_API_KEY", API_KEY)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .expect("pome serve starts");
        let url = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(300);
        loop {
            if http.get(format!("{url}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "pome serve did not come up; see {}", data.join("serve.log").display());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ServeProcess { child, url }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM and wait: the graceful stop.
    pub fn stop(mut self) {
        let _ = std::process::Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(std::time::Instant::now() < deadline, "pome serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no chance to flush anything.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test twin `tickets` (tests/hostile-twin) driven over HTTP: what the durability and
/// several-hosts suites put under load.
pub mod tickets {
    use super::API_KEY;
    use serde_json::{Value, json};

    /// A sandbox: its id and agent token.
    #[derive(Clone)]
    pub struct Sbx {
        pub id: String,
        pub token: String,
    }

    /// A ticket created and answered 2xx: on which sandbox (an index into the test's
    /// list), its request id (also its title), its id, and when the answer came.
    #[derive(Clone)]
    pub struct Ack {
        pub sandbox: usize,
        pub rid: String,
        pub id: u64,
        pub at: std::time::Instant,
    }

    /// Create a sandbox of `twins` at `url` (201 expected).
    pub async fn create(http: &reqwest::Client, url: &str, twins: &[&str]) -> Sbx {
        let r = http.post(format!("{url}/v1/sandboxes")).header("x-api-key", API_KEY).json(&json!({"twins": twins})).send().await.unwrap();
        let status = r.status().as_u16();
        let content_type = r.headers().get("content-type").and_then(|v| v.to_str().ok()).map(String::from);
        let text = r.text().await.unwrap();
        super::openapi::check_answer("POST", "/v1/sandboxes", status, content_type.as_deref(), &text);
        assert_eq!(status, 201, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        Sbx { id: v["id"].as_str().unwrap().into(), token: v["agent_token"].as_str().unwrap().into() }
    }

    /// `POST /tickets` with a request id of our choosing; the status and the ticket id.
    pub async fn new_ticket(http: &reqwest::Client, url: &str, s: &Sbx, title: &str, request_id: &str) -> Result<(u16, Value), reqwest::Error> {
        let r = http
            .post(format!("{url}/s/{}/tickets/tickets", s.id))
            .header("x-ticket-key", &s.token)
            .header("x-request-id", request_id)
            .json(&json!({"title": title}))
            .send()
            .await?;
        let status = r.status().as_u16();
        Ok((status, r.json().await.unwrap_or(Value::Null)))
    }

    /// `GET` a path of the sandbox's `tickets` twin; the status and the body. A `503` is
    /// retried for up to ten seconds, as the vendors' SDKs retry it: it is the defined answer
    /// of a host that cannot serve for a moment (its lease on a shared store lapsed on a
    /// starved machine, its tape writer retrying), not a lost call.
    pub async fn get(http: &reqwest::Client, url: &str, s: &Sbx, path: &str) -> (u16, Value) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            // The twin reads its own header; the host's routes (`/_pome/…`) read the bearer form.
            let req = http.get(format!("{url}/s/{}/tickets{path}", s.id));
            let req = if path.starts_with("/_pome/") { req.bearer_auth(&s.token) } else { req.header("x-ticket-key", &s.token) };
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let body = r.json().await.unwrap_or(Value::Null);
            if status != 503 || std::time::Instant::now() > deadline {
                return (status, body);
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }
}

/// Every `/v1` answer the harness receives, checked against the server's OpenAPI description
/// (`GET /v1/openapi.json`, generated here as the server generates it: `pome::api::described()`): the operation its
/// method and path name must describe its status (or a `default` response), with the answer's
/// media type, and a JSON answer must validate against that response's schema. A mismatch
/// fails the test that made the call, naming the call, the status and what does not fit.
pub mod openapi {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};

    use serde_json::{Value, json};

    /// The document, and the validators compiled so far, by schema (as JSON text).
    struct Spec {
        doc: Value,
        validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    }

    fn spec() -> &'static Spec {
        static SPEC: OnceLock<Spec> = OnceLock::new();
        SPEC.get_or_init(|| Spec {
            doc: serde_json::to_value(pome::api::described().1).expect("/v1/openapi.json is JSON"),
            validators: Mutex::default(),
        })
    }

    /// The served document, parsed.
    pub fn document() -> &'static Value {
        &spec().doc
    }

    /// The described operation `method path` falls under (its path template and the
    /// operation), preferring literal segments over `{parameters}`; `None` when no path
    /// template matches. A template that matches with another method answers `Some` with a
    /// null operation.
    pub fn operation(method: &str, path: &str) -> Option<(String, &'static Value)> {
        let path = path.split(['?', '#']).next().unwrap_or(path);
        let segments: Vec<&str> = path.split('/').collect();
        let mut best: Option<(usize, &String, &Value)> = None;
        for (template, item) in document()["paths"].as_object()? {
            let parts: Vec<&str> = template.split('/').collect();
            if parts.len() != segments.len() {
                continue;
            }
            let literal = |p: &str| !(p.starts_with('{') && p.ends_with('}'));
            if !parts.iter().zip(&segments).all(|(p, s)| !literal(p) && !s.is_empty() || p == s) {
                continue;
            }
            let score = parts.iter().filter(|p| literal(p)).count();
            if best.is_none_or(|(b, _, _)| score > b) {
                best = Some((score, template, item));
            }
        }
        let (_, template, item) = best?;
        Some((template.clone(), &item[method.to_ascii_lowercase().as_str()]))
    }

    /// Check one answer; panics with what does not fit.
    pub fn check_answer(method: &str, path: &str, status: u16, content_type: Option<&str>, body: &str) {
        if let Err(why) = check(method, path, status, content_type, body) {
            let shown: String = body.chars().take(2_000).collect();
            panic!("{method} {path} answered {status}, which /v1/openapi.json does not describe: {why}\nthe answer: {shown}");
        }
    }

    /// The same, as a result (the openapi tests check that a wrong answer is caught).
    pub fn check(method: &str, path: &str, status: u16, content_type: Option<&str>, body: &str) -> Result<(), String> {
        let described = operation(method, path);
        let op = match &described {
            Some((_, op)) if !op.is_null() => *op,
            // No such route: the router's own fallback answers (404 in the error envelope),
            // which is the API's answer for every path and method it does not have.
            _ if status == 404 => return validate(&json!({"$ref": "#/components/schemas/Error"}), body, "the router's fallback (no such route)"),
            Some((template, _)) => return Err(format!("{template} is described, but not with {method}")),
            None => return Err("no path of the document matches it".into()),
        };
        let responses = &op["responses"];
        let response = match &responses[status.to_string()] {
            Value::Null => &responses["default"],
            r => r,
        };
        if response.is_null() {
            return Err(format!("operation {} describes no {status} and no default response", op["operationId"]));
        }
        let Some(content) = response["content"].as_object() else {
            return if body.is_empty() { Ok(()) } else { Err("the response is described without content, but the answer has a body".into()) };
        };
        let media = content_type.unwrap_or_default().split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        let Some(described) = content.get(&media) else {
            return Err(format!("its content type is {media:?}; the document has {:?}", content.keys().collect::<Vec<_>>()));
        };
        let schema = &described["schema"];
        // A text answer (a markdown report) is described as a string, often by reference.
        let resolved = schema["$ref"].as_str().and_then(|r| document().pointer(r.trim_start_matches('#'))).unwrap_or(schema);
        if media == "application/json" {
            validate(schema, body, &format!("operation {}", op["operationId"]))
        } else if resolved["type"] == "string" {
            Ok(())
        } else {
            Err(format!("a {media} answer cannot be checked against {schema}"))
        }
    }

    fn validate(schema: &Value, body: &str, what: &str) -> Result<(), String> {
        let instance: Value = serde_json::from_str(body).map_err(|e| format!("{what}: the answer is not JSON: {e}"))?;
        let validator = validator(schema)?;
        let errors: Vec<String> = validator.iter_errors(&instance).map(|e| format!("at {}: {e}", e.instance_path())).take(5).collect();
        if errors.is_empty() { Ok(()) } else { Err(format!("{what}: {}", errors.join("; "))) }
    }

    /// `schema` compiled with the document's components beside it, so its `$ref`s resolve.
    fn validator(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let key = schema.to_string();
        if let Some(v) = spec().validators.lock().unwrap().get(&key) {
            return Ok(v.clone());
        }
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "allOf": [schema],
            "components": document()["components"],
        });
        let v = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(true)
            .build(&root)
            .map_err(|e| format!("the document's schema {schema} does not compile: {e}"))?;
        let v = Arc::new(v);
        spec().validators.lock().unwrap().insert(key, v.clone());
        Ok(v)
    }
}
