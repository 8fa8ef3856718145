//! The shared store: PostgreSQL (`pome serve --store postgres://…`), one database every host of
//! a deployment uses. The same tables as `sqlite.rs`, with what a shared database needs beside
//! them: schema changes under an advisory lock (hosts start together), a row lock where two
//! hosts could race (a team's key allowance), and a run's JSON in parts of [`PART`] bytes,
//! written as it is produced and read a part at a time.

use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use pome_runtime::limits::MAX_LIVE_KEYS_PER_TEAM;
use serde_json::Value;
use tokio_postgres::NoTls;

use super::{CriterionOutcome, KeyInfo, LiveKey, RunFilter, RunPage, RunSummary, StorageError, now};

/// Bytes of a run's JSON a `run_parts` row holds; every part but the last is exactly this
/// long, so the part holding any offset is found by division.
const PART: usize = 1 << 20;

/// Connections one host holds to the database.
const POOL: usize = 16;

/// Taken (for the transaction) by whatever must not run on two hosts at once: the schema's
/// creation, the default team's.
const SCHEMA_LOCK: i64 = 0x706f_6d65_0001;
const DEFAULT_TEAM_LOCK: i64 = 0x706f_6d65_0002;

/// Key columns compare as bytes (`COLLATE "C"`), as SQLite's do, whatever the database's
/// locale: listings come back in the same order from either store.
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS teams (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT COLLATE "C" PRIMARY KEY,
    team_id TEXT COLLATE "C" NOT NULL REFERENCES teams(id),
    created_at TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL UNIQUE,
    prefix TEXT,
    revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS seeds (
    team_id TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    twin TEXT NOT NULL,
    seed TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (team_id, name)
);
CREATE TABLE IF NOT EXISTS tasks (
    team_id TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (team_id, id)
);
CREATE TABLE IF NOT EXISTS task_versions (
    team_id TEXT COLLATE "C" NOT NULL,
    id TEXT COLLATE "C" NOT NULL,
    version TEXT COLLATE "C" NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (team_id, id, version)
);
CREATE TABLE IF NOT EXISTS runs (
    seq BIGSERIAL UNIQUE,
    id TEXT COLLATE "C" PRIMARY KEY,
    team_id TEXT COLLATE "C" NOT NULL,
    -- One run per sandbox.
    session_id TEXT COLLATE "C" NOT NULL UNIQUE,
    task_id TEXT COLLATE "C",
    group_id TEXT COLLATE "C",
    agent_id TEXT,
    agent_version TEXT,
    twins TEXT NOT NULL,
    verdict TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    body_len BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_team ON runs (team_id, created_at);
-- The score and each criterion's outcome (`CriterionOutcome`s as JSON), for listings; null
-- on runs stored before these columns.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS score INTEGER;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS criteria TEXT;
CREATE TABLE IF NOT EXISTS run_parts (
    run_seq BIGINT NOT NULL REFERENCES runs(seq) ON DELETE CASCADE,
    part INTEGER NOT NULL,
    bytes BYTEA NOT NULL,
    PRIMARY KEY (run_seq, part)
);
"#;

/// How long a request waits for a connection, or for one to be made, before it is answered
/// that the database is unavailable (rather than hang while it is down).
const CONNECT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// `url` (any libpq connection string or URL) as a configuration, with [`CONNECT_WAIT`] as
/// its connect timeout unless it names one.
fn config(url: &str) -> Result<tokio_postgres::Config, StorageError> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|e| StorageError::Postgres(format!("`{url}` is not a PostgreSQL connection string or URL: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_WAIT);
    }
    Ok(config)
}

/// One connection to `url` of its own, outside the pool (a lock's, a listener's); the
/// caller drives the connection.
pub(crate) async fn connect_one(url: &str) -> Result<(tokio_postgres::Client, tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>), StorageError> {
    Ok(config(url)?.connect(NoTls).await?)
}

/// Create (or bring up to date) the tables of `schema`, under the advisory `lock`: hosts
/// start together, and two must not create the same table at once.
pub(crate) async fn migrate(pool: &Pool, lock: i64, schema: &str) -> Result<(), StorageError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock]).await?;
    tx.batch_execute(schema).await?;
    tx.commit().await?;
    Ok(())
}

