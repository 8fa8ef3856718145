//! The `pome` command line. Arguments are parsed into validated values first, then the
//! objects are built. Exit codes: 0 success, 1 fail, 2 twin or orchestration error, 3 auth,
//! 4 quota, 5 usage.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use pome_runtime::limits::{Lifetimes, Limits};
use pome_server::server::ServeConfig;

pub use crate::client::{ClientArgs, Format, KeysCommand, SandboxCommand, exit};
pub use crate::local::TwinCommand;

#[derive(Parser, Debug)]
#[command(name = "pome", version, about = "A WebAssembly-isolated host for digital twins of SaaS APIs")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the hosted API (control plane and sandboxes) on embedded storage.
    Serve(ServeArgs),
    /// Run one twin on its own port, with no account and no sandbox.
    #[command(subcommand)]
    Twin(TwinCommand),
    /// Create, list and stop sandboxes on a server (alias: session).
    #[command(subcommand, alias = "session")]
    Sandbox(SandboxCommand),
    /// Show the team's concurrency usage.
    Usage(ClientArgs),
    /// Check the setup: the server answers, the key is valid, twins are served; says how to
    /// fix what is not.
    Doctor(ClientArgs),
    /// Finished runs: fork one at any tape position.
    #[command(subcommand)]
    Runs(crate::client::RunsCommand),
    /// A twin's world in a sandbox or run as it stood after any tape row, or what changed
    /// between two rows.
    State(crate::client::StateArgs),
    /// Named seeds: save any world a sandbox or run reached as one, export it, list them.
    #[command(subcommand)]
    Seeds(crate::client::SeedsCommand),
    /// Create, list and revoke the team's API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Run an agent against a task: sandbox, agent, finalize, verdict, `runs/<task>/<run-id>/`.
    Run(crate::run::RunArgs),
    /// Compare two trial groups, agent versions or run directories task by task: pass rates
    /// with 95 % intervals, the difference and whether it is beyond noise, the criteria that
    /// changed most.
    Compare(crate::compare::CompareArgs),
    /// Regrade a run directory offline with the same grader.
    Eval {
        /// A `runs/<task>/<run-id>` directory.
        run_dir: PathBuf,
        /// Third-party twins whose checks the run needs, besides the embedded ones.
        #[arg(long, env = "POME_TWINS_DIR")]
        twins_dir: Option<PathBuf>,
        /// Where compiled components are cached.
        #[arg(long, env = "POME_DATA", default_value = "pome-data")]
        data: PathBuf,
    },
    /// Re-execute a run's tapes on fresh stores and report every response that differs.
    Replay {
        /// A run directory, or a run id on the server.
        run: String,
        #[command(flatten)]
        client: ClientArgs,
        #[arg(long, env = "POME_TWINS_DIR")]
        twins_dir: Option<PathBuf>,
        #[arg(long, env = "POME_DATA", default_value = "pome-data")]
        data: PathBuf,
    },
    /// Print an MCP client configuration (the `mcpServers` JSON Claude Desktop, Cursor and
    /// other MCP clients read) with each twin of a sandbox as a server: URL and bearer token.
    McpConfig {
        /// The sandbox id, `ses_…`.
        sandbox: String,
        /// Add the team's control MCP (`run_task`, `finalize`, …) with the API key.
        #[arg(long)]
        control: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Task files.
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// The checks each twin declares (what `[code]` criteria bind to).
    Checks {
        twin: Option<String>,
        #[arg(long, env = "POME_TWINS_DIR")]
        twins_dir: Option<PathBuf>,
        #[arg(long, env = "POME_DATA", default_value = "pome-data")]
        data: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum TasksCommand {
    /// Parse task files and bind every `[code]` criterion to a declared check.
    Validate {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long, env = "POME_TWINS_DIR")]
        twins_dir: Option<PathBuf>,
        #[arg(long, env = "POME_DATA", default_value = "pome-data")]
        data: PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "POME_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Data directory: the database and the compiled-twin cache.
    #[arg(long, env = "POME_DATA", default_value = "pome-data")]
    pub data: PathBuf,
    /// Concurrent sandboxes per team.
    #[arg(long, env = "POME_QUOTA", default_value_t = 10)]
    pub quota: usize,
    /// Hard lifetime of a sandbox (e.g. 30m, 90s).
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub sandbox_lifetime: Duration,
    /// Idle timeout of a sandbox; reset by any twin call or a heartbeat.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub idle_timeout: Duration,
    /// Directory of third-party twin components (`*.wasm`) to serve besides the embedded ones.
    #[arg(long, env = "POME_TWINS_DIR")]
    pub twins_dir: Option<PathBuf>,
    /// The URL clients reach this server at, if not the `Host` they send.
    #[arg(long, env = "POME_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// A domain whose names `<sandbox>.<twin>.<public host>` point at this server: each then
    /// reaches that sandbox's twin at its root, for clients that take a host and not a URL
    /// (`gh` with GH_HOST, `@googleapis/gmail`). The create response names the URL
    /// (`per_twin.<twin>.host_url`).
    #[arg(long, env = "POME_PUBLIC_HOST", value_name = "DOMAIN[:PORT]")]
    pub public_host: Option<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Where twins may deliver webhooks: a CIDR, an IP address or a host name; repeat for
    /// more. Without it, nowhere: a hosted pome must not reach into its own host or a private
    /// network. Loopback, link-local and cloud metadata addresses need an entry naming them
    /// (e.g. 127.0.0.1/32); a host name's addresses are checked too.
    #[arg(long = "deliver-to", value_name = "CIDR|HOST")]
    pub deliver_to: Vec<pome_runtime::outbound::Destination>,
    /// Attempts per webhook delivery, the first included.
    #[arg(long, default_value_t = pome_runtime::limits::DELIVERY_ATTEMPTS)]
    pub delivery_attempts: u32,
    /// Wait before a delivery's second attempt; doubled for each after.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub delivery_backoff: Duration,
    /// Distinct endpoint URLs one sandbox's twin may deliver webhooks to.
    #[arg(long, default_value_t = pome_runtime::limits::DELIVERY_ENDPOINTS)]
    pub delivery_endpoints: usize,
    /// Webhook deliveries one sandbox's twin may have pending or retrying at once.
    #[arg(long, default_value_t = pome_runtime::limits::DELIVERIES_IN_FLIGHT)]
    pub deliveries_in_flight: usize,
    /// Webhook delivery attempts in progress at once across the server.
    #[arg(long, default_value_t = pome_runtime::limits::DELIVERY_ATTEMPTS_AT_ONCE)]
    pub delivery_concurrency: usize,
    /// When an answered twin call is on disk, so a restart brings live sandboxes back:
    /// `window` (written before its answer is sent, so a crash or kill -9 loses nothing
    /// answered; fsynced within 50 ms, which is what a power cut may lose), `sync` (fsynced
    /// before its answer is sent; nothing answered is ever lost, at a cost in throughput),
    /// `memory` (never; a restart ends every open sandbox).
    #[arg(long, env = "POME_DURABILITY", default_value_t = pome_server::live::Durability::default())]
    pub durability: pome_server::live::Durability,
    /// Keep everything durable (teams, keys, seeds, tasks, runs, live sandboxes and their
    /// tapes) in this PostgreSQL database instead of SQLite files in the data directory: a
    /// libpq connection string or URL, e.g. `postgres://pome@db.internal/pome` or
    /// `host=/var/run/postgresql dbname=pome`. An answer then leaves once its row is
    /// committed there. Several hosts may share one database: each sandbox is served by one
    /// of them, and any of them answers any request (see --advertise-url, --lease).
    #[arg(long, env = "POME_STORE", value_name = "URL")]
    pub store: Option<String>,
    /// With --store: how the other hosts sharing the database reach this one, e.g.
    /// `http://10.0.0.7:8080` (default: this machine's host name and the listening port).
    #[arg(long, env = "POME_ADVERTISE_URL", value_name = "URL")]
    pub advertise_url: Option<String>,
    /// With --store: how long this host's lease on its sandboxes lasts. It is renewed five
    /// times a lease; if this host dies, other hosts take its sandboxes over this long after
    /// its last renewal, and it stops serving them a quarter-lease before that.
    #[arg(long, default_value = "10s", value_parser = parse_lease)]
    pub lease: std::time::Duration,
    /// On SIGTERM, keep serving this long with /healthz answering 503 before closing the
    /// listener, so a load balancer checking /healthz stops sending requests here first
    /// (set it above the balancer's check interval). With --store, the host then hands its
    /// sandboxes to the others.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub drain_wait: std::time::Duration,
    /// Serve `/metrics` without an API key, for a scraper on a trusted network (by default
    /// it needs a team key, like `/v1`).
    #[arg(long)]
    pub metrics_public: bool,
    /// Failed authentications one client address may make per 10 s before its further
    /// failing attempts are answered 429 (a valid key is never refused).
    #[arg(long, default_value_t = pome_runtime::limits::AUTH_FAILURES_ALLOWED, value_parser = clap::value_parser!(u32).range(1..))]
    pub auth_failures: u32,
    /// Tape streams and run downloads served at once across the server, each on a
    /// low-priority thread; more wait their turn.
    #[arg(long, default_value_t = pome_server::limits::BULK_STREAMS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub bulk_streams: u32,
    /// Whole runs loaded into memory at once (reports, MCP `get_run`); more wait.
    #[arg(long, default_value_t = pome_server::limits::WHOLE_RUNS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub whole_runs: u32,
    /// Finalizes collecting and grading at once across the server; more wait.
    #[arg(long, default_value_t = pome_server::limits::FINALIZE_JOBS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub finalize_jobs: u32,
    /// Live dashboard streams one team may hold open; the next is answered 429.
    #[arg(long, default_value_t = pome_server::limits::TEAM_STREAMS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub team_streams: u32,
    /// Worlds one team may have rebuilt at once (forks, states at a tape position); the
    /// next is answered 429.
    #[arg(long, default_value_t = pome_server::limits::TEAM_REBUILDS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub team_rebuilds: u32,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// HTTPS: serve TLS with a certificate of one's own (clients such as `gh` insist on HTTPS for
/// an Enterprise host).
#[derive(Args, Debug, Clone)]
pub struct TlsArgs {
    /// The server's certificate chain (PEM); serve HTTPS with it.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The TLS configuration, when a certificate was given.
    pub fn load(&self) -> anyhow::Result<Option<std::sync::Arc<pome_server::listener::TlsConfig>>> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Ok(Some(pome_server::listener::tls_config(cert, key)?)),
            _ => Ok(None),
        }
    }

    /// `https` with a certificate, else `http`.
    pub fn scheme(&self) -> &'static str {
        if self.tls_cert.is_some() { "https" } else { "http" }
    }
}

