//! Embedded storage (SQLite): teams, hashed API keys, named seeds, tasks and finalized runs. Open
//! sandboxes live in memory (their twins are running stores); what must outlive the process
//! is written here, in a transaction, before the request that produced it is answered.

use std::path::Path;
use std::sync::{Arc, Mutex};

use pome_runtime::limits::MAX_LIVE_KEYS_PER_TEAM;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    #[error("the storage thread stopped")]
    Gone,
    /// A key is its team's forever: registering it for another team is refused.
    #[error("this API key already belongs to another team")]
    KeyTaken,
    #[error("your team has {0} live API keys, the most it may hold; revoke one first")]
    TooManyKeys(usize),
}

#[derive(Clone)]
pub struct Storage {
    conn: Arc<Mutex<Connection>>,
    /// Every live key, by hash: loaded at open and changed only after the database has
    /// committed a change (under this lock), so it is the database's truth. Every request
    /// authenticates here, in memory: a wrong key costs a hash and a map lookup, never the
    /// storage lock, and a revoked key is gone from it before its revocation is answered
    /// (there is no cache to fill, so nothing can bring it back). Bounded by
    /// `MAX_LIVE_KEYS_PER_TEAM` per team.
    keys: Arc<std::sync::RwLock<std::collections::HashMap<String, LiveKey>>>,
    /// Counts revocations, so what a key holds open (a live tape stream) ends with the key.
    revocations: Arc<tokio::sync::watch::Sender<u64>>,
    /// Whole runs loaded into memory at once (`--whole-runs`): reports, MCP `get_run`, a
    /// repeated finalize.
    whole_runs: Arc<tokio::sync::Semaphore>,
}

/// A live key as requests see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveKey {
    pub team: String,
    pub id: String,
}

/// Which runs a listing wants (every field optional).
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub group_id: Option<String>,
    pub task_id: Option<String>,
    /// `pass`, `fail`, `incomplete`, or `ungraded` (no task).
    pub verdict: Option<String>,
}

/// One page of a run listing.
#[derive(Debug, Clone)]
pub struct RunPage {
    pub limit: usize,
    /// The id of the last run of the previous page.
    pub starting_after: Option<String>,
}

impl Default for RunPage {
    fn default() -> RunPage {
        RunPage { limit: 1 << 40, starting_after: None }
    }
}

