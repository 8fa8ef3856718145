//! The embedded store: one SQLite file on this machine (`pome.db`), the default.

use std::path::Path;
use std::sync::{Arc, Mutex};

use pome_runtime::limits::MAX_LIVE_KEYS_PER_TEAM;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::{CriterionOutcome, KeyInfo, LiveKey, RunFilter, RunPage, RunSummary, StorageError, now};

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
    body TEXT NOT NULL,
    -- The score and each criterion's outcome (`CriterionOutcome`s as JSON), for listings.
    score INTEGER,
    criteria TEXT
);
CREATE INDEX IF NOT EXISTS runs_by_team ON runs (team_id, created_at);
";

pub(super) struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteStore {
    pub fn open(path: &Path) -> Result<SqliteStore, StorageError> {
        Self::setup(Connection::open(path)?)
    }

    pub fn in_memory() -> Result<SqliteStore, StorageError> {
        Self::setup(Connection::open_in_memory()?)
    }

    fn setup(conn: Connection) -> Result<SqliteStore, StorageError> {
        // WAL lets readers proceed during a write; FULL sync means an answered finalize
        // survives a crash right after it.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(SCHEMA)?;
        migrate(&conn)?;
        Ok(SqliteStore { conn: Arc::new(Mutex::new(conn)) })
    }

    /// Run `f` on the connection off the async runtime.
    async fn with<R: Send + 'static>(&self, f: impl FnOnce(&mut Connection) -> Result<R, StorageError> + Send + 'static) -> Result<R, StorageError> {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || f(&mut conn.lock().unwrap())).await.map_err(|_| StorageError::Gone)?
    }

    /// Every live key, by hash (read at open).
    pub fn live_keys(&self) -> Result<Vec<(String, LiveKey)>, StorageError> {
        let c = self.conn.lock().unwrap();
        let mut st = c.prepare("SELECT key_hash, team_id, id FROM api_keys WHERE revoked_at IS NULL")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, LiveKey { team: r.get(1)?, id: r.get(2)? })))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    pub async fn ensure_default_team(&self) -> Result<(String, bool), StorageError> {
        self.with(|c| {
            let existing: Option<String> = c.query_row("SELECT id FROM teams WHERE name = 'default'", [], |r| r.get(0)).optional()?;
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

    pub async fn add_api_key(&self, team_id: &str, hash: &str, prefix: &str) -> Result<(String, bool), StorageError> {
        let (team_id, hash, prefix) = (team_id.to_string(), hash.to_string(), prefix.to_string());
        self.with(move |c| {
            let existing: Option<(String, Option<String>, Option<String>)> = c
                .query_row("SELECT team_id, id, revoked_at FROM api_keys WHERE key_hash = ?1", [&hash], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?;
            Ok(match existing {
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
                    c.execute("INSERT INTO api_keys (key_hash, team_id, created_at, id, prefix) VALUES (?1, ?2, ?3, ?4, ?5)", params![hash, team_id, now(), id, prefix])?;
                    (id, true)
                }
            })
        })
        .await
    }

    pub async fn api_keys(&self, team_id: &str) -> Result<Vec<KeyInfo>, StorageError> {
        let t = team_id.to_string();
        self.with(move |c| {
            let mut st = c.prepare("SELECT id, prefix, created_at, revoked_at FROM api_keys WHERE team_id = ?1 ORDER BY created_at, id")?;
            let rows = st.query_map([t], |r| Ok(KeyInfo { id: r.get(0)?, prefix: r.get(1)?, created_at: r.get(2)?, revoked_at: r.get(3)? }))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    pub async fn revoke_api_key(&self, team_id: &str, key_id: &str) -> Result<Option<String>, StorageError> {
        let (t, k) = (team_id.to_string(), key_id.to_string());
        self.with(move |c| {
            let hash: Option<String> = c.query_row("SELECT key_hash FROM api_keys WHERE team_id = ?1 AND id = ?2 AND revoked_at IS NULL", params![t, k], |r| r.get(0)).optional()?;
            let Some(hash) = hash else { return Ok(None) };
            c.execute("UPDATE api_keys SET revoked_at = ?1 WHERE key_hash = ?2", params![now(), hash])?;
            Ok(Some(hash))
        })
        .await
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

    pub async fn seed_bytes(&self, team_id: &str, except: &str) -> Result<usize, StorageError> {
        let (t, n) = (team_id.to_string(), except.to_string());
        self.with(move |c| Ok(c.query_row("SELECT COALESCE(SUM(LENGTH(CAST(seed AS BLOB))), 0) FROM seeds WHERE team_id = ?1 AND name != ?2", [t, n], |r| r.get::<_, i64>(0))?.max(0) as usize))
            .await
    }

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
        self.with(move |c| Ok(c.query_row("SELECT twin, seed FROM seeds WHERE team_id = ?1 AND name = ?2", [t, n], |r| Ok((r.get(0)?, r.get(1)?))).optional()?)).await
    }

    pub async fn put_task(&self, team_id: &str, id: &str, body: &str, version: &str) -> Result<(), StorageError> {
        let (t, i, b, v) = (team_id.to_string(), id.to_string(), body.to_string(), version.to_string());
        self.with(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT INTO tasks (team_id, id, body, created_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(team_id, id) DO UPDATE SET body = excluded.body",
                params![t, i, b, now()],
            )?;
            tx.execute("INSERT OR IGNORE INTO task_versions (team_id, id, version, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)", params![t, i, v, b, now()])?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    pub async fn task_version(&self, team_id: &str, id: &str, version: &str) -> Result<Option<String>, StorageError> {
        let (t, i, v) = (team_id.to_string(), id.to_string(), version.to_string());
        self.with(move |c| Ok(c.query_row("SELECT body FROM task_versions WHERE team_id = ?1 AND id = ?2 AND version = ?3", [t, i, v], |r| r.get(0)).optional()?)).await
    }

    pub async fn task(&self, team_id: &str, id: &str) -> Result<Option<String>, StorageError> {
        let (t, i) = (team_id.to_string(), id.to_string());
        self.with(move |c| Ok(c.query_row("SELECT body FROM tasks WHERE team_id = ?1 AND id = ?2", [t, i], |r| r.get(0)).optional()?)).await
    }

    pub async fn tasks(&self, team_id: &str) -> Result<Vec<(String, String)>, StorageError> {
        let t = team_id.to_string();
        self.with(move |c| {
            let mut st = c.prepare("SELECT id, body FROM tasks WHERE team_id = ?1 ORDER BY id")?;
            let rows = st.query_map([t], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

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
                "INSERT INTO runs (id, team_id, session_id, task_id, group_id, agent_id, agent_version, twins, verdict, created_at, body, score, criteria)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, zeroblob(?11), ?12, ?13) ON CONFLICT (session_id) DO NOTHING",
                params![run.id, team_id, run.session_id, run.task_id, run.group_id, run.agent_id, run.agent_version, twins, run.verdict, run.finalized_at, len as i64, run.score, CriterionOutcome::of_run(&run)],
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

    pub async fn run_of_sandbox(&self, team_id: &str, session_id: &str) -> Result<Option<Value>, StorageError> {
        let (t, s) = (team_id.to_string(), session_id.to_string());
        self.with(move |c| c.query_row("SELECT body FROM runs WHERE team_id = ?1 AND session_id = ?2", [t, s], stored_json).optional()?.transpose()).await
    }

    pub async fn runs(&self, team_id: &str, filter: RunFilter, page: RunPage) -> Result<Option<(Vec<RunSummary>, bool)>, StorageError> {
        let t = team_id.to_string();
        self.with(move |c| {
            // The cursor is the position of the run the last page ended with.
            let cursor: Option<(String, String)> = match &page.starting_after {
                Some(id) => c.query_row("SELECT created_at, id FROM runs WHERE team_id = ?1 AND id = ?2", params![t, id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?,
                None => None,
            };
            if page.starting_after.is_some() && cursor.is_none() {
                return Ok(None);
            }
            let (c_at, c_id) = cursor.unzip();
            let mut st = c.prepare_cached(
                "SELECT id, session_id, task_id, group_id, agent_id, agent_version, twins, verdict, created_at, score, criteria FROM runs
                 WHERE team_id = ?1 AND (?2 IS NULL OR group_id = ?2) AND (?3 IS NULL OR task_id = ?3)
                   AND (?4 IS NULL OR verdict = ?4 OR (?4 = 'ungraded' AND verdict IS NULL))
                   AND (?5 IS NULL OR created_at < ?5 OR (created_at = ?5 AND id > ?6))
                   AND (?8 IS NULL OR agent_version = ?8)
                 ORDER BY created_at DESC, id LIMIT ?7",
            )?;
            let limit = page.limit.max(1);
            let rows = st.query_map(params![t, filter.group_id, filter.task_id, filter.verdict, c_at, c_id, (limit + 1) as i64, filter.agent_version], |r| {
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
                    score: r.get(9)?,
                    criteria: CriterionOutcome::parse(r.get(10)?),
                })
            })?;
            let mut runs = rows.collect::<Result<Vec<_>, _>>()?;
            let has_more = runs.len() > limit;
            runs.truncate(limit);
            Ok(Some((runs, has_more)))
        })
        .await
    }

    pub async fn run_row(&self, team_id: &str, run_id: &str) -> Result<Option<i64>, StorageError> {
        let (t, r) = (team_id.to_string(), run_id.to_string());
        self.with(move |c| Ok(c.query_row("SELECT rowid FROM runs WHERE team_id = ?1 AND id = ?2", [t, r], |row| row.get(0)).optional()?)).await
    }

    /// Read in place (SQLite's incremental I/O), never loaded whole, and the connection is
    /// held only for the one read, so a long run streams beside everything else.
    pub fn read_run(&self, row: i64, offset: usize, buf: &mut [u8]) -> Result<usize, StorageError> {
        let conn = self.conn.lock().unwrap();
        let blob = conn.blob_open(rusqlite::MAIN_DB, "runs", "body", row, true)?;
        if offset >= blob.len() {
            return Ok(0);
        }
        Ok(blob.read_at(buf, offset)?)
    }

    pub async fn run(&self, team_id: &str, run_id: &str) -> Result<Option<Value>, StorageError> {
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

/// Adds the columns of `table` an older pome's database lacks (SQLite has no
/// `ADD COLUMN IF NOT EXISTS`). Names and types are this file's constants, never input.
fn add_missing_columns(conn: &Connection, table: &str, wanted: &[(&str, &str)]) -> Result<(), StorageError> {
    let columns: Vec<String> = conn.prepare(&format!("PRAGMA table_info({table})"))?.query_map([], |r| r.get(1))?.collect::<Result<_, _>>()?;
    for (name, ty) in wanted {
        if !columns.iter().any(|c| c == name) {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {name} {ty}"))?;
        }
    }
    Ok(())
}

/// Bring a database written by an older pome up to this schema.
fn migrate(conn: &Connection) -> Result<(), StorageError> {
    one_run_per_sandbox(conn)?;
    // Runs stored before listings carried outcomes keep null there (a comparison then reads
    // such a run whole).
    add_missing_columns(conn, "runs", &[("score", "INTEGER"), ("criteria", "TEXT")])?;
    add_missing_columns(conn, "api_keys", &[("id", "TEXT"), ("prefix", "TEXT"), ("revoked_at", "TEXT")])?;
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


#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Storage;

    #[test]
    fn a_database_holding_two_runs_of_one_sandbox_keeps_the_oldest_when_opened() {
        let path = std::env::temp_dir().join(format!("pome-one-run-{}-{}.db", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
        {
            // A database as an older pome left it: no unique index, a sandbox finalized twice.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(SCHEMA).unwrap();
            for (id, session, at) in [("run_late", "ses_1", "2026-01-01T00:00:05Z"), ("run_first", "ses_1", "2026-01-01T00:00:01Z"), ("run_other", "ses_2", "2026-01-01T00:00:03Z")] {
                c.execute("INSERT INTO runs (id, team_id, session_id, twins, created_at, body) VALUES (?1, 'team', ?2, '[]', ?3, '{}')", params![id, session, at]).unwrap();
            }
        }
        SqliteStore::open(&path).unwrap();
        let c = Connection::open(&path).unwrap();
        let ids: Vec<String> = c.prepare("SELECT id FROM runs ORDER BY id").unwrap().query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(ids, ["run_first", "run_other"]);
        let again = c.execute("INSERT INTO runs (id, team_id, session_id, twins, created_at, body) VALUES ('run_x', 'team', 'ses_2', '[]', 'now', '{}')", []);
        assert!(again.is_err(), "the index refuses a second run of a sandbox");
        drop(c);
        SqliteStore::open(&path).expect("opens again with the index in place");
        let _ = std::fs::remove_file(&path);
    }

    #[tokio::test]
    async fn runs_an_older_pome_stored_list_with_no_outcomes_and_new_ones_with_theirs() {
        let path = std::env::temp_dir().join(format!("pome-storage-old-runs-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        {
            // The runs table before it carried scores and criteria outcomes.
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE runs (id TEXT PRIMARY KEY, team_id TEXT NOT NULL, session_id TEXT NOT NULL, task_id TEXT, group_id TEXT,
                     agent_id TEXT, agent_version TEXT, twins TEXT NOT NULL, verdict TEXT, created_at TEXT NOT NULL, body TEXT NOT NULL);
                 INSERT INTO runs VALUES ('run_old', 'team_a', 'ses_old', 'triage', NULL, NULL, 'v1', '[]', 'pass', '2026-01-01T00:00:00Z', '{}');",
            )
            .unwrap();
        }
        let db = Storage::open(&path).unwrap();
        let mut new = pome_grade::run::Run { id: "run_new".into(), session_id: "ses_new".into(), finalized_at: "2026-01-02T00:00:00Z".into(), ..Default::default() };
        (new.verdict, new.score, new.agent_version) = (Some("fail".into()), Some(0), Some("v1".into()));
        assert!(db.insert_run("team_a", std::sync::Arc::new(new)).await.unwrap());
        let v1 = crate::storage::RunFilter { agent_version: Some("v1".into()), ..Default::default() };
        let listed = db.runs("team_a", v1, crate::storage::RunPage::default()).await.unwrap().unwrap().0;
        assert_eq!(listed.iter().map(|r| (r.id.as_str(), r.score, r.criteria.clone())).collect::<Vec<_>>(), [("run_new", Some(0), Some(vec![])), ("run_old", None, None)]);
        let _ = std::fs::remove_file(&path);
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
}