/// Per-store limits (see `limits.rs` for why each default).
#[derive(Args, Debug)]
pub struct LimitArgs {
    /// Linear memory cap per twin store, MiB.
    #[arg(long, default_value_t = Limits::default().store_memory_bytes >> 20)]
    pub store_memory_mib: usize,
    /// CPU deadline per guest call (e.g. 1s, 200ms).
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    pub call_deadline: Duration,
    /// Largest request body passed to a twin, MiB.
    #[arg(long, default_value_t = Limits::default().request_body_bytes >> 20)]
    pub request_body_mib: usize,
    /// Largest response a twin may return, MiB.
    #[arg(long, default_value_t = Limits::default().response_body_bytes >> 20)]
    pub response_body_mib: usize,
    /// Bytes a twin may pass through tape calls per request, MiB.
    #[arg(long, default_value_t = Limits::default().host_call_bytes >> 20)]
    pub host_call_mib: usize,
    /// Rows per twin tape.
    #[arg(long, default_value_t = Limits::default().tape_rows)]
    pub tape_rows: usize,
    /// Recorded bytes per twin tape, MiB.
    #[arg(long, default_value_t = Limits::default().tape_bytes >> 20)]
    pub tape_mib: usize,
    /// Rows of one tape kept in memory once they are durable on disk (sync and window
    /// modes); older rows are read back from live.db when a whole tape is read.
    #[arg(long, default_value_t = Limits::default().tape_memory_rows)]
    pub tape_memory_rows: usize,
    /// Bytes of one tape kept in memory once durable on disk, KiB.
    #[arg(long, default_value_t = Limits::default().tape_memory_bytes >> 10)]
    pub tape_memory_kib: usize,
    /// Twin stores that may exist at once (address space is reserved for them up front).
    #[arg(long, default_value_t = Limits::default().max_stores)]
    pub max_stores: u32,
    /// Client connections held at once; past it a new client replaces the longest-idle one.
    #[arg(long, default_value_t = Limits::default().max_connections)]
    pub max_connections: usize,
    /// Time a client has to send a request's headers (also the idle limit of a kept-alive
    /// connection), e.g. 30s.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub header_timeout: Duration,
    /// Time a client has to send a request's whole body once its headers arrived, e.g. 30s.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub body_timeout: Duration,
    /// Requests one HTTP/2 connection may have in flight at once.
    #[arg(long, default_value_t = Limits::default().h2_streams)]
    pub h2_streams: u32,
    /// Largest seed accepted at sandbox create, MiB.
    #[arg(long, default_value_t = Limits::default().seed_bytes >> 20)]
    pub seed_mib: usize,
    /// Bytes of named seeds one team may store, MiB.
    #[arg(long, default_value_t = Limits::default().team_seed_bytes >> 20)]
    pub team_seed_mib: usize,
    /// Requests queued for one twin store before callers wait.
    #[arg(long, default_value_t = Limits::default().store_queue)]
    pub store_queue: usize,
    /// Seed snapshots kept in memory.
    #[arg(long, default_value_t = Limits::default().seed_cache_entries)]
    pub seed_cache_entries: usize,
    /// Guest time a twin store spends serving after its last checkpoint before it takes
    /// another; a trap replays only the requests since the newest one (e.g. 250ms).
    #[arg(long, default_value = "250ms", value_parser = humantime::parse_duration)]
    pub checkpoint_after: Duration,
    /// Memory all twin stores and tapes may hold together (e.g. 12GiB, 800MiB); past it new
    /// sandboxes get 503 with Retry-After. Default: three quarters of this machine's memory.
    #[arg(long, value_parser = parse_size)]
    pub memory_budget: Option<usize>,
}