/// A run as listed (without its tapes and states).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunSummary {
    pub id: String,
    pub session_id: String,
    pub task_id: Option<String>,
    pub group_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_version: Option<String>,
    pub twins: Vec<String>,
    pub verdict: Option<String>,
    pub created_at: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS teams (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY,
    team_id TEXT NOT NULL REFERENCES teams(id),
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS seeds (
    team_id TEXT NOT NULL,
    name TEXT NOT NULL,
    twin TEXT NOT NULL,
    seed TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (team_id, name)
);
CREATE TABLE IF NOT EXISTS tasks (
    team_id TEXT NOT NULL,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (team_id, id)
);
-- Every version a task has had, by content hash, so a sandbox is graded by the task it
-- booted from even after the task is edited.
CREATE TABLE IF NOT EXISTS task_versions (
    team_id TEXT NOT NULL,
    id TEXT NOT NULL,
    version TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (team_id, id, version)
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    team_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    task_id TEXT,
    group_id TEXT,
    agent_id TEXT,
    agent_version TEXT,
    twins TEXT NOT NULL,
    verdict TEXT,
    created_at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_team ON runs (team_id, created_at);
";

impl Storage {
    /// Open (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Storage, StorageError> {
        let conn = Connection::open(path)?;
        Self::setup(conn)
    }

    pub fn in_memory() -> Result<Storage, StorageError> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(conn: Connection) -> Result<Storage, StorageError> {
        // WAL lets readers proceed during a write; FULL sync means an answered finalize
        // survives a crash right after it.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCHEMA)?;
        migrate(&conn)?;
        let keys = {
            let mut st = conn.prepare("SELECT key_hash, team_id, id FROM api_keys WHERE revoked_at IS NULL")?;
            let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, LiveKey { team: r.get(1)?, id: r.get(2)? })))?;
            rows.collect::<Result<std::collections::HashMap<_, _>, _>>()?
        };
        Ok(Storage {
            conn: Arc::new(Mutex::new(conn)),
            keys: Arc::new(std::sync::RwLock::new(keys)),
            revocations: Arc::new(tokio::sync::watch::Sender::new(0)),
            whole_runs: Arc::new(tokio::sync::Semaphore::new(crate::limits::WHOLE_RUNS)),
        })
    }

    /// Load whole runs through `gate` (the server's `--whole-runs`).
    pub fn with_whole_runs(mut self, gate: Arc<tokio::sync::Semaphore>) -> Storage {
        self.whole_runs = gate;
        self
    }

    /// Run `f` on the connection off the async runtime.
    async fn with<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<R, StorageError> + Send + 'static,
    ) -> Result<R, StorageError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || f(&mut conn.lock().unwrap()))
            .await
            .map_err(|_| StorageError::Gone)?
    }

    /// The default team's id, creating the team on first start.
    pub async fn ensure_default_team(&self) -> Result<(String, bool), StorageError> {
        self.with(|c| {
            let existing: Option<String> =
                c.query_row("SELECT id FROM teams WHERE name = 'default'", [], |r| r.get(0)).optional()?;
            if let Some(id) = existing {
                return Ok((id, false));
            }
            let id = crate::auth::new_id("team");
            c.execute("INSERT INTO teams (id, name, created_at) VALUES (?1, 'default', ?2)", params![id, now()])?;
            Ok((id, true))
        })
        .await
    }

    pub async fn create_team(&self, name: &str) -> Result<String, StorageError> {
        let name = name.to_string();
        self.with(move |c| {
            let id = crate::auth::new_id("team");
            c.execute("INSERT INTO teams (id, name, created_at) VALUES (?1, ?2, ?3)", params![id, name, now()])?;
            Ok(id)
        })
        .await
    }

    pub async fn team_has_keys(&self, team_id: &str) -> Result<bool, StorageError> {
        let team_id = team_id.to_string();
        self.with(move |c| {
            let n: i64 = c.query_row("SELECT COUNT(*) FROM api_keys WHERE team_id = ?1", [team_id], |r| r.get(0))?;
            Ok(n > 0)
        })
        .await
    }

    /// Register `key` (only its hash and a short prefix are kept) for `team_id`; returns its
    /// id. A key already registered for the same team is fine; for another team it is
    /// refused, never moved.
    pub async fn add_api_key(&self, team_id: &str, key: &str) -> Result<String, StorageError> {
        let (team_id, hash) = (team_id.to_string(), crate::auth::hash_key(key));
        let prefix: String = key.chars().take(12).collect();
        let keys = self.keys.clone();
        self.with(move |c| {
            let existing: Option<(String, Option<String>, Option<String>)> = c
                .query_row("SELECT team_id, id, revoked_at FROM api_keys WHERE key_hash = ?1", [&hash], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            // A revoked key stays revoked: registering it again answers its id, and it does
            // not come back to life.
            let (id, live) = match existing {
                Some((owner, _, _)) if owner != team_id => return Err(StorageError::KeyTaken),
                Some((_, Some(id), revoked)) => (id, revoked.is_none()),
                Some((_, None, revoked)) => {
                    let id = crate::auth::new_id("key");
                    c.execute("UPDATE api_keys SET id = ?1, prefix = ?2 WHERE key_hash = ?3", params![id, prefix, hash])?;
                    (id, revoked.is_none())
                }
                None => {
                    let n: i64 = c.query_row("SELECT COUNT(*) FROM api_keys WHERE team_id = ?1 AND revoked_at IS NULL", [&team_id], |r| r.get(0))?;
                    if n as usize >= MAX_LIVE_KEYS_PER_TEAM {
                        return Err(StorageError::TooManyKeys(MAX_LIVE_KEYS_PER_TEAM));
                    }
                    let id = crate::auth::new_id("key");
                    c.execute(
                        "INSERT INTO api_keys (key_hash, team_id, created_at, id, prefix) VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![hash, team_id, now(), id, prefix],
                    )?;
                    (id, true)
                }
            };
            if live {
                keys.write().unwrap().insert(hash, LiveKey { team: team_id, id: id.clone() });
            }
            Ok(id)
        })
        .await
    }

    /// The team's keys (never the keys themselves): id, prefix, created, revoked.
    pub async fn api_keys(&self, team_id: &str) -> Result<Vec<KeyInfo>, StorageError> {
        let t = team_id.to_string();
        self.with(move |c| {
            let mut st = c.prepare("SELECT id, prefix, created_at, revoked_at FROM api_keys WHERE team_id = ?1 ORDER BY created_at, id")?;
            let rows = st.query_map([t], |r| Ok(KeyInfo { id: r.get(0)?, prefix: r.get(1)?, created_at: r.get(2)?, revoked_at: r.get(3)? }))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// Revoke one of the team's keys by id; false when the team has no such live key. When
    /// this returns, no request with the key authenticates any more.
    pub async fn revoke_api_key(&self, team_id: &str, key_id: &str) -> Result<bool, StorageError> {
        let (t, k) = (team_id.to_string(), key_id.to_string());
        let keys = self.keys.clone();
        let revoked = self
            .with(move |c| {
                let hash: Option<String> =
                    c.query_row("SELECT key_hash FROM api_keys WHERE team_id = ?1 AND id = ?2 AND revoked_at IS NULL", params![t, k], |r| r.get(0)).optional()?;
                let Some(hash) = hash else { return Ok(false) };
                c.execute("UPDATE api_keys SET revoked_at = ?1 WHERE key_hash = ?2", params![now(), hash])?;
                // Committed (autocommit) before the key leaves memory: a failed write leaves
                // it live in both.
                keys.write().unwrap().remove(&hash);
                Ok(true)
            })
            .await?;
        if revoked {
            self.revocations.send_modify(|n| *n += 1);
        }
        Ok(revoked)
    }

    /// The live key `key`, with its team and id. Lookup is by hash, in memory, so no key is
    /// ever compared in clear and a wrong guess costs no database work.
    pub fn live_key(&self, key: &str) -> Option<LiveKey> {
        self.live_key_by_hash(&crate::auth::hash_key(key))
    }

    /// The live key whose hash is `hash`.
    pub fn live_key_by_hash(&self, hash: &str) -> Option<LiveKey> {
        self.keys.read().unwrap().get(hash).cloned()
    }

    /// Changes on every revocation.
    pub fn revocations(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revocations.subscribe()
    }

    /// The id of the key `key` (when it is live).
    pub async fn key_id(&self, key: &str) -> Result<Option<String>, StorageError> {
        Ok(self.live_key(key).map(|k| k.id))
    }

    /// The team a key belongs to (when it is live).
    pub async fn team_for_key(&self, key: &str) -> Result<Option<String>, StorageError> {
        Ok(self.live_key(key).map(|k| k.team))
    }

    pub async fn put_seed(&self, team_id: &str, name: &str, twin: &str, seed: &str) -> Result<(), StorageError> {
        let (t, n, w, s) = (team_id.to_string(), name.to_string(), twin.to_string(), seed.to_string());
        self.with(move |c| {
            c.execute(
                "INSERT INTO seeds (team_id, name, twin, seed, created_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(team_id, name) DO UPDATE SET twin = excluded.twin, seed = excluded.seed",
                params![t, n, w, s, now()],
            )?;
            Ok(())
        })
        .await
    }

    /// Bytes of the named seeds a team stores, leaving out the one named `except` (a put
    /// replaces it).
    pub async fn seed_bytes(&self, team_id: &str, except: &str) -> Result<usize, StorageError> {
        let (t, n) = (team_id.to_string(), except.to_string());
        self.with(move |c| Ok(c.query_row("SELECT COALESCE(SUM(LENGTH(CAST(seed AS BLOB))), 0) FROM seeds WHERE team_id = ?1 AND name != ?2", [t, n], |r| r.get::<_, i64>(0))?.max(0) as usize))
            .await
    }

    /// Named seeds of a team: (name, twin, seed JSON).
    pub async fn seeds(&self, team_id: &str) -> Result<Vec<(String, String, String)>, StorageError> {
        let t = team_id.to_string();
        self.with(move |c| {
            let mut st = c.prepare("SELECT name, twin, seed FROM seeds WHERE team_id = ?1 ORDER BY name")?;
            let rows = st.query_map([t], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    pub async fn seed(&self, team_id: &str, name: &str) -> Result<Option<(String, String)>, StorageError> {
        let (t, n) = (team_id.to_string(), name.to_string());
        self.with(move |c| {
            Ok(c.query_row("SELECT twin, seed FROM seeds WHERE team_id = ?1 AND name = ?2", [t, n], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?)
        })
        .await
    }

    /// Store (or replace) a task: its markdown and sidecar seed, as JSON. The body is kept
    /// as a version too; returns that version (a hash of the body).
    pub async fn put_task(&self, team_id: &str, id: &str, body: &str) -> Result<String, StorageError> {
        let (t, i, b) = (team_id.to_string(), id.to_string(), body.to_string());
        let version = task_version(body);
        let v = version.clone();
        self.with(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO tasks (team_id, id, body, created_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(team_id, id) DO UPDATE SET body = excluded.body",
                params![t, i, b, now()],
            )?;
            tx.execute(
                "INSERT OR IGNORE INTO task_versions (team_id, id, version, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![t, i, v, b, now()],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await?;
        Ok(version)
    }

    /// One version of a task, as it was stored.
    pub async fn task_version(&self, team_id: &str, id: &str, version: &str) -> Result<Option<String>, StorageError> {
        let (t, i, v) = (team_id.to_string(), id.to_string(), version.to_string());
        self.with(move |c| {
            Ok(c.query_row("SELECT body FROM task_versions WHERE team_id = ?1 AND id = ?2 AND version = ?3", [t, i, v], |r| r.get(0)).optional()?)
        })
        .await
    }

    pub async fn task(&self, team_id: &str, id: &str) -> Result<Option<String>, StorageError> {
        let (t, i) = (team_id.to_string(), id.to_string());
        self.with(move |c| Ok(c.query_row("SELECT body FROM tasks WHERE team_id = ?1 AND id = ?2", [t, i], |r| r.get(0)).optional()?)).await
    }

    /// A team's tasks: (id, body), by id.
    pub async fn tasks(&self, team_id: &str) -> Result<Vec<(String, String)>, StorageError> {
        let t = team_id.to_string();
        self.with(move |c| {
            let mut st = c.prepare("SELECT id, body FROM tasks WHERE team_id = ?1 ORDER BY id")?;
            let rows = st.query_map([t], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// Persist a finalized run in one transaction, unless its sandbox has a run already: a
    /// sandbox has one run (the `runs_one_per_sandbox` index), so a second finalize that
    /// raced the first, or ran again after a crash, stores nothing. True when this run was
    /// stored; otherwise [`Storage::run_of_sandbox`] reads the one that was.
    pub async fn insert_run(&self, team_id: &str, run: Arc<pome_grade::run::Run>) -> Result<bool, StorageError> {
        let team_id = team_id.to_string();
        self.with(move |c| {
            // Written once, as the JSON the API serves, straight into its row: the text of a
            // run is several times the size of its tapes (every control byte of a body is six
            // characters), and must not be built in memory. Measured first, then written into
            // a row of that size through SQLite's incremental I/O.
            let len = json_len(&*run)?;
            let twins = serde_json::to_string(&run.twins).unwrap_or_else(|_| "[]".into());
            let tx = c.transaction()?;
            let stored = tx.execute(
                "INSERT INTO runs (id, team_id, session_id, task_id, group_id, agent_id, agent_version, twins, verdict, created_at, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, zeroblob(?11)) ON CONFLICT (session_id) DO NOTHING",
                params![run.id, team_id, run.session_id, run.task_id, run.group_id, run.agent_id, run.agent_version, twins, run.verdict, run.finalized_at, len as i64],
            )?;
            if stored == 1 {
                let blob = tx.blob_open(rusqlite::MAIN_DB, "runs", "body", tx.last_insert_rowid(), false)?;
                let mut out = std::io::BufWriter::with_capacity(1 << 20, blob);
                serde_json::to_writer(&mut out, &*run).map_err(|e| StorageError::Corrupt(e.to_string()))?;
                std::io::Write::flush(&mut out).map_err(|e| StorageError::Corrupt(e.to_string()))?;
            }
            tx.commit()?;
            Ok(stored == 1)
        })
        .await
    }

    /// The run of the team's sandbox `session_id`, whole, if it was finalized.
    pub async fn run_of_sandbox(&self, team_id: &str, session_id: &str) -> Result<Option<Value>, StorageError> {
        let _permit = self.whole_runs.acquire().await.map_err(|_| StorageError::Gone)?;
        let (t, s) = (team_id.to_string(), session_id.to_string());
        self.with(move |c| c.query_row("SELECT body FROM runs WHERE team_id = ?1 AND session_id = ?2", [t, s], stored_json).optional()?.transpose()).await
    }

    /// A team's runs, newest first, optionally filtered by trial group, task or verdict; one
    /// page of at most `page.limit`, after the run `page.starting_after` when set. The second
    /// value says whether more runs follow the page; `None` when `starting_after` is not one of
    /// the team's runs. Pages walk the `runs_by_team` index, so a page costs about the same
    /// with ten runs stored or ten thousand.
    pub async fn runs(&self, team_id: &str, filter: RunFilter, page: RunPage) -> Result<Option<(Vec<RunSummary>, bool)>, StorageError> {
        let t = team_id.to_string();
        self.with(move |c| {
            // The cursor is the position of the run the last page ended with.
            let cursor: Option<(String, String)> = match &page.starting_after {
                Some(id) => c
                    .query_row("SELECT created_at, id FROM runs WHERE team_id = ?1 AND id = ?2", params![t, id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?,
                None => None,
            };
            if page.starting_after.is_some() && cursor.is_none() {
                return Ok(None);
            }
            let (c_at, c_id) = cursor.unzip();
            let mut st = c.prepare_cached(
                "SELECT id, session_id, task_id, group_id, agent_id, agent_version, twins, verdict, created_at FROM runs
                 WHERE team_id = ?1 AND (?2 IS NULL OR group_id = ?2) AND (?3 IS NULL OR task_id = ?3)
                   AND (?4 IS NULL OR verdict = ?4 OR (?4 = 'ungraded' AND verdict IS NULL))
                   AND (?5 IS NULL OR created_at < ?5 OR (created_at = ?5 AND id > ?6))
                 ORDER BY created_at DESC, id LIMIT ?7",
            )?;
            let limit = page.limit.max(1);
            let rows = st.query_map(params![t, filter.group_id, filter.task_id, filter.verdict, c_at, c_id, (limit + 1) as i64], |r| {
                let twins: String = r.get(6)?;
                Ok(RunSummary {
                    id: r.get(0)?,
                    session_id: r.get(1)?,
                    task_id: r.get(2)?,
                    group_id: r.get(3)?,
                    agent_id: r.get(4)?,
                    agent_version: r.get(5)?,
                    twins: serde_json::from_str(&twins).unwrap_or_default(),
                    verdict: r.get(7)?,
                    created_at: r.get(8)?,
                })
            })?;
            let mut runs = rows.collect::<Result<Vec<_>, _>>()?;
            let has_more = runs.len() > limit;
            runs.truncate(limit);
            Ok(Some((runs, has_more)))
        })
        .await
    }

    /// Where one of the team's runs is stored, for reading it a piece at a time
    /// ([`Storage::read_run`]); `None` when it is not this team's.
    pub async fn run_row(&self, team_id: &str, run_id: &str) -> Result<Option<i64>, StorageError> {
        let (t, r) = (team_id.to_string(), run_id.to_string());
        self.with(move |c| Ok(c.query_row("SELECT rowid FROM runs WHERE team_id = ?1 AND id = ?2", [t, r], |row| row.get(0)).optional()?)).await
    }

    /// Bytes of run `row`'s stored JSON from `offset` into `buf`; 0 at its end. The row is
    /// read in place (SQLite's incremental I/O), never loaded whole, and the connection is
    /// held only for the one read, so a long run streams beside everything else. Blocking.
    pub fn read_run(&self, row: i64, offset: usize, buf: &mut [u8]) -> Result<usize, StorageError> {
        let conn = self.conn.lock().unwrap();
        let blob = conn.blob_open(rusqlite::MAIN_DB, "runs", "body", row, true)?;
        if offset >= blob.len() {
            return Ok(0);
        }
        Ok(blob.read_at(buf, offset)?)
    }

    /// One run, whole; `None` when it is not this team's. A run holds its tapes and worlds
    /// (hundreds of megabytes at the caps), so few are loaded at once (`--whole-runs`);
    /// `GET /v1/runs/:id` streams instead ([`Storage::read_run`]).
    pub async fn run(&self, team_id: &str, run_id: &str) -> Result<Option<Value>, StorageError> {
        let _permit = self.whole_runs.acquire().await.map_err(|_| StorageError::Gone)?;
        let (t, r) = (team_id.to_string(), run_id.to_string());
        self.with(move |c| c.query_row("SELECT body FROM runs WHERE team_id = ?1 AND id = ?2", [t, r], stored_json).optional()?.transpose()).await
    }
}

/// A run's stored JSON, parsed: text as older pomes stored it, or the bytes `insert_run`
/// writes in place.
fn stored_json(row: &rusqlite::Row) -> rusqlite::Result<Result<Value, StorageError>> {
    let bytes = match row.get_ref(0)? {
        rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => b,
        other => {
            return Ok(Err(StorageError::Corrupt(format!("a run stored as {:?}", other.data_type()))));
        }
    };
    Ok(serde_json::from_slice(bytes).map_err(|e| StorageError::Corrupt(e.to_string())))
}

/// The length of `value` as JSON, without writing it anywhere.
fn json_len(value: &impl serde::Serialize) -> Result<usize, StorageError> {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_err(|e| StorageError::Corrupt(e.to_string()))?;
    Ok(count.0)
}

/// Wall-clock now, RFC 3339 (control-plane timestamps; never reaches a twin).
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, session: &str, at: &str) -> pome_grade::run::Run {
        pome_grade::run::Run { id: id.into(), session_id: session.into(), twins: vec!["acme".into()], finalized_at: at.into(), ..Default::default() }
    }

    #[tokio::test]
    async fn a_sandbox_has_one_run_and_a_second_insert_keeps_the_first() {
        let db = Storage::in_memory().unwrap();
        let (team, _) = db.ensure_default_team().await.unwrap();
        assert!(db.insert_run(&team, Arc::new(run("run_a", "ses_1", "2026-01-01T00:00:00Z"))).await.unwrap());
        assert!(!db.insert_run(&team, Arc::new(run("run_b", "ses_1", "2026-01-01T00:00:01Z"))).await.unwrap(), "the sandbox has its run");
        assert_eq!(db.run_of_sandbox(&team, "ses_1").await.unwrap().unwrap()["id"], "run_a");
        assert!(db.run(&team, "run_b").await.unwrap().is_none());
        assert!(db.run_of_sandbox(&team, "ses_2").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_stored_run_reads_back_a_piece_at_a_time_as_the_json_it_was() {
        let db = Storage::in_memory().unwrap();
        let (team, _) = db.ensure_default_team().await.unwrap();
        // Control bytes are six characters each as JSON: the stored text is far larger than
        // the run, and is written and read without ever being held whole.
        let mut big = run("run_big", "ses_big", "2026-01-01T00:00:00Z");
        big.twins = vec!["\u{1}".repeat(300_000), "é\"\n".repeat(1000)];
        let expected = serde_json::to_vec(&big).unwrap();
        assert!(db.insert_run(&team, Arc::new(big)).await.unwrap());

        let row = db.run_row(&team, "run_big").await.unwrap().expect("the team's run is found");
        let (mut read, mut buf) = (Vec::new(), vec![0u8; 65_536]);
        loop {
            let n = db.read_run(row, read.len(), &mut buf).unwrap();
            if n == 0 {
                break;
            }
            read.extend_from_slice(&buf[..n]);
        }
        assert_eq!(read.len(), expected.len());
        assert!(read == expected, "the streamed bytes are the run's JSON");
        assert_eq!(db.run(&team, "run_big").await.unwrap().unwrap()["twins"][0].as_str().unwrap().len(), 300_000);
        assert!(db.run_row("another-team", "run_big").await.unwrap().is_none(), "another team's run is not found");
    }

    #[test]
    fn a_database_holding_two_runs_of_one_sandbox_keeps_the_oldest_when_opened() {
        let path = std::env::temp_dir().join(format!("pome-one-run-{}-{}.db", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
        {
            // A database as an older pome left it: no unique index, a sandbox finalized twice.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(SCHEMA).unwrap();
            for (id, session, at) in [("run_late", "ses_1", "2026-01-01T00:00:05Z"), ("run_first", "ses_1", "2026-01-01T00:00:01Z"), ("run_other", "ses_2", "2026-01-01T00:00:03Z")] {
                c.execute(
                    "INSERT INTO runs (id, team_id, session_id, twins, created_at, body) VALUES (?1, 'team', ?2, '[]', ?3, '{}')",
                    params![id, session, at],
                )
                .unwrap();
            }
        }
        Storage::open(&path).unwrap();
        let c = Connection::open(&path).unwrap();
        let ids: Vec<String> = c.prepare("SELECT id FROM runs ORDER BY id").unwrap().query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(ids, ["run_first", "run_other"]);
        let again = c.execute("INSERT INTO runs (id, team_id, session_id, twins, created_at, body) VALUES ('run_x', 'team', 'ses_2', '[]', 'now', '{}')", []);
        assert!(again.is_err(), "the index refuses a second run of a sandbox");
        drop(c);
        Storage::open(&path).expect("opens again with the index in place");
        let _ = std::fs::remove_file(&path);
    }

    #[tokio::test]
    async fn keys_resolve_to_their_team_and_runs_stay_with_it() {
        let db = Storage::in_memory().unwrap();
        let (team, created) = db.ensure_default_team().await.unwrap();
        assert!(created);
        assert_eq!(db.ensure_default_team().await.unwrap(), (team.clone(), false));
        db.add_api_key(&team, "pme_abc").await.unwrap();
        assert_eq!(db.team_for_key("pme_abc").await.unwrap(), Some(team.clone()));
        assert_eq!(db.team_for_key("pme_abd").await.unwrap(), None);

        let other = db.create_team("other").await.unwrap();
        assert!(matches!(db.add_api_key(&other, "pme_abc").await, Err(StorageError::KeyTaken)), "a key never moves to another team");
        assert_eq!(db.team_for_key("pme_abc").await.unwrap(), Some(team.clone()));
        let run = pome_grade::run::Run { id: "run_1".into(), session_id: "ses_1".into(), twins: vec!["acme".into()], finalized_at: now(), ..Default::default() };
        db.insert_run(&team, Arc::new(run.clone())).await.unwrap();
        assert_eq!(db.runs(&team, RunFilter::default(), RunPage::default()).await.unwrap().unwrap().0.len(), 1);
        assert!(db.runs(&other, RunFilter::default(), RunPage::default()).await.unwrap().unwrap().0.is_empty());
        assert!(db.run(&other, "run_1").await.unwrap().is_none());
        assert_eq!(db.run(&team, "run_1").await.unwrap().unwrap()["session_id"], "ses_1");

        let v1 = db.put_task(&team, "triage", "{\"source\": \"# A\"}").await.unwrap();
        db.put_task(&team, "triage", "{\"source\": \"# B\"}").await.unwrap();
        assert_eq!(db.task_version(&team, "triage", &v1).await.unwrap().as_deref(), Some("{\"source\": \"# A\"}"), "every version is kept");
        assert_eq!(db.task(&team, "triage").await.unwrap().as_deref(), Some("{\"source\": \"# B\"}"), "a task is replaced, not duplicated");
        assert_eq!(db.tasks(&team).await.unwrap().len(), 1);
        assert!(db.task(&other, "triage").await.unwrap().is_none(), "tasks stay with their team");
        assert!(db.seeds(&team).await.unwrap().is_empty(), "tasks are not seeds");
    }

    #[tokio::test]
    async fn a_key_an_older_pome_stored_without_an_id_gets_one_and_can_be_revoked() {
        let path = std::env::temp_dir().join(format!("pome-storage-old-keys-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE teams (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL);
                 CREATE TABLE api_keys (key_hash TEXT PRIMARY KEY, team_id TEXT NOT NULL REFERENCES teams(id), created_at TEXT NOT NULL);
                 INSERT INTO teams VALUES ('team_old', 'default', '2026-01-01T00:00:00Z');",
            )
            .unwrap();
            old.execute("INSERT INTO api_keys VALUES (?1, 'team_old', '2026-01-01T00:00:00Z')", [crate::auth::hash_key("pme_old_key_0123456789")]).unwrap();
        }
        let db = Storage::open(&path).unwrap();
        let live = db.live_key("pme_old_key_0123456789").expect("the old key works");
        assert_eq!(live.team, "team_old");
        assert!(live.id.starts_with("key_"), "it has an id to be revoked by");
        assert!(db.revoke_api_key("team_old", &live.id).await.unwrap());
        assert_eq!(db.live_key("pme_old_key_0123456789"), None, "revoked at once");
        assert_eq!(Storage::open(&path).unwrap().live_key("pme_old_key_0123456789"), None, "and after a restart");
        let _ = std::fs::remove_file(&path);
    }

    #[tokio::test]
    async fn a_team_holds_at_most_its_live_key_allowance() {
        let db = Storage::in_memory().unwrap();
        let (team, _) = db.ensure_default_team().await.unwrap();
        let mut ids = Vec::new();
        for _ in 0..MAX_LIVE_KEYS_PER_TEAM {
            ids.push(db.add_api_key(&team, &crate::auth::new_api_key()).await.unwrap());
        }
        assert!(matches!(db.add_api_key(&team, &crate::auth::new_api_key()).await, Err(StorageError::TooManyKeys(_))));
        assert!(db.revoke_api_key(&team, &ids[0]).await.unwrap());
        db.add_api_key(&team, &crate::auth::new_api_key()).await.expect("a revoked key frees its place");
    }
}

/// One API key as the team may see it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KeyInfo {
    pub id: Option<String>,
    /// The first characters, to recognise a key by.
    pub prefix: Option<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// Bring a database written by an older pome up to this schema.
fn migrate(conn: &Connection) -> Result<(), StorageError> {
    one_run_per_sandbox(conn)?;
    let columns: Vec<String> = conn.prepare("PRAGMA table_info(api_keys)")?.query_map([], |r| r.get(1))?.collect::<Result<_, _>>()?;
    for (name, ty) in [("id", "TEXT"), ("prefix", "TEXT"), ("revoked_at", "TEXT")] {
        if !columns.iter().any(|c| c == name) {
            conn.execute_batch(&format!("ALTER TABLE api_keys ADD COLUMN {name} {ty}"))?;
        }
    }
    // Keys an older pome stored had no id, so they could not be named to revoke them: each
    // gets one (their prefix is unknown: only their hash was kept).
    let unnamed: Vec<String> = conn.prepare("SELECT key_hash FROM api_keys WHERE id IS NULL")?.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    for hash in unnamed {
        conn.execute("UPDATE api_keys SET id = ?1 WHERE key_hash = ?2", params![crate::auth::new_id("key"), hash])?;
    }
    Ok(())
}

/// One run per sandbox (issue #32). A database written before this rule may hold two runs of
/// one sandbox (two finalizes that raced): the oldest is the one its finalize answered first,
/// so it stays and the later ones go, then a unique index keeps it so.
fn one_run_per_sandbox(conn: &Connection) -> Result<(), StorageError> {
    let indexed: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'runs_one_per_sandbox')", [], |r| r.get(0))?;
    if indexed {
        return Ok(());
    }
    // With one MIN() aggregate, SQLite takes the bare `rowid` from the row holding the minimum.
    conn.execute_batch(
        "BEGIN;
         DELETE FROM runs WHERE rowid NOT IN (SELECT keep FROM (SELECT rowid AS keep, MIN(created_at) FROM runs GROUP BY session_id));
         CREATE UNIQUE INDEX runs_one_per_sandbox ON runs (session_id);
         COMMIT;",
    )?;
    Ok(())
}

/// A task version: the first 16 hex digits of the SHA-256 of its stored body.
pub fn task_version(body: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(body.as_bytes()))[..16].to_string()
}
