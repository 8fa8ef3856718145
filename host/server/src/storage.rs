//! Storage: teams, hashed API keys, named seeds, tasks and finalized runs. Open sandboxes live
//! in memory (their twins are running stores) and in the live store (`crate::live`); what must
//! outlive the process is written here, in a transaction, before the request that produced it
//! is answered.
//!
//! One interface, two implementations: SQLite in the data directory (`sqlite.rs`, the
//! default, one host) and PostgreSQL (`postgres.rs`, `--store postgres://…`, shared by every
//! host of a deployment). Both keep the same tables with the same meaning, and the tests below
//! run against both.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

pub(crate) mod postgres;
mod sqlite;
#[cfg(test)]
pub(crate) mod test_postgres;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("PostgreSQL: {0}")]
    Postgres(String),
    /// The shared database cannot be reached (it restarts, the network is down): callers
    /// answer 503 and the client tries again; nothing was written.
    #[error("the database cannot be reached: {0}")]
    Unavailable(String),
    /// What was sent cannot be stored or looked up in this store (PostgreSQL's text holds
    /// no NUL character): the request is refused, nothing was written.
    #[error("{0}")]
    Unstorable(String),
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
    backend: Arc<Backend>,
    /// Every live key, by hash: loaded at open and changed only after the database has
    /// committed a change (changes take `key_changes` in turn, so the map follows the
    /// database's order). Every request authenticates here, in memory: a wrong key costs a
    /// hash and a map lookup, never a database query, and a revoked key is gone from it
    /// before its revocation is answered (there is no cache to fill, so nothing can bring
    /// it back). Bounded by `MAX_LIVE_KEYS_PER_TEAM` per team.
    keys: Arc<std::sync::RwLock<std::collections::HashMap<String, LiveKey>>>,
    key_changes: Arc<tokio::sync::Mutex<()>>,
    /// Counts revocations, so what a key holds open (a live tape stream) ends with the key.
    revocations: Arc<tokio::sync::watch::Sender<u64>>,
    /// Whole runs loaded into memory at once (`--whole-runs`): reports, MCP `get_run`, a
    /// repeated finalize.
    whole_runs: Arc<tokio::sync::Semaphore>,
}

enum Backend {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

/// Call the same method on whichever store this is.
macro_rules! on_store {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match &*$self.backend {
            Backend::Sqlite(s) => s.$method($($arg),*).await,
            Backend::Postgres(p) => p.$method($($arg),*).await,
        }
    };
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
    /// The `agent_version` the run was recorded with (`pome run --agent-version`).
    pub agent_version: Option<String>,
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
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct RunSummary {
    /// `run_…`.
    pub id: String,
    /// The sandbox it was.
    pub session_id: String,
    pub task_id: Option<String>,
    pub group_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_version: Option<String>,
    pub twins: Vec<String>,
    /// `pass`, `fail`, `incomplete`; null when ungraded.
    pub verdict: Option<String>,
    /// The run's score; null when nothing was scored or no task graded it.
    pub score: Option<u32>,
    /// Each criterion's outcome, so a comparison of many runs (`pome compare`, the task
    /// page) reads them from the listing instead of loading every run whole. Null for runs
    /// stored by a pome older than this column.
    pub criteria: Option<Vec<CriterionOutcome>>,
    pub created_at: String,
}

/// One criterion's outcome as a run listing carries it: which criterion, and its status.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CriterionOutcome {
    pub index: usize,
    pub text: String,
    /// `passed`, `failed`, `skipped`, `unmatched` or `errored`.
    pub status: String,
}

impl CriterionOutcome {
    /// The outcomes of a graded run, as stored beside it (compact JSON).
    pub(crate) fn of_run(run: &pome_grade::run::Run) -> Option<String> {
        run.verdict.as_ref()?;
        let outcomes: Vec<CriterionOutcome> = run
            .criteria_results
            .iter()
            .map(|c| CriterionOutcome {
                index: c.index,
                text: c.text.clone(),
                status: c.status.as_str().to_string(),
            })
            .collect();
        serde_json::to_string(&outcomes).ok()
    }

    /// Read back what [`CriterionOutcome::of_run`] stored; null stays null.
    pub(crate) fn parse(stored: Option<String>) -> Option<Vec<CriterionOutcome>> {
        stored.and_then(|s| serde_json::from_str(&s).ok())
    }
}