/// `800MiB`, `12GiB`, `1.5GB`, or a number of bytes.
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("`{s}` is not a size like 800MiB or 12GiB"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("unknown unit `{other}` in `{s}`: use MiB or GiB")),
    };
    Ok((n * mult) as usize)
}

impl LimitArgs {
    pub fn to_limits(&self) -> Limits {
        Limits {
            store_memory_bytes: self.store_memory_mib << 20,
            call_deadline: self.call_deadline,
            request_body_bytes: self.request_body_mib << 20,
            response_body_bytes: self.response_body_mib << 20,
            host_call_bytes: self.host_call_mib << 20,
            tape_rows: self.tape_rows,
            tape_bytes: self.tape_mib << 20,
            tape_memory_rows: self.tape_memory_rows,
            tape_memory_bytes: self.tape_memory_kib << 10,
            max_stores: self.max_stores,
            max_connections: self.max_connections,
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            h2_streams: self.h2_streams,
            seed_bytes: self.seed_mib << 20,
            team_seed_bytes: self.team_seed_mib << 20,
            store_queue: self.store_queue.max(1),
            seed_cache_entries: self.seed_cache_entries.max(1),
            checkpoint_after: self.checkpoint_after,
            checkpoint_inline_bytes: pome_runtime::limits::Limits::default().checkpoint_inline_bytes,
            memory_budget: self.memory_budget.unwrap_or_else(pome_runtime::limits::default_memory_budget),
        }
    }
}