/// A pool of connections to `url` (any libpq connection string or URL).
pub(crate) fn pool(url: &str) -> Result<Pool, StorageError> {
    build_pool(config(url)?)
}

/// A pool whose sessions run with `settings` (`-c name=value …`) besides the URL's own.
pub(crate) fn pool_with(url: &str, settings: &str) -> Result<Pool, StorageError> {
    let mut config = config(url)?;
    let options = match config.get_options() {
        Some(own) if !own.trim().is_empty() => format!("{own} {settings}"),
        _ => settings.to_string(),
    };
    config.options(&options);
    build_pool(config)
}

fn build_pool(config: tokio_postgres::Config) -> Result<Pool, StorageError> {
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(POOL)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(CONNECT_WAIT))
        .create_timeout(Some(CONNECT_WAIT))
        .recycle_timeout(Some(CONNECT_WAIT))
        .build()
        .map_err(|e| StorageError::Postgres(e.to_string()))
}

impl From<tokio_postgres::Error> for StorageError {
    fn from(e: tokio_postgres::Error) -> StorageError {
        // No SQL state means the error did not come from the server's answer to a
        // statement: the connection broke or could not be made.
        if e.is_closed() || e.code().is_none() {
            StorageError::Unavailable(e.to_string())
        } else if e.code() == Some(&tokio_postgres::error::SqlState::CHARACTER_NOT_IN_REPERTOIRE) {
            // Text with a NUL character, which PostgreSQL's text cannot hold.
            StorageError::Unstorable("a value sent contains a NUL character (\\u0000), which cannot be stored; remove it".into())
        } else {
            StorageError::Postgres(e.to_string())
        }
    }
}

impl From<deadpool_postgres::PoolError> for StorageError {
    fn from(e: deadpool_postgres::PoolError) -> StorageError {
        match e {
            deadpool_postgres::PoolError::Backend(e) => e.into(),
            other => StorageError::Unavailable(other.to_string()),
        }
    }
}

pub(super) struct PgStore {
    pool: Pool,
    /// The runtime the pool's connections run on: a stream's own thread reads runs through
    /// it ([`PgStore::read_run`]).
    runtime: tokio::runtime::Handle,
}

impl PgStore {
    pub async fn connect(url: &str) -> Result<PgStore, StorageError> {
        let pool = pool(url)?;
        migrate(&pool, SCHEMA_LOCK, SCHEMA).await?;
        Ok(PgStore { pool, runtime: tokio::runtime::Handle::current() })
    }

    pub async fn live_keys(&self) -> Result<Vec<(String, LiveKey)>, StorageError> {
        let c = self.pool.get().await?;
        let rows = c.query("SELECT key_hash, team_id, id FROM api_keys WHERE revoked_at IS NULL", &[]).await?;
        Ok(rows.iter().map(|r| (r.get(0), LiveKey { team: r.get(1), id: r.get(2) })).collect())
    }