impl Storage {
    /// Open (creating if needed) the SQLite database at `path`.
    pub fn open(path: &Path) -> Result<Storage, StorageError> {
        let store = sqlite::SqliteStore::open(path)?;
        let keys = store.live_keys()?;
        Ok(Self::with_backend(Backend::Sqlite(store), keys))
    }

    pub fn in_memory() -> Result<Storage, StorageError> {
        let store = sqlite::SqliteStore::in_memory()?;
        let keys = store.live_keys()?;
        Ok(Self::with_backend(Backend::Sqlite(store), keys))
    }

    /// Connect to the PostgreSQL database at `url` (any libpq connection string or URL,
    /// a Unix socket directory included) and bring its tables up to this version.
    pub async fn connect(url: &str) -> Result<Storage, StorageError> {
        let store = postgres::PgStore::connect(url).await?;
        let keys = store.live_keys().await?;
        let storage = Self::with_backend(Backend::Postgres(store), keys);
        // Keys added or revoked by another host reach this one's map as soon as the database
        // says so: a key revoked anywhere stops working everywhere.
        let (weak, url) = (Arc::downgrade(&storage.backend), url.to_string());
        let (keys, revocations) = (Arc::downgrade(&storage.keys), Arc::downgrade(&storage.revocations));
        tokio::spawn(postgres::follow_key_changes(url, move || {
            let (Some(backend), Some(keys), Some(revocations)) = (weak.upgrade(), keys.upgrade(), revocations.upgrade()) else {
                return None;
            };
            Some(async move {
                let Backend::Postgres(store) = &*backend else { return Ok(()) };
                let live: std::collections::HashMap<String, LiveKey> = store.live_keys().await?.into_iter().collect();
                let gone = {
                    let mut map = keys.write().unwrap();
                    let gone = map.keys().any(|hash| !live.contains_key(hash));
                    *map = live;
                    gone
                };
                if gone {
                    revocations.send_modify(|n| *n += 1);
                }
                Ok(())
            })
        }));
        Ok(storage)
    }

    fn with_backend(backend: Backend, keys: Vec<(String, LiveKey)>) -> Storage {
        Storage {
            backend: Arc::new(backend),
            keys: Arc::new(std::sync::RwLock::new(keys.into_iter().collect())),
            key_changes: Arc::new(tokio::sync::Mutex::new(())),
            revocations: Arc::new(tokio::sync::watch::Sender::new(0)),
            whole_runs: Arc::new(tokio::sync::Semaphore::new(crate::limits::WHOLE_RUNS)),
        }
    }

    /// Load whole runs through `gate` (the server's `--whole-runs`).
    pub fn with_whole_runs(mut self, gate: Arc<tokio::sync::Semaphore>) -> Storage {
        self.whole_runs = gate;
        self
    }

    /// The default team's id, creating the team on first start.
    pub async fn ensure_default_team(&self) -> Result<(String, bool), StorageError> {
        on_store!(self.ensure_default_team())
    }

    pub async fn create_team(&self, name: &str) -> Result<String, StorageError> {
        on_store!(self.create_team(name))
    }

    pub async fn team_has_keys(&self, team_id: &str) -> Result<bool, StorageError> {
        on_store!(self.team_has_keys(team_id))
    }

    /// Register `key` (only its hash and a short prefix are kept) for `team_id`; returns its
    /// id. A key already registered for the same team is fine; for another team it is
    /// refused, never moved. A revoked key stays revoked: registering it again answers its
    /// id, and it does not come back to life.
    pub async fn add_api_key(&self, team_id: &str, key: &str) -> Result<String, StorageError> {
        let hash = crate::auth::hash_key(key);
        let prefix: String = key.chars().take(12).collect();
        let _turn = self.key_changes.lock().await;
        let (id, live) = on_store!(self.add_api_key(team_id, &hash, &prefix))?;
        if live {
            self.keys.write().unwrap().insert(hash, LiveKey { team: team_id.to_string(), id: id.clone() });
        }
        Ok(id)
    }

    /// The team's keys (never the keys themselves): id, prefix, created, revoked.
    pub async fn api_keys(&self, team_id: &str) -> Result<Vec<KeyInfo>, StorageError> {
        on_store!(self.api_keys(team_id))
    }