impl ServeArgs {
    pub fn to_config(&self) -> ServeConfig {
        ServeConfig {
            listen: self.listen,
            data_dir: self.data.clone(),
            quota: self.quota,
            lifetimes: Lifetimes { lifetime: self.sandbox_lifetime, idle: self.idle_timeout },
            limits: self.limits.to_limits(),
            twins_dir: self.twins_dir.clone(),
            outbound: pome_runtime::outbound::Policy {
                allowed: self.deliver_to.clone(),
                attempts: self.delivery_attempts.max(1),
                backoff: self.delivery_backoff,
                max_endpoints: self.delivery_endpoints,
                max_in_flight: self.deliveries_in_flight,
                concurrency: self.delivery_concurrency.max(1),
                ..Default::default()
            },
            api_key: std::env::var("POME_API_KEY").ok().filter(|k| !k.is_empty()),
            public_url: self.public_url.clone(),
            public_host: self.public_host.clone(),
            tls: None,
            cache_dir: None,
            durability: self.durability,
            store: self.store.clone(),
            lease: self.lease,
            advertise_url: self.advertise_url.clone(),
            drain_wait: self.drain_wait,
            metrics_public: self.metrics_public,
            auth_failures_allowed: self.auth_failures,
            host_limits: pome_server::limits::HostLimits {
                bulk_streams: self.bulk_streams as usize,
                whole_runs: self.whole_runs as usize,
                finalize_jobs: self.finalize_jobs as usize,
                team_streams: self.team_streams as usize,
                team_rebuilds: self.team_rebuilds as usize,
            },
        }
    }
}