    pub async fn ensure_default_team(&self) -> Result<(String, bool), StorageError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&DEFAULT_TEAM_LOCK]).await?;
        if let Some(row) = tx.query_opt("SELECT id FROM teams WHERE name = 'default' ORDER BY created_at LIMIT 1", &[]).await? {
            return Ok((row.get(0), false));
        }
        let id = crate::auth::new_id("team");
        tx.execute("INSERT INTO teams (id, name, created_at) VALUES ($1, 'default', $2)", &[&id, &now()]).await?;
        tx.commit().await?;
        Ok((id, true))
    }

    pub async fn create_team(&self, name: &str) -> Result<String, StorageError> {
        let id = crate::auth::new_id("team");
        self.pool.get().await?.execute("INSERT INTO teams (id, name, created_at) VALUES ($1, $2, $3)", &[&id, &name, &now()]).await?;
        Ok(id)
    }

    pub async fn team_has_keys(&self, team_id: &str) -> Result<bool, StorageError> {
        Ok(self.pool.get().await?.query_one("SELECT EXISTS (SELECT 1 FROM api_keys WHERE team_id = $1)", &[&team_id]).await?.get(0))
    }

    pub async fn add_api_key(&self, team_id: &str, hash: &str, prefix: &str) -> Result<(String, bool), StorageError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        // The team's row, locked: two hosts adding keys to one team take turns, so neither
        // counts past the allowance.
        tx.query_opt("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE", &[&team_id]).await?;
        let existing = tx.query_opt("SELECT team_id, id, revoked_at FROM api_keys WHERE key_hash = $1", &[&hash]).await?;
        let outcome = match existing {
            Some(row) if row.get::<_, String>(0) != team_id => return Err(StorageError::KeyTaken),
            Some(row) => (row.get(1), row.get::<_, Option<String>>(2).is_none()),
            None => {
                let n: i64 = tx.query_one("SELECT COUNT(*) FROM api_keys WHERE team_id = $1 AND revoked_at IS NULL", &[&team_id]).await?.get(0);
                if n as usize >= MAX_LIVE_KEYS_PER_TEAM {
                    return Err(StorageError::TooManyKeys(MAX_LIVE_KEYS_PER_TEAM));
                }
                let id = crate::auth::new_id("key");
                // Another team may have taken this key since it was looked up: then nothing
                // is inserted, and the key is theirs.
                let inserted = tx
                    .execute(
                        "INSERT INTO api_keys (key_hash, team_id, created_at, id, prefix) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key_hash) DO NOTHING",
                        &[&hash, &team_id, &now(), &id, &prefix],
                    )
                    .await?;
                if inserted == 0 {
                    return Err(StorageError::KeyTaken);
                }
                tx.execute("SELECT pg_notify($1, '')", &[&KEYS_CHANNEL]).await?;
                (id, true)
            }
        };
        tx.commit().await?;
        Ok(outcome)
    }

    pub async fn api_keys(&self, team_id: &str) -> Result<Vec<KeyInfo>, StorageError> {
        let rows = self.pool.get().await?.query("SELECT id, prefix, created_at, revoked_at FROM api_keys WHERE team_id = $1 ORDER BY created_at, id", &[&team_id]).await?;
        Ok(rows.iter().map(|r| KeyInfo { id: r.get(0), prefix: r.get(1), created_at: r.get(2), revoked_at: r.get(3) }).collect())
    }

    pub async fn revoke_api_key(&self, team_id: &str, key_id: &str) -> Result<Option<String>, StorageError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        let row = tx.query_opt("UPDATE api_keys SET revoked_at = $3 WHERE team_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING key_hash", &[&team_id, &key_id, &now()]).await?;
        // Every other host drops the key from its map once this commits.
        tx.execute("SELECT pg_notify($1, '')", &[&KEYS_CHANNEL]).await?;
        tx.commit().await?;
        Ok(row.map(|r| r.get(0)))
    }

    pub async fn put_seed(&self, team_id: &str, name: &str, twin: &str, seed: &str) -> Result<(), StorageError> {
        self.pool
            .get()
            .await?
            .execute(
                "INSERT INTO seeds (team_id, name, twin, seed, created_at) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (team_id, name) DO UPDATE SET twin = EXCLUDED.twin, seed = EXCLUDED.seed",
                &[&team_id, &name, &twin, &seed, &now()],
            )
            .await?;
        Ok(())
    }

    pub async fn seed_bytes(&self, team_id: &str, except: &str) -> Result<usize, StorageError> {
        let n: i64 = self.pool.get().await?.query_one("SELECT COALESCE(SUM(octet_length(seed)), 0)::BIGINT FROM seeds WHERE team_id = $1 AND name != $2", &[&team_id, &except]).await?.get(0);
        Ok(n.max(0) as usize)
    }

    pub async fn seeds(&self, team_id: &str) -> Result<Vec<(String, String, String)>, StorageError> {
        let rows = self.pool.get().await?.query("SELECT name, twin, seed FROM seeds WHERE team_id = $1 ORDER BY name", &[&team_id]).await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
    }

    pub async fn seed(&self, team_id: &str, name: &str) -> Result<Option<(String, String)>, StorageError> {
        let row = self.pool.get().await?.query_opt("SELECT twin, seed FROM seeds WHERE team_id = $1 AND name = $2", &[&team_id, &name]).await?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    pub async fn put_task(&self, team_id: &str, id: &str, body: &str, version: &str) -> Result<(), StorageError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        tx.execute(
            "INSERT INTO tasks (team_id, id, body, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (team_id, id) DO UPDATE SET body = EXCLUDED.body",
            &[&team_id, &id, &body, &now()],
        )
        .await?;
        tx.execute(
            "INSERT INTO task_versions (team_id, id, version, body, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            &[&team_id, &id, &version, &body, &now()],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn task_version(&self, team_id: &str, id: &str, version: &str) -> Result<Option<String>, StorageError> {
        let row = self.pool.get().await?.query_opt("SELECT body FROM task_versions WHERE team_id = $1 AND id = $2 AND version = $3", &[&team_id, &id, &version]).await?;
        Ok(row.map(|r| r.get(0)))
    }

    pub async fn task(&self, team_id: &str, id: &str) -> Result<Option<String>, StorageError> {
        let row = self.pool.get().await?.query_opt("SELECT body FROM tasks WHERE team_id = $1 AND id = $2", &[&team_id, &id]).await?;
        Ok(row.map(|r| r.get(0)))
    }

    pub async fn tasks(&self, team_id: &str) -> Result<Vec<(String, String)>, StorageError> {
        let rows = self.pool.get().await?.query("SELECT id, body FROM tasks WHERE team_id = $1 ORDER BY id", &[&team_id]).await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub async fn insert_run(&self, team_id: &str, run: Arc<pome_grade::run::Run>) -> Result<bool, StorageError> {
        let twins = serde_json::to_string(&run.twins).unwrap_or_else(|_| "[]".into());
        let (score, criteria) = (run.score.map(|s| s as i32), CriterionOutcome::of_run(&run));
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        let seq: Option<i64> = tx
            .query_opt(
                "INSERT INTO runs (id, team_id, session_id, task_id, group_id, agent_id, agent_version, twins, verdict, created_at, score, criteria)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (session_id) DO NOTHING RETURNING seq",
                &[&run.id, &team_id, &run.session_id, &run.task_id, &run.group_id, &run.agent_id, &run.agent_version, &twins, &run.verdict, &run.finalized_at, &score, &criteria],
            )
            .await?
            .map(|r| r.get(0));
        let Some(seq) = seq else {
            return Ok(false);
        };
        // The JSON is written on a blocking thread a part at a time, and each part is
        // inserted as it comes: a run is never held whole (its text can be hundreds of
        // megabytes).
        let (parts_tx, mut parts) = tokio::sync::mpsc::channel::<Vec<u8>>(2);
        let writer = tokio::task::spawn_blocking(move || {
            let mut out = PartWriter { part: Vec::with_capacity(PART), parts: parts_tx };
            serde_json::to_writer(&mut out, &*run).map_err(|e| e.to_string())?;
            out.finish().map_err(|e| e.to_string())
        });
        let (mut part, mut len) = (0i32, 0i64);
        while let Some(bytes) = parts.recv().await {
            tx.execute("INSERT INTO run_parts (run_seq, part, bytes) VALUES ($1, $2, $3)", &[&seq, &part, &bytes]).await?;
            part += 1;
            len += bytes.len() as i64;
        }
        writer.await.map_err(|_| StorageError::Gone)?.map_err(StorageError::Corrupt)?;
        tx.execute("UPDATE runs SET body_len = $2 WHERE seq = $1", &[&seq, &len]).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// A stored run's JSON, parsed.
    async fn whole_run(&self, seq: Option<i64>) -> Result<Option<Value>, StorageError> {
        let Some(seq) = seq else { return Ok(None) };
        let rows = self.pool.get().await?.query("SELECT bytes FROM run_parts WHERE run_seq = $1 ORDER BY part", &[&seq]).await?;
        let mut json = Vec::with_capacity(rows.iter().map(|r| r.get::<_, &[u8]>(0).len()).sum());
        for r in &rows {
            json.extend_from_slice(r.get::<_, &[u8]>(0));
        }
        serde_json::from_slice(&json).map(Some).map_err(|e| StorageError::Corrupt(format!("run {seq}: {e}")))
    }

    pub async fn run_of_sandbox(&self, team_id: &str, session_id: &str) -> Result<Option<Value>, StorageError> {
        let seq = self.pool.get().await?.query_opt("SELECT seq FROM runs WHERE team_id = $1 AND session_id = $2", &[&team_id, &session_id]).await?.map(|r| r.get(0));
        self.whole_run(seq).await
    }

    pub async fn run(&self, team_id: &str, run_id: &str) -> Result<Option<Value>, StorageError> {
        let seq = self.run_row(team_id, run_id).await?;
        self.whole_run(seq).await
    }

    pub async fn runs(&self, team_id: &str, filter: RunFilter, page: RunPage) -> Result<Option<(Vec<RunSummary>, bool)>, StorageError> {
        let c = self.pool.get().await?;
        // The cursor is the position of the run the last page ended with.
        let cursor: Option<(String, String)> = match &page.starting_after {
            Some(id) => c.query_opt("SELECT created_at, id FROM runs WHERE team_id = $1 AND id = $2", &[&team_id, id]).await?.map(|r| (r.get(0), r.get(1))),
            None => None,
        };
        if page.starting_after.is_some() && cursor.is_none() {
            return Ok(None);
        }
        let (c_at, c_id) = cursor.unzip();
        let limit = page.limit.max(1);
        let fetch = (limit as i64).saturating_add(1);
        let statement = c
            .prepare_cached(
                "SELECT id, session_id, task_id, group_id, agent_id, agent_version, twins, verdict, created_at, score, criteria FROM runs
                 WHERE team_id = $1 AND ($2::TEXT IS NULL OR group_id = $2) AND ($3::TEXT IS NULL OR task_id = $3)
                   AND ($4::TEXT IS NULL OR verdict = $4 OR ($4 = 'ungraded' AND verdict IS NULL))
                   AND ($5::TEXT IS NULL OR created_at < $5 OR (created_at = $5 AND id > $6::TEXT))
                   AND ($8::TEXT IS NULL OR agent_version = $8)
                 ORDER BY created_at DESC, id LIMIT $7",
            )
            .await?;
        let rows = c.query(&statement, &[&team_id, &filter.group_id, &filter.task_id, &filter.verdict, &c_at, &c_id, &fetch, &filter.agent_version]).await?;
        let mut runs: Vec<RunSummary> = rows
            .iter()
            .map(|r| RunSummary {
                id: r.get(0),
                session_id: r.get(1),
                task_id: r.get(2),
                group_id: r.get(3),
                agent_id: r.get(4),
                agent_version: r.get(5),
                twins: serde_json::from_str(r.get(6)).unwrap_or_default(),
                verdict: r.get(7),
                created_at: r.get(8),
                score: r.get::<_, Option<i32>>(9).map(|s| s as u32),
                criteria: CriterionOutcome::parse(r.get(10)),
            })
            .collect();
        let has_more = runs.len() > limit;
        runs.truncate(limit);
        Ok(Some((runs, has_more)))
    }

    pub async fn run_row(&self, team_id: &str, run_id: &str) -> Result<Option<i64>, StorageError> {
        Ok(self.pool.get().await?.query_opt("SELECT seq FROM runs WHERE team_id = $1 AND id = $2", &[&team_id, &run_id]).await?.map(|r| r.get(0)))
    }

    /// One query for the part holding `offset`, from a stream's own thread (never an async
    /// worker's: it blocks on the pool's runtime).
    pub fn read_run(&self, row: i64, offset: usize, buf: &mut [u8]) -> Result<usize, StorageError> {
        let part = (offset / PART) as i32;
        let from = (offset % PART) as i32 + 1; // SQL counts from 1
        let want = buf.len().min(PART) as i32;
        let bytes: Option<Vec<u8>> = self.runtime.block_on(async {
            let c = self.pool.get().await?;
            let row = c.query_opt("SELECT substring(bytes FROM $3 FOR $4) FROM run_parts WHERE run_seq = $1 AND part = $2", &[&row, &part, &from, &want]).await?;
            Ok::<_, StorageError>(row.map(|r| r.get(0)))
        })?;
        let bytes = bytes.unwrap_or_default();
        buf[..bytes.len()].copy_from_slice(&bytes);
        Ok(bytes.len())
    }
}

/// The channel on which a change to the keys is announced, in the transaction that makes it.
const KEYS_CHANNEL: &str = "pome_keys";

/// Listen for key changes on a connection of its own and call `reload` at each (and at every
/// reconnection, which may have missed some), until `reload` says the store is gone.
pub(crate) async fn follow_key_changes<F, R>(url: String, reload: F)
where
    F: Fn() -> Option<R>,
    R: std::future::Future<Output = Result<(), StorageError>>,
{
    use futures_util::StreamExt as _;
    loop {
        let connected = connect_one(&url).await;
        if let Ok((client, mut connection)) = connected {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            // The connection is driven by reading its messages; LISTEN's answer needs it.
            let statement = format!("LISTEN {KEYS_CHANNEL}");
            let listen = client.batch_execute(&statement);
            tokio::pin!(listen);
            let listening = loop {
                tokio::select! {
                    r = &mut listen => break r.is_ok(),
                    m = messages.next() => if !matches!(m, Some(Ok(_))) { break false },
                }
            };
            if listening {
                let Some(reload_now) = reload() else { return };
                if let Err(e) = reload_now.await {
                    tracing::warn!(error = %e, "reloading the API keys failed; tried again at the next change");
                }
                while let Some(Ok(message)) = messages.next().await {
                    if let tokio_postgres::AsyncMessage::Notification(_) = message {
                        let Some(reload_now) = reload() else { return };
                        if let Err(e) = reload_now.await {
                            tracing::warn!(error = %e, "reloading the API keys failed; tried again at the next change");
                        }
                    }
                }
            }
        }
        if reload().is_none() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// Cuts what is written into parts of exactly [`PART`] bytes (the last may be shorter) and
/// hands each on as it fills.
struct PartWriter {
    part: Vec<u8>,
    parts: tokio::sync::mpsc::Sender<Vec<u8>>,
}

impl PartWriter {
    fn send(&mut self) -> std::io::Result<()> {
        let full = std::mem::replace(&mut self.part, Vec::with_capacity(PART));
        self.parts.blocking_send(full).map_err(|_| std::io::Error::other("the run's insert stopped"))
    }

    fn finish(mut self) -> std::io::Result<()> {
        if !self.part.is_empty() { self.send() } else { Ok(()) }
    }
}

impl std::io::Write for PartWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len().min(PART - self.part.len());
        self.part.extend_from_slice(&buf[..n]);
        if self.part.len() == PART {
            self.send()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