    /// Revoke one of the team's keys by id; false when the team has no such live key. When
    /// this returns, no request with the key authenticates any more.
    pub async fn revoke_api_key(&self, team_id: &str, key_id: &str) -> Result<bool, StorageError> {
        let _turn = self.key_changes.lock().await;
        // Committed before the key leaves memory: a failed write leaves it live in both.
        let Some(hash) = on_store!(self.revoke_api_key(team_id, key_id))? else {
            return Ok(false);
        };
        self.keys.write().unwrap().remove(&hash);
        self.revocations.send_modify(|n| *n += 1);
        Ok(true)
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
        on_store!(self.put_seed(team_id, name, twin, seed))
    }

    /// Bytes of the named seeds a team stores, leaving out the one named `except` (a put
    /// replaces it).
    pub async fn seed_bytes(&self, team_id: &str, except: &str) -> Result<usize, StorageError> {
        on_store!(self.seed_bytes(team_id, except))
    }

    /// Named seeds of a team: (name, twin, seed JSON).
    pub async fn seeds(&self, team_id: &str) -> Result<Vec<(String, String, String)>, StorageError> {
        on_store!(self.seeds(team_id))
    }

    pub async fn seed(&self, team_id: &str, name: &str) -> Result<Option<(String, String)>, StorageError> {
        on_store!(self.seed(team_id, name))
    }

    /// Store (or replace) a task: its markdown and sidecar seed, as JSON. The body is kept
    /// as a version too; returns that version (a hash of the body).
    pub async fn put_task(&self, team_id: &str, id: &str, body: &str) -> Result<String, StorageError> {
        let version = task_version(body);
        on_store!(self.put_task(team_id, id, body, &version))?;
        Ok(version)
    }

    /// One version of a task, as it was stored.
    pub async fn task_version(&self, team_id: &str, id: &str, version: &str) -> Result<Option<String>, StorageError> {
        on_store!(self.task_version(team_id, id, version))
    }

    pub async fn task(&self, team_id: &str, id: &str) -> Result<Option<String>, StorageError> {
        on_store!(self.task(team_id, id))
    }

    /// A team's tasks: (id, body), by id.
    pub async fn tasks(&self, team_id: &str) -> Result<Vec<(String, String)>, StorageError> {
        on_store!(self.tasks(team_id))
    }

    /// Persist a finalized run in one transaction, unless its sandbox has a run already: a
    /// sandbox has one run (a unique index on its session), so a second finalize that raced
    /// the first, or ran again after a crash, stores nothing. True when this run was stored;
    /// otherwise [`Storage::run_of_sandbox`] reads the one that was. The run's JSON is
    /// written as it is produced, never built whole in memory.
    pub async fn insert_run(&self, team_id: &str, run: Arc<pome_grade::run::Run>) -> Result<bool, StorageError> {
        on_store!(self.insert_run(team_id, run))
    }

    /// The run of the team's sandbox `session_id`, whole, if it was finalized.
    pub async fn run_of_sandbox(&self, team_id: &str, session_id: &str) -> Result<Option<Value>, StorageError> {
        let _permit = self.whole_runs.acquire().await.map_err(|_| StorageError::Gone)?;
        on_store!(self.run_of_sandbox(team_id, session_id))
    }

    /// A team's runs, newest first, optionally filtered by trial group, task or verdict; one
    /// page of at most `page.limit`, after the run `page.starting_after` when set. The second
    /// value says whether more runs follow the page; `None` when `starting_after` is not one of
    /// the team's runs. Pages walk an index on (team, created), so a page costs about the
    /// same with ten runs stored or ten thousand.
    pub async fn runs(&self, team_id: &str, filter: RunFilter, page: RunPage) -> Result<Option<(Vec<RunSummary>, bool)>, StorageError> {
        on_store!(self.runs(team_id, filter, page))
    }

    /// Where one of the team's runs is stored, for reading it a piece at a time
    /// ([`Storage::read_run`]); `None` when it is not this team's.
    pub async fn run_row(&self, team_id: &str, run_id: &str) -> Result<Option<i64>, StorageError> {
        on_store!(self.run_row(team_id, run_id))
    }