pub async fn run(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Serve(args) => serve(args).await,
        Command::Twin(cmd) => crate::local::run(cmd).await,
        Command::Sandbox(cmd) => return crate::client::sandbox(cmd).await,
        Command::Usage(client) => return crate::client::usage(client).await,
        Command::Doctor(client) => return crate::doctor::doctor(client).await,
        Command::Runs(cmd) => return crate::client::runs(cmd).await,
        Command::State(args) => return crate::client::state(args).await,
        Command::Seeds(cmd) => return crate::client::seeds(cmd).await,
        Command::Keys(cmd) => return crate::client::keys(cmd).await,
        Command::Run(args) => return crate::run::run(args).await,
        Command::Compare(args) => return crate::compare::compare_cmd(args).await,
        Command::Eval { run_dir, twins_dir, data } => return crate::run::eval(run_dir, twins_dir, data).await,
        Command::Replay { run, client, twins_dir, data } => return crate::run::replay(run, client, twins_dir, data).await,
        Command::McpConfig { sandbox, control, client } => return crate::client::mcp_config(sandbox, control, client).await,
        Command::Tasks(TasksCommand::Validate { files, twins_dir, data }) => return crate::run::validate(files, twins_dir, data).await,
        Command::Checks { twin, twins_dir, data } => return crate::run::checks(twin, twins_dir, data).await,
    };
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("pome: {e:#}");
            exit::ORCHESTRATION
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut cfg = args.to_config();
    cfg.tls = args.tls.load()?;
    let running = pome_server::server::start(cfg.clone()).await?;
    println!("pome listening on {}://{}", args.tls.scheme(), running.addr);
    println!("twins: {}", running.app.twins.keys().cloned().collect::<Vec<_>>().join(", "));
    if cfg.outbound.allowed.is_empty() {
        eprintln!("pome: webhooks are delivered nowhere; name where with --deliver-to (a CIDR, an IP address or a host name)");
    }
    if let Some(key) = &running.new_api_key {
        println!("created the default team; its API key (shown once): {key}");
        println!("  export POME_API_KEY={key}");
        println!("  dashboard: {}", dashboard_url(&args, &cfg, running.addr));
    } else if cfg.api_key.is_some() {
        println!("API key from POME_API_KEY registered for the default team");
    }
    let stop = running.app.clone();
    tokio::select! {
        _ = shutdown_signal() => {
            println!("shutting down: closing {} open sandboxes", stop.metrics.sandboxes_open.get());
            running.shutdown().await;
        }
    }
    Ok(())
}

/// The dashboard's URL: under `--public-url` when given, else the listening address (a
/// wildcard one read as loopback, which a browser on this machine reaches).
fn dashboard_url(args: &ServeArgs, cfg: &ServeConfig, addr: SocketAddr) -> String {
    if let Some(public) = &cfg.public_url {
        return format!("{}/ui/", public.trim_end_matches('/'));
    }
    let mut addr = addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() { std::net::Ipv4Addr::LOCALHOST.into() } else { std::net::Ipv6Addr::LOCALHOST.into() });
    }
    format!("{}://{addr}/ui/", args.tls.scheme())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("installing a SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// A lease of at least 500 ms (renewals go out every fifth of it).
fn parse_lease(s: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| e.to_string())?;
    if d < std::time::Duration::from_millis(500) {
        return Err("a lease shorter than 500ms would be renewed faster than the database answers under load; give at least 500ms".into());
    }
    Ok(d)
}
