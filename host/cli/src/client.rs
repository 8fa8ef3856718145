//! CLI commands that talk to a running server (`pome sandbox …`, `pome usage`), and the
//! control-plane client they share with `pome run` and `pome replay`.

use serde_json::{Value, json};

use crate::cli::{ClientArgs, Format, SandboxCommand, exit};

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
}

pub fn fail(code: i32, message: impl Into<String>) -> Failure {
    Failure { code, message: message.into() }
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
        let key = args.api_key.clone().filter(|k| !k.is_empty()).ok_or(Failure {
            code: exit::AUTH,
            message: "no API key: set POME_API_KEY (printed by `pome serve` on first start) or pass --api-key".into(),
        })?;
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
        let resp = req.send().await.map_err(|e| Failure {
            code: exit::ORCHESTRATION,
            message: format!("cannot reach the pome server at {} ({e}); start one with `pome serve` or set POME_API_URL", self.base),
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
        Err(Failure { code, message: format!("{message} (HTTP {status}{})", details(&value)) })
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
                let text = std::fs::read_to_string(&path).map_err(|e| Failure { code: exit::USAGE, message: format!("reading {}: {e}", path.display()) })?;
                body["seed"] = serde_json::from_str(&text).map_err(|e| Failure { code: exit::USAGE, message: format!("{} is not JSON: {e}", path.display()) })?;
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
        SandboxCommand::Stop { id, discard, client } => {
            let c = Client::new(&client)?;
            match c.call(reqwest::Method::DELETE, &format!("/v1/sandboxes/{id}"), None).await {
                Ok(_) => {}
                Err(f) if f.code == exit::ORCHESTRATION && f.message.contains("ungraded") && discard => {
                    // Learn the discard token from the refusal, then confirm.
                    let resp = reqwest::Client::new()
                        .delete(format!("{}/v1/sandboxes/{id}", c.base))
                        .header("x-api-key", &c.key)
                        .send()
                        .await
                        .map_err(|e| Failure { code: exit::ORCHESTRATION, message: e.to_string() })?;
                    let v: Value = resp.json().await.unwrap_or(Value::Null);
                    let token = v["error"]["details"]["discard_token"].as_str().unwrap_or_default().to_string();
                    c.call(reqwest::Method::DELETE, &format!("/v1/sandboxes/{id}?confirm_discard={token}"), None).await?;
                }
                Err(f) if f.message.contains("ungraded") => {
                    return Err(Failure { code: exit::ORCHESTRATION, message: format!("{}; pass --discard to throw its run away", f.message) });
                }
                Err(f) => return Err(f),
            }
            println!("stopped {id}");
            Ok(())
        }
    }
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
            let names: Vec<&String> = per_twin.keys().collect();
            println!("export POME_SESSION_ID={id}");
            println!("export POME_AUTH_TOKEN={token}");
            println!("export POME_TWIN_NAMES={}", names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","));
            for (twin, urls) in &per_twin {
                println!("export POME_{}_REST_URL={}", twin.to_uppercase(), urls["api_url"].as_str().unwrap_or(""));
            }
        }
    }
}

pub async fn usage(args: ClientArgs) -> i32 {
    finish(async {
        let c = Client::new(&args)?;
        let u = c.call(reqwest::Method::GET, "/v1/usage", None).await?;
        println!("sandboxes open {} of {} ({} remaining)", u["sessions_used"], u["sessions_quota"], u["sessions_remaining"]);
        Ok(exit::OK)
    }.await)
}
