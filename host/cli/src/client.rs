//! CLI commands that talk to a running server (`pome sandbox …`, `pome usage`), and the
//! control-plane client they share with `pome run` and `pome replay`.

use serde_json::{Value, json};

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// Exit codes: the one place they are decided (DESIGN §9).
pub mod exit {
    pub const OK: i32 = 0;
    /// The verdict is `fail` or `incomplete`.
    pub const FAIL: i32 = 1;
    pub const ORCHESTRATION: i32 = 2;
    pub const AUTH: i32 = 3;
    pub const QUOTA: i32 = 4;
    pub const USAGE: i32 = 5;
    /// Stopped by Ctrl-C (128 + SIGINT, as shells report it).
    pub const INTERRUPTED: i32 = 130;
}


/// How CLI commands reach a server.
#[derive(Args, Debug, Clone)]
pub struct ClientArgs {
    #[arg(long, env = "POME_API_URL", default_value = "http://127.0.0.1:8080")]
    pub api_url: String,
    #[arg(long, env = "POME_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Env,
}

#[derive(Subcommand, Debug)]
pub enum SandboxCommand {
    /// Create a sandbox and print its connection details.
    Create {
        /// A twin to put in it; repeat for up to three (the first is primary).
        #[arg(long = "twin", required = true)]
        twins: Vec<String>,
        /// Seed file: flat JSON for one twin, an envelope {twin: seed} for several.
        #[arg(long)]
        seed: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List the team's open sandboxes.
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Fork a sandbox: a new sandbox whose worlds are this one's after the tape rows
    /// `--at` names (default: now). Prints the new sandbox like `create`.
    Fork {
        id: String,
        /// Where to fork a twin: `TWIN=N`, the world after N rows of its tape; repeat per
        /// twin (a twin not named forks at its newest row).
        #[arg(long = "at", value_parser = position)]
        at: Vec<(String, u64)>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Stop a sandbox. An ungraded one is refused unless --discard.
    Stop {
        id: String,
        /// Discard the ungraded run.
        #[arg(long)]
        discard: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
}

/// Exit codes (DESIGN §9).

/// A control-plane client: one team's API key against one server.
pub struct Client {
    http: reqwest::Client,
    pub base: String,
    key: String,
}

/// A failed command, already mapped to its exit code (DESIGN §9).
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
    /// The server's error envelope when the server refused (`{error: {type, details, …}}`),
    /// so callers decide by its fields, never by its wording.
    pub error: Value,
}

pub fn fail(code: i32, message: impl Into<String>) -> Failure {
    Failure { code, message: message.into(), error: Value::Null }
}

/// The process exit code for a command's result, saying why on stderr when it failed.
pub fn finish(r: Result<i32, Failure>) -> i32 {
    match r {
        Ok(code) => code,
        Err(f) => {
            eprintln!("pome: {}", f.message);
            f.code
        }
    }
}

impl Client {
    fn new(args: &ClientArgs) -> Result<Client, Failure> {
        let key = args.api_key.clone().filter(|k| !k.is_empty()).ok_or_else(|| fail(exit::AUTH, "no API key: set POME_API_KEY (printed by `pome serve` on first start) or pass --api-key"))?;
        Ok(Client::at(&args.api_url, key))
    }

    /// A client of the server at `base` with `key`.
    pub fn at(base: &str, key: String) -> Client {
        Client { http: reqwest::Client::new(), base: base.trim_end_matches('/').to_string(), key }
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, Failure> {
        let mut req = self.http.request(method, format!("{}{path}", self.base)).header("x-api-key", &self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.map_err(|e| {
            fail(exit::ORCHESTRATION, format!("cannot reach the pome server at {} ({e}); start one with `pome serve` or set POME_API_URL", self.base))
        })?;
        let status = resp.status().as_u16();
        let value: Value = resp.json().await.unwrap_or(Value::Null);
        if status < 400 {
            return Ok(value);
        }
        let code = match status {
            401 | 403 => exit::AUTH,
            402 => exit::QUOTA,
            422 | 400 => exit::USAGE,
            _ => exit::ORCHESTRATION,
        };
        let message = value["error"]["message"].as_str().unwrap_or("request failed").to_string();
        Err(Failure { code, message: format!("{message} (HTTP {status}{})", details(&value)), error: value["error"].clone() })
    }
}

fn details(v: &Value) -> String {
    match v["error"].get("details") {
        Some(d) => format!(", details: {d}"),
        None => String::new(),
    }
}

pub async fn sandbox(cmd: SandboxCommand) -> i32 {
    finish(sandbox_inner(cmd).await.map(|()| exit::OK))
}

async fn sandbox_inner(cmd: SandboxCommand) -> Result<(), Failure> {
    match cmd {
        SandboxCommand::Create { twins, seed, format, client } => {
            let c = Client::new(&client)?;
            let mut body = json!({"twins": twins});
            if let Some(path) = seed {
                let text = std::fs::read_to_string(&path).map_err(|e| fail(exit::USAGE, format!("reading {}: {e}", path.display())))?;
                body["seed"] = serde_json::from_str(&text).map_err(|e| fail(exit::USAGE, format!("{} is not JSON: {e}", path.display())))?;
            }
            let s = c.call(reqwest::Method::POST, "/v1/sandboxes", Some(body)).await?;
            print_sandbox(&s, format);
            Ok(())
        }
        SandboxCommand::List { client } => {
            let c = Client::new(&client)?;
            let list = c.call(reqwest::Method::GET, "/v1/sandboxes", None).await?;
            let data = list["data"].as_array().cloned().unwrap_or_default();
            if data.is_empty() {
                println!("no open sandboxes");
            }
            for s in data {
                println!("{}  twins={}  expires_at={}  idle_expires_at={}", s["id"].as_str().unwrap_or(""), s["twins"], s["expires_at"].as_str().unwrap_or(""), s["idle_expires_at"].as_str().unwrap_or(""));
            }
            Ok(())
        }
        SandboxCommand::Fork { id, at, format, client } => {
            let s = fork(&client, &format!("/v1/sandboxes/{id}/fork"), at).await?;
            print_sandbox(&s, format);
            Ok(())
        }
        SandboxCommand::Stop { id, discard, client } => {
            let c = Client::new(&client)?;
            match c.call(reqwest::Method::DELETE, &format!("/v1/sandboxes/{id}"), None).await {
                Ok(_) => {}
                Err(f) if f.error["details"]["reason"] == "ungraded_session" && discard => {
                    // The refusal carries the discard token: confirm with it.
                    let token = f.error["details"]["discard_token"].as_str().unwrap_or_default().to_string();
                    c.call(reqwest::Method::DELETE, &format!("/v1/sandboxes/{id}?confirm_discard={token}"), None).await?;
                }
                Err(f) if f.error["details"]["reason"] == "ungraded_session" => {
                    return Err(fail(exit::ORCHESTRATION, format!("{}; pass --discard to throw its run away", f.message)));
                }
                Err(f) => return Err(f),
            }
            println!("stopped {id}");
            Ok(())
        }
    }
}

/// `TWIN=N`, a tape position of one twin.
fn position(s: &str) -> Result<(String, u64), String> {
    let (twin, n) = s.split_once('=').ok_or_else(|| format!("`{s}` is not TWIN=N (github=17)"))?;
    let n = n.parse().map_err(|_| format!("`{n}` in `{s}` is not a row count"))?;
    Ok((twin.to_string(), n))
}

/// Ask the server for a fork at `path` (a sandbox's or a run's) at the positions given.
async fn fork(client: &ClientArgs, path: &str, at: Vec<(String, u64)>) -> Result<Value, Failure> {
    let c = Client::new(client)?;
    let at: serde_json::Map<String, Value> = at.into_iter().map(|(t, n)| (t, json!(n))).collect();
    c.call(reqwest::Method::POST, path, Some(json!({"at": at}))).await
}

#[derive(Subcommand, Debug)]
pub enum RunsCommand {
    /// Fork a finished run: a new sandbox whose worlds are the run's after the tape rows
    /// `--at` names (default: its end), graded against the same task.
    Fork {
        /// The run id, `run_…`.
        id: String,
        /// `TWIN=N`: the world after N rows of that twin's tape; repeat per twin.
        #[arg(long = "at", value_parser = position)]
        at: Vec<(String, u64)>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub async fn runs(cmd: RunsCommand) -> i32 {
    finish(async {
        match cmd {
            RunsCommand::Fork { id, at, format, client } => {
                let s = fork(&client, &format!("/v1/runs/{id}/fork"), at).await?;
                print_sandbox(&s, format);
                Ok(exit::OK)
            }
        }
    }
    .await)
}

/// `pome state ID`: a twin's world in a sandbox (`ses_…`) or a run (`run_…`) as it stood
/// after `--at` rows of its tape, or what changed from `--from` to `--at`.
#[derive(Args, Debug)]
pub struct StateArgs {
    /// A sandbox id (`ses_…`) or a run id (`run_…`).
    pub id: String,
    /// The twin (default: the primary one).
    #[arg(long)]
    pub twin: Option<String>,
    /// The world after this many rows of the twin's tape (default: now, or the run's end).
    #[arg(long)]
    pub at: Option<u64>,
    /// Print what changed between this position and `--at`, instead of the world.
    #[arg(long)]
    pub from: Option<u64>,
    #[command(flatten)]
    pub client: ClientArgs,
}

pub async fn state(args: StateArgs) -> i32 {
    finish(async {
        let c = Client::new(&args.client)?;
        let mut query: Vec<String> = Vec::new();
        query.extend(args.twin.map(|t| format!("twin={t}")));
        let path = match args.from {
            Some(from) => {
                query.push(format!("from={from}"));
                query.extend(args.at.map(|n| format!("to={n}")));
                format!("{}/diff?{}", world_path(&args.id), query.join("&"))
            }
            None => {
                query.extend(args.at.map(|n| format!("at={n}")));
                format!("{}/state?{}", world_path(&args.id), query.join("&"))
            }
        };
        let v = c.call(reqwest::Method::GET, &path, None).await?;
        println!("{}", serde_json::to_string_pretty(&v).unwrap());
        Ok(exit::OK)
    }
    .await)
}

/// Where a world is read from: a sandbox (`ses_…`) or a run (`run_…`), as a REST path.
fn world_path(id: &str) -> String {
    let kind = if id.starts_with("run_") { "runs" } else { "sandboxes" };
    format!("/v1/{kind}/{id}")
}

/// Which twin's world, after how many rows of its tape.
#[derive(Args, Debug)]
pub struct Position {
    /// The twin (default: the primary one).
    #[arg(long)]
    pub twin: Option<String>,
    /// The world after this many rows of its tape (default: now, or the run's end).
    #[arg(long)]
    pub at: Option<u64>,
}

impl Position {
    /// As a query string (`?twin=github&at=17`).
    fn query(&self) -> String {
        let q: Vec<String> = self.twin.iter().map(|t| format!("twin={t}")).chain(self.at.map(|n| format!("at={n}"))).collect();
        if q.is_empty() { String::new() } else { format!("?{}", q.join("&")) }
    }
}

#[derive(Subcommand, Debug)]
pub enum SeedsCommand {
    /// Save a twin's world in a sandbox (`ses_…`) or run (`run_…`), as it stood after `--at`
    /// rows of its tape (default: now, or the run's end), as the team's seed NAME. New
    /// sandboxes and tasks start from it by name (`"seed": "NAME"`).
    Save {
        name: String,
        /// The sandbox or run whose world to save.
        #[arg(long)]
        from: String,
        #[command(flatten)]
        position: Position,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Print a twin's world in a sandbox or run as a seed document (for a file or a task's
    /// seed), without storing it.
    Export {
        /// A sandbox id (`ses_…`) or a run id (`run_…`).
        id: String,
        #[command(flatten)]
        position: Position,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// List the team's named seeds.
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub async fn seeds(cmd: SeedsCommand) -> i32 {
    finish(async {
        match cmd {
            SeedsCommand::Save { name, from, position, client } => {
                let c = Client::new(&client)?;
                let seed = c.call(reqwest::Method::GET, &format!("{}/seed{}", world_path(&from), position.query()), None).await?;
                let saved_from = seed["_meta"]["saved_from"].clone();
                let twin = saved_from["twin"].as_str().unwrap_or_default().to_string();
                let v = c.call(reqwest::Method::POST, "/v1/seeds", Some(json!({"name": name, "twin": twin, "seed": seed}))).await?;
                println!("saved seed {name} ({twin}, {} bytes): {from}'s world after row {}", v["bytes"], saved_from["at"]);
            }
            SeedsCommand::Export { id, position, client } => {
                let c = Client::new(&client)?;
                let seed = c.call(reqwest::Method::GET, &format!("{}/seed{}", world_path(&id), position.query()), None).await?;
                println!("{}", serde_json::to_string_pretty(&seed).unwrap());
            }
            SeedsCommand::List { client } => {
                let c = Client::new(&client)?;
                let v = c.call(reqwest::Method::GET, "/v1/seeds", None).await?;
                for s in v["data"].as_array().into_iter().flatten() {
                    println!("{:<24} {}", s["name"].as_str().unwrap_or(""), s["twin"].as_str().unwrap_or(""));
                }
            }
        }
        Ok(exit::OK)
    }
    .await)
}

fn print_sandbox(s: &Value, format: Format) {
    let id = s["id"].as_str().unwrap_or_default();
    let token = s["agent_token"].as_str().unwrap_or_default();
    let per_twin = s["per_twin"].as_object().cloned().unwrap_or_default();
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(s).unwrap()),
        Format::Text => {
            println!("sandbox   {id}");
            println!("token     {token}");
            println!("expires   {}  (idle {})", s["expires_at"].as_str().unwrap_or(""), s["idle_expires_at"].as_str().unwrap_or(""));
            for (twin, urls) in &per_twin {
                println!("{twin:<9} {}", urls["api_url"].as_str().unwrap_or(""));
            }
        }
        Format::Env => {
            // The server composes the agent's environment from each twin's declarations.
            for (k, v) in s["agent_env"].as_object().into_iter().flatten() {
                println!("export {k}={}", shell_quote(v.as_str().unwrap_or("")));
            }
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Make a new key for your team; it is printed once and stored only as a hash.
    Create {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// The team's keys: id, prefix, created, revoked.
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Revoke a key by id (`key_…`); it stops working at once. A key cannot revoke itself.
    Revoke {
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
}

pub async fn keys(cmd: KeysCommand) -> i32 {
    finish(async {
        match cmd {
            KeysCommand::Create { client } => {
                let k = Client::new(&client)?.call(reqwest::Method::POST, "/v1/keys", None).await?;
                println!("{}  {}", k["id"].as_str().unwrap_or(""), k["key"].as_str().unwrap_or(""));
                eprintln!("pome: keep this key: it is not shown again");
            }
            KeysCommand::List { client } => {
                let list = Client::new(&client)?.call(reqwest::Method::GET, "/v1/keys", None).await?;
                for k in list["data"].as_array().into_iter().flatten() {
                    let state = k["revoked_at"].as_str().map_or("live".to_string(), |t| format!("revoked {t}"));
                    println!("{}  {}…  created {}  {state}", k["id"].as_str().unwrap_or("(no id)"), k["prefix"].as_str().unwrap_or(""), k["created_at"].as_str().unwrap_or(""));
                }
            }
            KeysCommand::Revoke { id, client } => {
                Client::new(&client)?.call(reqwest::Method::DELETE, &format!("/v1/keys/{id}"), None).await?;
                println!("revoked {id}");
            }
        }
        Ok(exit::OK)
    }
    .await)
}

pub async fn usage(args: ClientArgs) -> i32 {
    finish(async {
        let c = Client::new(&args)?;
        let u = c.call(reqwest::Method::GET, "/v1/usage", None).await?;
        println!("sandboxes open {} of {} ({} remaining)", u["sessions_used"], u["sessions_quota"], u["sessions_remaining"]);
        Ok(exit::OK)
    }.await)
}

/// `pome mcp-config <sandbox>`: each twin's MCP server as MCP clients configure a remote one.
pub async fn mcp_config(sandbox: String, control: bool, args: ClientArgs) -> i32 {
    finish(async {
        let c = Client::new(&args)?;
        let s = c.call(reqwest::Method::GET, &format!("/v1/sandboxes/{sandbox}"), None).await?;
        println!("{}", serde_json::to_string_pretty(&mcp_servers(&s, control.then_some((c.base.as_str(), c.key.as_str())))).unwrap());
        Ok(exit::OK)
    }
    .await)
}

/// The `mcpServers` object: one server per twin (`pome-<twin>`), and the control MCP (`pome`)
/// when asked for with the team's key.
pub fn mcp_servers(sandbox: &Value, control: Option<(&str, &str)>) -> Value {
    let token = sandbox["agent_token"].as_str().unwrap_or_default();
    let mut servers = serde_json::Map::new();
    for (twin, urls) in sandbox["per_twin"].as_object().into_iter().flatten() {
        servers.insert(format!("pome-{twin}"), json!({"type": "http", "url": urls["mcp_url"], "headers": {"Authorization": format!("Bearer {token}")}}));
    }
    if let Some((base, key)) = control {
        servers.insert("pome".into(), json!({"type": "http", "url": format!("{base}/mcp"), "headers": {"Authorization": format!("Bearer {key}")}}));
    }
    json!({"mcpServers": servers})
}

/// `'…'` with any `'` inside escaped, so a value is one word to the shell.
fn shell_quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', "'\\''"))
}
