//! `pome twin start`: one twin at the root of its own port, like the real API host, with
//! its tape at `/_pome/events`. No account, no sandbox, no grading.

use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::response::{IntoResponse as _, Response};
use axum::routing::any;
use tokio::net::TcpListener;

use std::path::PathBuf;

use clap::Subcommand;
use pome_runtime::limits::Limits;
use pome_runtime::metrics::Metrics;
use pome_runtime::seeds::SeedCache;
use pome_runtime::store::TwinStore;

#[derive(Subcommand, Debug)]
pub enum TwinCommand {
    /// Serve one twin at the root of its own port, like the real API host.
    Start {
        /// Twin name (github, slack, ...).
        twin: String,
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Seed file (JSON); the twin's default world without it.
        #[arg(long)]
        seed: Option<PathBuf>,
        /// Directory of third-party twin components.
        #[arg(long, env = "POME_TWINS_DIR")]
        twins_dir: Option<PathBuf>,
        /// Where compiled twins are cached.
        #[arg(long, env = "POME_DATA", default_value = "pome-data")]
        data: PathBuf,
        #[command(flatten)]
        tls: crate::cli::TlsArgs,
    },
    /// List the twins this binary can serve.
    List {
        #[arg(long, env = "POME_TWINS_DIR")]
        twins_dir: Option<PathBuf>,
        #[arg(long, env = "POME_DATA", default_value = "pome-data")]
        data: PathBuf,
    },
}


struct Local {
    store: TwinStore,
    token: String,
    limits: Limits,
    /// What requests in flight hold, counted like the hosted server's.
    held: Arc<pome_runtime::engine::Held>,
    /// Tape streams served at once, as `pome serve` bounds them.
    streams: Arc<tokio::sync::Semaphore>,
    /// The twin's MCP server, at `/mcp`.
    mcp: pome_server::mcp::Doors,
    twin: String,
}

pub async fn run(cmd: TwinCommand) -> anyhow::Result<()> {
    match cmd {
        TwinCommand::List { twins_dir, data } => {
            let rt = pome_server::server::runtime(Limits::default(), &data)?;
            let dir = twins_dir.as_deref().map(pome_server::server::open_dir).transpose()?;
            for (name, image) in pome_server::twins::load_all(&rt, dir.as_ref()).await? {
                let routes = image.description.surface.len();
                println!("{name:<8} {routes:>4} routes  ({})", image.origin);
            }
            Ok(())
        }
        TwinCommand::Start { twin, port, seed, twins_dir, data, tls } => {
            let tls_config = tls.load()?;
            let scheme = tls.scheme();
            let limits = Limits::default();
            let rt = pome_server::server::runtime(limits.clone(), &data)?;
            let dir = twins_dir.as_deref().map(pome_server::server::open_dir).transpose()?;
            let twins = pome_server::twins::load_all(&rt, dir.as_ref()).await?;
            let image = twins.get(&twin).cloned().with_context(|| format!("no twin `{twin}`; this binary has {:?}", twins.keys().collect::<Vec<_>>()))?;
            let seed = match seed {
                Some(path) => std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
                None => String::new(),
            };
            let seed_image = SeedCache::new(1).get(&rt, &image, &seed).await.map_err(|e| anyhow::anyhow!("the {twin} twin refused the seed: {e}"))?;
            let mcp = pome_server::mcp::Doors::new(limits.request_body_bytes, &[(twin.clone(), image.clone())].into_iter().collect());
            // A twin on the developer's own machine delivers its webhooks to receivers there.
            let outbound = pome_runtime::outbound::Policy { allowed: pome_runtime::outbound::loopback(), ..Default::default() };
            eprintln!("pome: webhooks are delivered to loopback only (127.0.0.0/8, ::1): a local convenience `pome serve` does not allow by default");
            let store = TwinStore::start(rt.clone(), image, seed_image, Arc::new(Metrics::default()), Arc::new(outbound)).await?;
            let local = Arc::new(Local { store, token: pome_server::auth::new_agent_token(), limits, held: rt.held.clone(), streams: Arc::new(tokio::sync::Semaphore::new(pome_server::limits::BULK_STREAMS)), mcp, twin: twin.clone() });
            let listener = TcpListener::bind(("127.0.0.1", port)).await.with_context(|| format!("binding port {port}"))?;
            let addr = listener.local_addr()?;
            println!("{twin} twin at {scheme}://{addr}");
            println!("token: {}", local.token);
            println!("tape:  {scheme}://{addr}/_pome/events");
            println!("mcp:   {scheme}://{addr}/mcp");
            let app = Router::new().route("/{*path}", any(serve)).route("/", any(serve)).with_state(local.clone());
            // Served until the process is stopped, with the hosted server's client bounds.
            let (_never, stopped) = tokio::sync::watch::channel(false);
            pome_server::listener::serve_with(listener, app, (&local.limits).into(), tls_config, stopped).await;
            Ok(())
        }
    }
}

async fn serve(State(local): State<Arc<Local>>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    if let Some(route) = path.strip_prefix("/_pome/") {
        return pome_server::proxy::reserved_route(&local.store, route, req.uri().query().unwrap_or(""), &local.held, &local.streams).await;
    }
    // HTTP/2 names the host in the URI, HTTP/1.1 in `Host`; the listener marks TLS requests.
    let host = req.uri().authority().map(|a| a.as_str()).or_else(|| req.headers().get("host").and_then(|v| v.to_str().ok())).unwrap_or("localhost").to_string();
    let scheme = req.headers().get("x-forwarded-proto").and_then(|v| v.to_str().ok()).unwrap_or("http").to_string();
    if path == "/mcp" {
        let credential = pome_server::auth::twin_credential(req.headers(), "", None, pome_server::auth::ANY_FORM);
        if !credential.is_some_and(|c| pome_server::auth::same(&c, &local.token)) {
            return pome_server::error::ApiError::new(pome_server::error::ErrorType::InvalidAuth, "the MCP server needs the token `pome twin start` printed, as `Authorization: Bearer <token>`").into_response();
        }
        let target = pome_server::mcp::twin::Target {
            store: local.store.clone(),
            token: local.token.clone(),
            base_url: format!("{scheme}://{host}"),
            tools: local.mcp.tools[&local.twin].clone(),
            request_id: pome_server::auth::new_id("req"),
        };
        return local.mcp.serve_twin(req, target).await;
    }
    pome_server::proxy::forward(&local.store, &local.token, format!("{scheme}://{host}"), &local.limits, req, path, || {}).await
}