    /// Bytes of run `row`'s stored JSON from `offset` into `buf`; 0 at its end. Blocking: a
    /// stream's own thread calls it, a piece at a time, so a long run streams beside
    /// everything else without being loaded whole.
    pub fn read_run(&self, row: i64, offset: usize, buf: &mut [u8]) -> Result<usize, StorageError> {
        match &*self.backend {
            Backend::Sqlite(s) => s.read_run(row, offset, buf),
            Backend::Postgres(p) => p.read_run(row, offset, buf),
        }
    }

    /// One run, whole; `None` when it is not this team's. A run holds its tapes and worlds
    /// (hundreds of megabytes at the caps), so few are loaded at once (`--whole-runs`);
    /// `GET /v1/runs/:id` streams instead ([`Storage::read_run`]).
    pub async fn run(&self, team_id: &str, run_id: &str) -> Result<Option<Value>, StorageError> {
        let _permit = self.whole_runs.acquire().await.map_err(|_| StorageError::Gone)?;
        on_store!(self.run(team_id, run_id))
    }
}

/// Wall-clock now, RFC 3339 (control-plane timestamps; never reaches a twin).
pub fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// One API key as the team may see it (never the key itself).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "Key")]
pub struct KeyInfo {
    pub id: Option<String>,
    /// The first characters, to recognise a key by.
    pub prefix: Option<String>,
    pub created_at: String,
    /// When it was revoked; null for a live key.
    pub revoked_at: Option<String>,
}

/// A task version: the first 16 hex digits of the SHA-256 of its stored body.
pub fn task_version(body: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(body.as_bytes()))[..16].to_string()
}

/// The specification of a store, run against each implementation: `sqlite_<name>` on an
/// in-memory database, `postgres_<name>` on a database of its own in a real PostgreSQL
/// server (`test_postgres`).
#[cfg(test)]
mod tests {
    use super::*;
    use pome_runtime::limits::MAX_LIVE_KEYS_PER_TEAM;

    macro_rules! on_both_stores {
        ($($name:ident),* $(,)?) => {
            mod sqlite_store {
                $(#[tokio::test] async fn $name() { super::$name(super::Storage::in_memory().unwrap()).await })*
            }
            mod postgres_store {
                $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)] async fn $name() { super::$name(crate::storage::test_postgres::storage().await).await })*
            }
        };
    }

    on_both_stores!(
        a_sandbox_has_one_run_and_a_second_insert_keeps_the_first,
        a_stored_run_reads_back_a_piece_at_a_time_as_the_json_it_was,
        keys_resolve_to_their_team_and_runs_stay_with_it,
        a_team_holds_at_most_its_live_key_allowance,
        a_revoked_key_stays_revoked_when_registered_again,
        runs_are_listed_newest_first_a_page_at_a_time_and_filtered,
        seeds_are_kept_per_team_and_replaced_by_name,
    );

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_store_answers_unavailable_while_the_database_is_down_and_carries_on_after() {
        let server = test_postgres::Server::start();
        let db = Storage::connect(&server.database().await).await.unwrap();
        let (team, _) = db.ensure_default_team().await.unwrap();
        server.down();
        let down = db.create_team("during").await;
        assert!(matches!(down, Err(StorageError::Unavailable(_))), "{down:?}");
        assert!(db.tasks(&team).await.is_err());
        server.up();
        let started = std::time::Instant::now();
        while db.create_team("after").await.is_err() {
            assert!(started.elapsed() < std::time::Duration::from_secs(30), "the store carries on once the database is back");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(db.ensure_default_team().await.unwrap(), (team, false), "nothing was lost");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_keys_added_or_revoked_on_one_host_reach_every_other_at_once() {
        let url = test_postgres::database().await;
        let (a, b) = (Storage::connect(&url).await.unwrap(), Storage::connect(&url).await.unwrap());
        let (team, _) = a.ensure_default_team().await.unwrap();
        let eventually = async |what: &str, check: &dyn Fn() -> bool| {
            let started = std::time::Instant::now();
            while !check() {
                assert!(started.elapsed() < std::time::Duration::from_secs(10), "{what}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        let id = a.add_api_key(&team, "pme_shared_0123456789abcdef").await.unwrap();
        eventually("a key added on one host works on the other", &|| b.live_key("pme_shared_0123456789abcdef").is_some()).await;
        let revocations = b.revocations();
        assert!(a.revoke_api_key(&team, &id).await.unwrap());
        eventually("a key revoked on one host stops working on the other", &|| b.live_key("pme_shared_0123456789abcdef").is_none()).await;
        assert!(revocations.has_changed().unwrap(), "what the key holds open on the other host hears of it");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_text_with_a_nul_character_is_refused_as_the_senders_error_not_the_stores() {
        let db = test_postgres::storage().await;
        let (team, _) = db.ensure_default_team().await.unwrap();
        let refused = db.put_seed(&team, "a\0b", "github", "{}").await;
        assert!(matches!(refused, Err(StorageError::Unstorable(_))), "{refused:?}");
        let filter = RunFilter { group_id: Some("g\0".into()), ..Default::default() };
        assert!(matches!(db.runs(&team, filter, RunPage::default()).await, Err(StorageError::Unstorable(_))));
        assert!(matches!(db.run_row(&team, "run_\0").await, Err(StorageError::Unstorable(_))));
        let mut r = run("run_nul", "ses_nul", "2026-01-01T00:00:00Z");
        r.agent_id = Some("agent\0".into());
        assert!(matches!(db.insert_run(&team, Arc::new(r)).await, Err(StorageError::Unstorable(_))));
        assert!(db.seeds(&team).await.unwrap().is_empty(), "nothing was written");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_store_asked_for_tls_refuses_to_start_rather_than_connect_in_clear() {
        let url = format!("{} sslmode=require", test_postgres::database().await);
        let refused = Storage::connect(&url).await.err().expect("refused");
        assert!(refused.to_string().to_ascii_lowercase().contains("tls"), "{refused}");
    }

    fn run(id: &str, session: &str, at: &str) -> pome_grade::run::Run {
        pome_grade::run::Run { id: id.into(), session_id: session.into(), twins: vec!["acme".into()], finalized_at: at.into(), ..Default::default() }
    }

    async fn a_sandbox_has_one_run_and_a_second_insert_keeps_the_first(db: Storage) {
        let (team, _) = db.ensure_default_team().await.unwrap();
        assert!(db.insert_run(&team, Arc::new(run("run_a", "ses_1", "2026-01-01T00:00:00Z"))).await.unwrap());
        assert!(!db.insert_run(&team, Arc::new(run("run_b", "ses_1", "2026-01-01T00:00:01Z"))).await.unwrap(), "the sandbox has its run");
        assert_eq!(db.run_of_sandbox(&team, "ses_1").await.unwrap().unwrap()["id"], "run_a");
        assert!(db.run(&team, "run_b").await.unwrap().is_none());
        assert!(db.run_of_sandbox(&team, "ses_2").await.unwrap().is_none());
    }

    async fn a_stored_run_reads_back_a_piece_at_a_time_as_the_json_it_was(db: Storage) {
        let (team, _) = db.ensure_default_team().await.unwrap();
        // Control bytes are six characters each as JSON: the stored text is far larger than
        // the run (several stored parts in PostgreSQL), and is written and read without ever
        // being held whole.
        let mut big = run("run_big", "ses_big", "2026-01-01T00:00:00Z");
        big.twins = vec!["\u{1}".repeat(300_000), "é\"\n".repeat(1000)];
        let expected = serde_json::to_vec(&big).unwrap();
        assert!(db.insert_run(&team, Arc::new(big)).await.unwrap());

        let row = db.run_row(&team, "run_big").await.unwrap().expect("the team's run is found");
        let read = {
            let db = db.clone();
            // Read as a stream's own thread reads it, off the async workers.
            tokio::task::spawn_blocking(move || {
                let (mut read, mut buf) = (Vec::new(), vec![0u8; 65_536]);
                loop {
                    let n = db.read_run(row, read.len(), &mut buf).unwrap();
                    if n == 0 {
                        break read;
                    }
                    read.extend_from_slice(&buf[..n]);
                }
            })
            .await
            .unwrap()
        };
        assert_eq!(read.len(), expected.len());
        assert!(read == expected, "the streamed bytes are the run's JSON");
        assert_eq!(db.run(&team, "run_big").await.unwrap().unwrap()["twins"][0].as_str().unwrap().len(), 300_000);
        assert!(db.run_row("another-team", "run_big").await.unwrap().is_none(), "another team's run is not found");
    }

    async fn keys_resolve_to_their_team_and_runs_stay_with_it(db: Storage) {
        let (team, created) = db.ensure_default_team().await.unwrap();
        assert!(created);
        assert_eq!(db.ensure_default_team().await.unwrap(), (team.clone(), false));
        db.add_api_key(&team, "pme_abc").await.unwrap();
        assert!(db.team_has_keys(&team).await.unwrap());
        assert_eq!(db.team_for_key("pme_abc").await.unwrap(), Some(team.clone()));
        assert_eq!(db.team_for_key("pme_abd").await.unwrap(), None);

        let other = db.create_team("other").await.unwrap();
        assert!(!db.team_has_keys(&other).await.unwrap());
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

    async fn a_team_holds_at_most_its_live_key_allowance(db: Storage) {
        let (team, _) = db.ensure_default_team().await.unwrap();
        let mut ids = Vec::new();
        for _ in 0..MAX_LIVE_KEYS_PER_TEAM {
            ids.push(db.add_api_key(&team, &crate::auth::new_api_key()).await.unwrap());
        }
        assert!(matches!(db.add_api_key(&team, &crate::auth::new_api_key()).await, Err(StorageError::TooManyKeys(_))));
        assert!(db.revoke_api_key(&team, &ids[0]).await.unwrap());
        db.add_api_key(&team, &crate::auth::new_api_key()).await.expect("a revoked key frees its place");
    }

    async fn a_revoked_key_stays_revoked_when_registered_again(db: Storage) {
        let (team, _) = db.ensure_default_team().await.unwrap();
        let id = db.add_api_key(&team, "pme_revoked_0123456789").await.unwrap();
        let revocations = db.revocations();
        assert!(db.revoke_api_key(&team, &id).await.unwrap());
        assert!(revocations.has_changed().unwrap(), "what the key holds open hears of it");
        assert!(!db.revoke_api_key(&team, &id).await.unwrap(), "a key is revoked once");
        assert_eq!(db.live_key("pme_revoked_0123456789"), None);
        assert_eq!(db.add_api_key(&team, "pme_revoked_0123456789").await.unwrap(), id, "registering it again answers its id");
        assert_eq!(db.live_key("pme_revoked_0123456789"), None, "and it stays revoked");
        let keys = db.api_keys(&team).await.unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].prefix.as_deref(), Some("pme_revoked_"));
        assert!(keys[0].revoked_at.is_some());
    }

    async fn runs_are_listed_newest_first_a_page_at_a_time_and_filtered(db: Storage) {
        let (team, _) = db.ensure_default_team().await.unwrap();
        for (i, verdict) in [Some("pass"), Some("fail"), None, Some("pass"), Some("fail")].into_iter().enumerate() {
            let mut r = run(&format!("run_{i}"), &format!("ses_{i}"), &format!("2026-01-01T00:00:0{i}Z"));
            r.verdict = verdict.map(String::from);
            r.group_id = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
            r.agent_version = Some(if i < 3 { "v1" } else { "v2" }.into());
            if verdict.is_some() {
                r.score = Some(if verdict == Some("pass") { 100 } else { 50 });
                r.criteria_results = vec![criterion(0, "Issue #1 is labelled", pome_grade::Status::Passed), criterion(1, "Issue #1 is assigned", if verdict == Some("pass") { pome_grade::Status::Passed } else { pome_grade::Status::Failed })];
            }
            assert!(db.insert_run(&team, Arc::new(r)).await.unwrap());
        }
        let ids = |page: &[RunSummary]| page.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        let (first, more) = db.runs(&team, RunFilter::default(), RunPage { limit: 2, starting_after: None }).await.unwrap().unwrap();
        assert_eq!((ids(&first), more), (vec!["run_4".to_string(), "run_3".into()], true));
        let (second, more) = db.runs(&team, RunFilter::default(), RunPage { limit: 2, starting_after: Some("run_3".into()) }).await.unwrap().unwrap();
        assert_eq!((ids(&second), more), (vec!["run_2".to_string(), "run_1".into()], true));
        let (last, more) = db.runs(&team, RunFilter::default(), RunPage { limit: 2, starting_after: Some("run_1".into()) }).await.unwrap().unwrap();
        assert_eq!((ids(&last), more), (vec!["run_0".to_string()], false));
        assert!(db.runs(&team, RunFilter::default(), RunPage { limit: 2, starting_after: Some("run_nope".into()) }).await.unwrap().is_none(), "a cursor that is no run of the team");

        let only = |verdict: &str| RunFilter { verdict: Some(verdict.into()), ..Default::default() };
        assert_eq!(ids(&db.runs(&team, only("pass"), RunPage::default()).await.unwrap().unwrap().0), ["run_3", "run_0"]);
        assert_eq!(ids(&db.runs(&team, only("ungraded"), RunPage::default()).await.unwrap().unwrap().0), ["run_2"]);
        let odd = RunFilter { group_id: Some("odd".into()), ..Default::default() };
        assert_eq!(ids(&db.runs(&team, odd, RunPage::default()).await.unwrap().unwrap().0), ["run_3", "run_1"]);
        assert_eq!(db.runs(&team, RunFilter::default(), RunPage::default()).await.unwrap().unwrap().0[0].twins, ["acme"]);
        let v2 = RunFilter { agent_version: Some("v2".into()), ..Default::default() };
        assert_eq!(ids(&db.runs(&team, v2, RunPage::default()).await.unwrap().unwrap().0), ["run_4", "run_3"]);
        let v1_passed = RunFilter { agent_version: Some("v1".into()), verdict: Some("pass".into()), ..Default::default() };
        assert_eq!(ids(&db.runs(&team, v1_passed, RunPage::default()).await.unwrap().unwrap().0), ["run_0"]);
        // A tenant's filter is a value, never SQL: a quote and a huge string match nothing.
        for hostile in ["v1' OR '1'='1", "v1\") OR (1=1", &"v".repeat(64 * 1024)] {
            let f = RunFilter { agent_version: Some(hostile.to_string()), ..Default::default() };
            assert!(db.runs(&team, f, RunPage::default()).await.unwrap().unwrap().0.is_empty(), "{}", &hostile[..hostile.len().min(20)]);
        }

        // Each run's score and criteria outcomes come with the listing; an ungraded run has none.
        let all = db.runs(&team, RunFilter::default(), RunPage::default()).await.unwrap().unwrap().0;
        let failed = all.iter().find(|r| r.id == "run_4").unwrap();
        assert_eq!(failed.score, Some(50));
        let outcomes = failed.criteria.as_ref().expect("a graded run lists its criteria");
        assert_eq!(outcomes.iter().map(|c| (c.index, c.text.as_str(), c.status.as_str())).collect::<Vec<_>>(), [(0, "Issue #1 is labelled", "passed"), (1, "Issue #1 is assigned", "failed")]);
        let ungraded = all.iter().find(|r| r.id == "run_2").unwrap();
        assert_eq!((ungraded.score, ungraded.criteria.is_none()), (None, true));
    }

    fn criterion(index: usize, text: &str, status: pome_grade::Status) -> pome_grade::CriterionResult {
        pome_grade::CriterionResult {
            index,
            kind: "code".into(),
            twin: Some("acme".into()),
            text: text.into(),
            status,
            reason: String::new(),
            evidence: Value::Null,
            check_id: None,
            always_scored: false,
        }
    }

    async fn seeds_are_kept_per_team_and_replaced_by_name(db: Storage) {
        let (team, _) = db.ensure_default_team().await.unwrap();
        let other = db.create_team("other").await.unwrap();
        db.put_seed(&team, "small", "github", "{\"a\":1}").await.unwrap();
        db.put_seed(&team, "big", "stripe", "{\"é\":\"ü\"}").await.unwrap();
        db.put_seed(&team, "small", "slack", "{\"b\":22}").await.unwrap();
        assert_eq!(db.seed(&team, "small").await.unwrap(), Some(("slack".to_string(), "{\"b\":22}".to_string())), "replaced by name");
        assert_eq!(db.seeds(&team).await.unwrap().iter().map(|s| s.0.as_str()).collect::<Vec<_>>(), ["big", "small"]);
        assert_eq!(db.seed_bytes(&team, "").await.unwrap(), "{\"b\":22}".len() + "{\"é\":\"ü\"}".len(), "bytes, not characters");
        assert_eq!(db.seed_bytes(&team, "small").await.unwrap(), "{\"é\":\"ü\"}".len());
        assert!(db.seed(&other, "small").await.unwrap().is_none(), "seeds stay with their team");
    }
}
