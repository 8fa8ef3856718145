//! Live sandboxes in PostgreSQL (`pome serve --store postgres://…`): the same records and tape
//! segments as `live.db`, in the database every host of a deployment shares, so a host keeps
//! nothing another needs. Only what is committed there survives the host, so an answer leaves
//! once its row is committed, in every durable mode: `window` and `sync` promise the same here
//! (PostgreSQL's commit is its fsync). Rows of every sandbox go in one commit: a writer task
//! commits whatever arrived while its previous commit ran, so under load a commit carries
//! many rows and each waits about one round trip.
//!
//! A commit that fails is held and tried again, with what arrived meanwhile, until it goes
//! through; while it fails, journals say the sandbox is unavailable (503) rather than serve
//! what could not be recorded.
//!
//! Several hosts share the database, each sandbox served by one of them (issue #33). A host
//! holds a lease in `live_hosts`, renewed on the database's clock; it serves only while its
//! own monotonic clock says the lease has a margin left, so it stops before another host may
//! claim its sandboxes. Each sandbox has an owner and an epoch: claiming one bumps its epoch
//! with a conditional update, and every commit of tape rows checks, in the same transaction
//! and under a share lock, that this host still owns the sandbox at the epoch it claimed. A
//! host paused past its lease (SIGSTOP, a stalled VM) therefore commits nothing for a
//! sandbox it lost, and since an answer leaves only once its row is committed, answers
//! nothing either: its rows are refused ("moved") and the sandbox is dropped here.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::Pool;
use pome_runtime::store::Journal;
use pome_tape::TapeRow;

use super::{CloseReason, Done, Durability, Entry, Failing, UNAVAILABLE, LiveStore, MAX_TOMBSTONES, Op, RETRY_FIRST, RETRY_MAX, RangeRows, Restored, SandboxRecord, StoredTombstone, Tombstone, parse_record};
use super::segment::{RecentBodies, Segment, encode_row};
use crate::storage::StorageError;

const SCHEMA_LOCK: i64 = 0x706f_6d65_0101;

/// What a journal answers for a row of a sandbox this host no longer owns.
pub const MOVED: &str = "this sandbox moved to another host of the service; retry the request";
/// What a journal answers while this host's lease has no margin left.
const LEASE_LAPSED: &str = "this host lost contact with the shared store; retry the request";

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS live_hosts (
    id TEXT COLLATE "C" PRIMARY KEY,
    -- Where the other hosts forward a request for one of this host's sandboxes.
    url TEXT NOT NULL DEFAULT '',
    -- On the database's clock. Past it, this host's sandboxes may be claimed.
    lease_until TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS live_sandboxes (
    id TEXT COLLATE "C" PRIMARY KEY,
    -- The SandboxRecord as JSON; NULL once closed (the token's hash goes with it).
    record TEXT,
    team_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    expires_at_ms BIGINT NOT NULL DEFAULT 0,
    idle_deadline_ms BIGINT NOT NULL DEFAULT 0,
    -- The host serving it, and how many times it has been claimed: rows are committed only
    -- by the owner, under the epoch it claimed the sandbox at.
    owner TEXT COLLATE "C",
    epoch BIGINT NOT NULL DEFAULT 1,
    -- The tombstone as JSON once closed, and the order closes came in.
    closed TEXT,
    closed_seq BIGINT
);
CREATE SEQUENCE IF NOT EXISTS live_closed_seq;
CREATE INDEX IF NOT EXISTS live_sandboxes_closed ON live_sandboxes (closed_seq) WHERE closed_seq IS NOT NULL;
CREATE INDEX IF NOT EXISTS live_sandboxes_open ON live_sandboxes (team_id) WHERE closed IS NULL;
CREATE INDEX IF NOT EXISTS live_sandboxes_owner ON live_sandboxes (owner) WHERE closed IS NULL;
-- One tape's rows first_seq..=last_seq that one commit wrote, as `Segment` stores them.
CREATE TABLE IF NOT EXISTS live_segments (
    sandbox_id TEXT COLLATE "C" NOT NULL,
    twin TEXT COLLATE "C" NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    -- The owner's epoch the rows were committed under.
    epoch BIGINT NOT NULL DEFAULT 0,
    rows BYTEA NOT NULL,
    PRIMARY KEY (sandbox_id, twin, last_seq)
);
-- Segments are LZ4 already: PostgreSQL compressing them again (pglz, its costliest work
-- under load) would find nothing to gain. Altered only when needed, since the ALTER takes
-- the table's strongest lock and other hosts may be committing.
DO $$ BEGIN
    IF (SELECT attstorage FROM pg_attribute WHERE attrelid = 'live_segments'::regclass AND attname = 'rows') <> 'e' THEN
        ALTER TABLE live_segments ALTER COLUMN rows SET STORAGE EXTERNAL;
    END IF;
END $$;
CREATE TABLE IF NOT EXISTS live_quarantine (
    id TEXT, what TEXT NOT NULL, content TEXT, error TEXT NOT NULL, at_ms BIGINT NOT NULL
);
"#;

/// A row as it is committed.
struct Logged {
    sandbox: Arc<str>,
    twin: Arc<str>,
    /// The epoch the row was served under.
    epoch: i64,
    row: Arc<TapeRow>,
    committed: Arc<AtomicU64>,
}

/// A row waiting for its commit.
struct Pending {
    logged: Logged,
    done: Done,
}

#[derive(Default)]
struct Batch {
    ops: Vec<Entry>,
    rows: Vec<Pending>,
    stopped: bool,
}

/// This host's lease on the shared store and the sandboxes it owns under it.
pub struct Ownership {
    /// This host's id in `live_hosts`: new at every start, so a restarted host claims its
    /// old sandboxes like any other host would.
    pub host: String,
    /// How long a renewal holds (`--lease`).
    lease: Duration,
    /// Where the other hosts forward requests for this host's sandboxes.
    url: Mutex<String>,
    /// The monotonic clock's zero for `serving_until_ms`.
    base: std::time::Instant,
    /// Until when (ms after `base`) this host serves: the last renewal's send time plus the
    /// lease, less a margin for the clocks' drift. Sent before the database stamped it, so
    /// the lease the database holds always ends after this.
    serving_until_ms: AtomicU64,
    /// Sandbox → the epoch this host claimed it at.
    owned: Mutex<HashMap<String, i64>>,
    /// Sandboxes this host found it no longer owns; the server drops them.
    lost: tokio::sync::mpsc::UnboundedSender<String>,
    /// The sandboxes this host closed most recently: a call served as one closed is answered
    /// as before, its row going with the tape.
    closed: Mutex<std::collections::VecDeque<String>>,
}

/// How many recently closed sandboxes [`Ownership::closed`] remembers.
const RECENTLY_CLOSED: usize = 1024;

impl Ownership {
    /// Whether this host may serve its sandboxes now.
    pub fn serving(&self) -> bool {
        (self.base.elapsed().as_millis() as u64) < self.serving_until_ms.load(Ordering::Acquire)
    }

    fn renewed(&self, sent: std::time::Instant) {
        let until = sent.duration_since(self.base) + self.lease - self.margin();
        self.serving_until_ms.fetch_max(until.as_millis() as u64, Ordering::AcqRel);
    }

    /// How long a renewal holds.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    fn margin(&self) -> Duration {
        self.lease / 4
    }

    fn epoch(&self, sandbox: &str) -> Option<i64> {
        self.owned.lock().unwrap().get(sandbox).copied()
    }

    fn own(&self, sandbox: &str, epoch: i64) {
        self.owned.lock().unwrap().insert(sandbox.to_string(), epoch);
    }

    /// `sandbox` is no longer this host's at `epoch` (a newer claim of it stays).
    fn lose(&self, sandbox: &str, epoch: i64) {
        let mut owned = self.owned.lock().unwrap();
        if owned.get(sandbox) == Some(&epoch) {
            owned.remove(sandbox);
            drop(owned);
            tracing::warn!(sandbox, epoch, "another host claimed this sandbox; dropping it here");
            let _ = self.lost.send(sandbox.to_string());
        }
    }

    /// `sandbox` closed here.
    fn closed(&self, sandbox: &str) {
        self.owned.lock().unwrap().remove(sandbox);
        let mut closed = self.closed.lock().unwrap();
        if closed.len() == RECENTLY_CLOSED {
            closed.pop_front();
        }
        closed.push_back(sandbox.to_string());
    }

    fn recently_closed(&self, sandbox: &str) -> bool {
        self.closed.lock().unwrap().iter().any(|c| c == sandbox)
    }
}

/// Who serves a sandbox, as the store says.
#[derive(Debug, Clone)]
pub enum Directory {
    Unknown,
    Closed(Tombstone),
    /// Open, served by `owner` at `url` while its lease holds (`alive`).
    Open { owner: Option<String>, url: String, alive: bool },
}

pub struct PgLive {
    pool: Pool,
    runtime: tokio::runtime::Handle,
    mode: Durability,
    batch: Arc<Mutex<Batch>>,
    wake: Arc<tokio::sync::Notify>,
    /// Why the last commit failed, while the writer retries it.
    failing: Arc<Failing>,
    /// What `load` answers: read at connect, where waiting on the database is allowed.
    restored: Mutex<Option<Restored>>,
    pub ownership: Arc<Ownership>,
    lost: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<String>>>,
    renewing: tokio::task::JoinHandle<()>,
}

/// `$1` milliseconds as an interval, on the database's clock.
const MS: &str = "($1::BIGINT * INTERVAL '1 millisecond')";

impl PgLive {
    /// Connect to `url`, bring the live tables up to this version, take a lease for this
    /// host, claim every sandbox no live host owns and read it back, and start the writer.
    pub async fn connect(url: &str, mode: Durability, lease: Duration) -> Result<Arc<PgLive>, StorageError> {
        // A commit holds share locks on its sandboxes' rows until it ends. A host paused in
        // the middle of one (SIGSTOP, a stalled VM) would hold them, and with them every
        // claim of its sandboxes, for as long as it is paused: PostgreSQL ends such a session
        // after half a lease idle in its transaction, which frees the locks long before the
        // lease has run out. (Nothing here idles inside a transaction otherwise.)
        let settings = format!("-c idle_in_transaction_session_timeout={}", (lease / 2).as_millis().max(1));
        let pool = crate::storage::postgres::pool_with(url, &settings)?;
        crate::storage::postgres::migrate(&pool, SCHEMA_LOCK, SCHEMA).await?;
        let (lost_tx, lost_rx) = tokio::sync::mpsc::unbounded_channel();
        let ownership = Arc::new(Ownership {
            host: crate::auth::new_id("host"),
            lease,
            url: Mutex::default(),
            base: std::time::Instant::now(),
            serving_until_ms: AtomicU64::new(0),
            owned: Mutex::default(),
            lost: lost_tx,
            closed: Mutex::default(),
        });
        renew(&pool, &ownership).await?;
        // Renewing starts before the sandboxes are read back: reading many takes longer than
        // a lease, and a host whose lease lapsed while it started answers 503 until renewed.
        let renewing = tokio::spawn(keep_renewing(pool.clone(), ownership.clone()));
        let restored = match load(&pool, &ownership).await {
            Ok(restored) => restored,
            Err(e) => {
                renewing.abort();
                return Err(e);
            }
        };
        let live = Arc::new(PgLive {
            pool,
            runtime: tokio::runtime::Handle::current(),
            mode,
            batch: Arc::default(),
            wake: Arc::default(),
            failing: Arc::default(),
            restored: Mutex::new(Some(restored)),
            ownership,
            lost: Mutex::new(Some(lost_rx)),
            renewing,
        });
        let writer = Writer { pool: live.pool.clone(), batch: live.batch.clone(), wake: live.wake.clone(), failing: live.failing.clone(), ownership: live.ownership.clone() };
        tokio::spawn(writer.run());
        Ok(live)
    }

    /// Where the other hosts reach this one (`--advertise-url`), stored at the next renewal.
    pub async fn advertise(&self, url: &str) -> Result<(), StorageError> {
        *self.ownership.url.lock().unwrap() = url.to_string();
        renew(&self.pool, &self.ownership).await
    }

    /// The sandboxes this host found it lost to another (taken once, by the server).
    pub fn take_lost(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<String>> {
        self.lost.lock().unwrap().take()
    }

    /// Who serves `sandbox`.
    pub async fn directory(&self, sandbox: &str) -> Result<Directory, StorageError> {
        let c = self.pool.get().await?;
        let st = c
            .prepare_cached(
                "SELECT s.record IS NOT NULL AND s.closed IS NULL, s.closed, s.owner, COALESCE(h.url, ''), COALESCE(h.lease_until > now(), FALSE)
                 FROM live_sandboxes s LEFT JOIN live_hosts h ON h.id = s.owner WHERE s.id = $1",
            )
            .await?;
        let Some(r) = c.query_opt(&st, &[&sandbox]).await? else { return Ok(Directory::Unknown) };
        let (open, closed): (bool, Option<String>) = (r.get(0), r.get(1));
        if let Some(text) = closed {
            return Ok(match parse_tombstone(&text) {
                Ok(t) => Directory::Closed(t),
                Err(_) => Directory::Unknown,
            });
        }
        if !open {
            return Ok(Directory::Unknown);
        }
        Ok(Directory::Open { owner: r.get(2), url: r.get(3), alive: r.get(4) })
    }

    /// Claim `sandbox` for this host when no live host owns it (or this one does, but no
    /// longer serves it): its epoch goes up, which fences every row of an earlier owner.
    /// Returns its record to rebuild it from, or `None` when another host holds it.
    pub async fn claim(&self, sandbox: &str) -> Result<Option<SandboxRecord>, StorageError> {
        if !self.ownership.serving() {
            return Err(StorageError::Unavailable(LEASE_LAPSED.into()));
        }
        let c = self.pool.get().await?;
        let st = c
            .prepare_cached(
                "UPDATE live_sandboxes s SET owner = $1, epoch = s.epoch + 1
                 WHERE s.id = $2 AND s.closed IS NULL AND s.record IS NOT NULL
                   AND (s.owner IS NULL OR s.owner = $1 OR NOT EXISTS (SELECT 1 FROM live_hosts h WHERE h.id = s.owner AND h.lease_until > now()))
                 RETURNING s.id, s.record, s.idle_deadline_ms, s.epoch",
            )
            .await?;
        let Some(r) = c.query_opt(&st, &[&self.ownership.host, &sandbox]).await? else { return Ok(None) };
        let (id, text, idle, epoch): (String, Option<String>, i64, i64) = (r.get(0), r.get(1), r.get(2), r.get(3));
        let record = record_of(&id, text.as_deref(), idle).map_err(StorageError::Corrupt)?;
        self.ownership.own(&id, epoch);
        tracing::info!(sandbox = %id, epoch, "claimed a sandbox whose host is gone");
        Ok(Some(record))
    }

    /// Record a new sandbox as this host's, unless its team already has `quota` open across
    /// every host: counted in the store under the team's lock, so creates on different hosts
    /// at once cannot pass it together. `Ok(Err(used))` when the quota is full.
    pub async fn create(&self, record: &SandboxRecord, quota: usize) -> Result<Result<(), usize>, StorageError> {
        if !self.ownership.serving() {
            return Err(StorageError::Unavailable(LEASE_LAPSED.into()));
        }
        let text = serde_json::to_string(record).map_err(|e| StorageError::Corrupt(e.to_string()))?;
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 7))", &[&record.team_id]).await?;
        let used: i64 = tx.query_one("SELECT COUNT(*) FROM live_sandboxes WHERE team_id = $1 AND closed IS NULL AND record IS NOT NULL", &[&record.team_id]).await?.get(0);
        if used as usize >= quota {
            return Ok(Err(used as usize));
        }
        tx.execute(
            "INSERT INTO live_sandboxes (id, record, team_id, expires_at_ms, idle_deadline_ms, owner, epoch) VALUES ($1, $2, $3, $4, $5, $6, 1)",
            &[&record.id, &text, &record.team_id, &(record.expires_at_ms as i64), &(record.idle_deadline_ms as i64), &self.ownership.host],
        )
        .await?;
        tx.commit().await?;
        self.ownership.own(&record.id, 1);
        Ok(Ok(()))
    }

    /// The team's open sandboxes on every host (not past their clocks), oldest first.
    pub async fn team_records(&self, team: &str) -> Result<Vec<SandboxRecord>, StorageError> {
        let c = self.pool.get().await?;
        let now = crate::sandbox::unix_ms(std::time::SystemTime::now()) as i64;
        let rows = c
            .query(
                "SELECT id, record, idle_deadline_ms FROM live_sandboxes
                 WHERE team_id = $1 AND closed IS NULL AND record IS NOT NULL AND expires_at_ms > $2 AND idle_deadline_ms > $2",
                &[&team, &now],
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let (id, text, idle): (String, Option<String>, i64) = (r.get(0), r.get(1), r.get(2));
            if let Ok(record) = record_of(&id, text.as_deref(), idle) {
                out.push(record);
            }
        }
        out.sort_by(|a, b| a.created_at_ms.cmp(&b.created_at_ms).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// Close every sandbox whose lifetime or idle clock ran out (by the store's clocks) and
    /// whose host is gone, so nobody needs to call it for its slot to free. Returns how many.
    pub async fn close_orphans_expired(&self) -> Result<u64, StorageError> {
        let mut c = self.pool.get().await?;
        let tx = c.transaction().await?;
        let closed = tx
            .query(
                "UPDATE live_sandboxes s SET
                    closed = json_build_object('team_id', s.team_id, 'token_hash', (s.record::json)->>'token_hash',
                        'reason', CASE WHEN s.expires_at_ms <= $1 THEN 'lifetime_expired' ELSE 'idle_expired' END, 'run_id', NULL)::TEXT,
                    record = NULL, closed_seq = nextval('live_closed_seq'), owner = NULL, epoch = s.epoch + 1
                 WHERE s.closed IS NULL AND s.record IS NOT NULL AND (s.expires_at_ms <= $1 OR s.idle_deadline_ms <= $1)
                   AND (s.owner IS NULL OR NOT EXISTS (SELECT 1 FROM live_hosts h WHERE h.id = s.owner AND h.lease_until > now()))
                 RETURNING s.id",
                &[&(crate::sandbox::unix_ms(std::time::SystemTime::now()) as i64)],
            )
            .await?;
        let ids: Vec<String> = closed.iter().map(|r| r.get(0)).collect();
        if !ids.is_empty() {
            tx.execute("DELETE FROM live_segments WHERE sandbox_id = ANY($1)", &[&ids]).await?;
        }
        tx.commit().await?;
        Ok(ids.len() as u64)
    }

    /// Hand this host's sandboxes back (a drain, before the process exits): everything
    /// queued is committed first, then every sandbox is left without an owner, so the next
    /// request for one, on any host, claims it at once instead of waiting out the lease.
    pub async fn release(&self) -> Result<(), StorageError> {
        super::wait(|done| self.send(Op::Flush, Some(done))).await.map_err(StorageError::Unavailable)?;
        self.renewing.abort();
        self.ownership.serving_until_ms.store(0, Ordering::Release);
        let c = self.pool.get().await?;
        c.execute("UPDATE live_sandboxes SET owner = NULL WHERE owner = $1", &[&self.ownership.host]).await?;
        c.execute("DELETE FROM live_hosts WHERE id = $1", &[&self.ownership.host]).await?;
        self.ownership.owned.lock().unwrap().clear();
        Ok(())
    }

    fn failing(&self) -> Option<String> {
        self.failing.get()
    }

    fn send(&self, op: Op, done: Option<Done>) {
        if matches!(op, Op::Put(_)) && let Some(why) = self.failing() {
            if let Some(done) = done {
                done(Err(format!("storage is failing: {why}")));
            }
            return;
        }
        if let Op::Put(record) = &op {
            let mut owned = self.ownership.owned.lock().unwrap();
            owned.entry(record.id.clone()).or_insert(1);
        }
        let mut b = self.batch.lock().unwrap();
        if b.stopped {
            drop(b);
            if let Some(done) = done {
                done(Err("the live-sandbox writer stopped".into()));
            }
            return;
        }
        b.ops.push(Entry { op, done });
        drop(b);
        self.wake.notify_one();
    }
}

impl Drop for PgLive {
    fn drop(&mut self) {
        // The writer commits what is queued, then ends; the lease is left to run out.
        self.renewing.abort();
        self.batch.lock().unwrap().stopped = true;
        self.wake.notify_one();
    }
}

/// Renew this host's lease (and its URL), on the database's clock.
async fn renew(pool: &Pool, ownership: &Ownership) -> Result<(), StorageError> {
    let sent = std::time::Instant::now();
    let url = ownership.url.lock().unwrap().clone();
    let c = pool.get().await?;
    let st = c
        .prepare_cached(&format!(
            "INSERT INTO live_hosts (id, url, lease_until) VALUES ($2, $3, now() + {MS})
             ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, lease_until = EXCLUDED.lease_until"
        ))
        .await?;
    c.execute(&st, &[&(ownership.lease.as_millis() as i64), &ownership.host, &url]).await?;
    ownership.renewed(sent);
    Ok(())
}

/// Renew the lease every fifth of its length. After a lapse (the database was out of reach,
/// or this process was paused), the sandboxes another host claimed meanwhile are dropped
/// here before this host serves again.
async fn keep_renewing(pool: Pool, ownership: Arc<Ownership>) {
    let every = ownership.lease / 5;
    let mut lapsed = false;
    loop {
        tokio::time::sleep(every).await;
        if !ownership.serving() && !lapsed {
            lapsed = true;
            tracing::error!(host = %ownership.host, "this host's lease on the shared store lapsed; its sandboxes answer 503 until it is renewed");
        }
        if lapsed {
            match still_owned(&pool, &ownership).await {
                Ok(()) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "checking which sandboxes this host still owns failed; trying again");
                    continue;
                }
            }
        }
        match renew(&pool, &ownership).await {
            Ok(()) if lapsed => {
                lapsed = false;
                tracing::info!(host = %ownership.host, "this host's lease is renewed; it serves again");
            }
            Ok(()) => {}
            Err(e) => tracing::warn!(error = %e, "renewing this host's lease failed; trying again"),
        }
    }
}

/// Drop every sandbox this host believes it owns that the store says it does not (at the
/// epoch it claimed).
async fn still_owned(pool: &Pool, ownership: &Ownership) -> Result<(), StorageError> {
    let c = pool.get().await?;
    let rows = c.query("SELECT id, epoch FROM live_sandboxes WHERE owner = $1 AND closed IS NULL", &[&ownership.host]).await?;
    let held: HashMap<String, i64> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let mine: Vec<(String, i64)> = ownership.owned.lock().unwrap().iter().map(|(k, v)| (k.clone(), *v)).collect();
    for (id, epoch) in mine {
        if held.get(&id) != Some(&epoch) {
            ownership.lose(&id, epoch);
        }
    }
    Ok(())
}

/// `LiveStore` is implemented on the Arc: a journal needs the store itself.
pub struct PgLiveStore(pub Arc<PgLive>);

impl LiveStore for PgLiveStore {
    super::queued_ops!();

    fn journal(&self, sandbox: &str, twin: &str) -> Arc<dyn Journal> {
        Arc::new(PgJournal { live: self.0.clone(), sandbox: sandbox.into(), twin: twin.into(), committed: Arc::default() })
    }

    fn load(&self) -> Result<Restored, StorageError> {
        if let Some(restored) = self.0.restored.lock().unwrap().take() {
            return Ok(restored);
        }
        let (pool, runtime, ownership) = (self.0.pool.clone(), self.0.runtime.clone(), self.0.ownership.clone());
        tokio::task::block_in_place(|| runtime.block_on(load(&pool, &ownership)))
    }

    fn mode(&self) -> Durability {
        self.0.mode
    }
}

struct PgJournal {
    live: Arc<PgLive>,
    sandbox: Arc<str>,
    twin: Arc<str>,
    committed: Arc<AtomicU64>,
}

impl Journal for PgJournal {
    fn append(&self, row: Arc<TapeRow>, done: Done) {
        // The epoch is read now: a row served before the sandbox was lost carries the old
        // one, and the commit refuses it.
        let Some(epoch) = self.live.ownership.epoch(&self.sandbox) else {
            // Its tape is gone with it; the call is answered as it would have been a moment before.
            if self.live.ownership.recently_closed(&self.sandbox) {
                return done(Ok(()));
            }
            return done(Err(MOVED.into()));
        };
        let mut b = self.live.batch.lock().unwrap();
        if b.stopped {
            drop(b);
            return done(Err("the live-sandbox writer stopped".into()));
        }
        b.rows.push(Pending { logged: Logged { sandbox: self.sandbox.clone(), twin: self.twin.clone(), epoch, row, committed: self.committed.clone() }, done });
        drop(b);
        self.live.wake.notify_one();
    }

    fn durable_through(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    fn unavailable(&self) -> Option<String> {
        if !self.live.ownership.serving() {
            return Some(LEASE_LAPSED.to_string());
        }
        self.live.failing().map(|_| UNAVAILABLE.to_string())
    }

    fn read(&self, from: u64, to: u64, limit: usize, done: Box<dyn FnOnce(Result<Vec<TapeRow>, String>) + Send>) {
        let (pool, sandbox, twin) = (self.live.pool.clone(), self.sandbox.clone(), self.twin.clone());
        self.live.runtime.spawn(async move {
            let read = async {
                let c = pool.get().await?;
                let st = c.prepare_cached("SELECT first_seq, rows FROM live_segments WHERE sandbox_id = $1 AND twin = $2 AND last_seq >= $3 ORDER BY last_seq").await?;
                let segments = c.query(&st, &[&&*sandbox, &&*twin, &(from.min(i64::MAX as u64) as i64)]).await?;
                let mut range = RangeRows::new(from, to, limit);
                for s in &segments {
                    if !range.wants(s.get::<_, i64>(0).max(0) as u64) {
                        break;
                    }
                    range.add(s.get(1), &sandbox)?;
                }
                Ok::<_, StorageError>(range.rows())
            };
            done(read.await.map_err(|e| e.to_string()));
        });
    }
}

struct Writer {
    pool: Pool,
    batch: Arc<Mutex<Batch>>,
    wake: Arc<tokio::sync::Notify>,
    failing: Arc<Failing>,
    ownership: Arc<Ownership>,
}

impl Writer {
    async fn run(self) {
        loop {
            let (entries, pending, stopped) = {
                let mut b = self.batch.lock().unwrap();
                (std::mem::take(&mut b.ops), std::mem::take(&mut b.rows), b.stopped)
            };
            if entries.is_empty() && pending.is_empty() {
                if stopped {
                    break;
                }
                self.wake.notified().await;
                continue;
            }
            // Who waits is kept apart from what is written: the commit's future must be
            // `Send`, and a waiter's callback need not be `Sync`.
            let (ops, op_dones): (Vec<Op>, Vec<Option<Done>>) = entries.into_iter().map(|e| (e.op, e.done)).unzip();
            let (rows, row_dones): (Vec<Logged>, Vec<Done>) = pending.into_iter().map(|p| (p.logged, p.done)).unzip();
            // Encoding and compressing megabytes is a blocking thread's work, not an async
            // worker's that other tenants' requests wait for.
            let (rows, segments) = tokio::task::spawn_blocking(move || {
                let segments = Segments::of(&rows);
                (rows, segments)
            })
            .await
            .expect("encoding segments does not panic");
            let mut retry = RETRY_FIRST;
            let fenced = loop {
                match commit(&self.pool, &self.ownership.host, &ops, &segments).await {
                    Ok(fenced) => break fenced,
                    Err(e) => {
                        let first = self.failing.fail(e.to_string());
                        if first {
                            tracing::error!(error = %e, entries = ops.len() + rows.len(), "committing live sandboxes to PostgreSQL failed; holding the batch and retrying");
                        }
                        tokio::time::sleep(retry).await;
                        retry = (retry * 2).min(RETRY_MAX);
                    }
                }
            };
            if self.failing.recover() {
                tracing::info!("committing live sandboxes to PostgreSQL works again; the held rows are committed");
            }
            for (sandbox, epoch) in &fenced {
                self.ownership.lose(sandbox, *epoch);
            }
            for (r, done) in rows.into_iter().zip(row_dones) {
                if fenced.contains(&(r.sandbox.to_string(), r.epoch)) {
                    done(Err(MOVED.into()));
                    continue;
                }
                r.committed.fetch_max(r.row.seq, Ordering::Release);
                done(Ok(()));
            }
            for op in &ops {
                if let Op::Close { sandbox, .. } = op {
                    self.ownership.closed(sandbox);
                }
            }
            for done in op_dones.into_iter().flatten() {
                done(Ok(()));
            }
        }
    }
}

/// A commit's rows, each tape's (under one epoch) as one compressed segment, as the
/// statement that inserts them takes them.
struct Segments {
    sandboxes: Vec<Arc<str>>,
    twins: Vec<Arc<str>>,
    epochs: Vec<i64>,
    firsts: Vec<i64>,
    lasts: Vec<i64>,
    stored: Vec<Vec<u8>>,
}

impl Segments {
    /// The parameters of [`INSERT_FENCED`].
    fn params<'a>(&'a self, host: &'a str) -> SegmentParams<'a> {
        SegmentParams {
            sandboxes: self.sandboxes.iter().map(|s| &**s).collect(),
            twins: self.twins.iter().map(|s| &**s).collect(),
            stored: self.stored.iter().map(|s| &s[..]).collect(),
            segments: self,
            host,
        }
    }

    /// The (sandbox, epoch) pairs whose segments [`INSERT_FENCED`] refused: the sandbox is
    /// not this host's at that epoch any more. `held` is what its fence read.
    fn fenced(&self, held: &[tokio_postgres::Row]) -> HashSet<(String, i64)> {
        let held: HashMap<String, i64> = held.iter().map(|r| (r.get(0), r.get(1))).collect();
        let mut fenced = HashSet::new();
        for (i, sandbox) in self.sandboxes.iter().enumerate() {
            if held.get(&**sandbox) != Some(&self.epochs[i]) {
                fenced.insert((sandbox.to_string(), self.epochs[i]));
            }
        }
        fenced
    }

    fn of(rows: &[Logged]) -> Segments {
        let mut at: HashMap<(&str, &str, i64), usize> = HashMap::new();
        // A repeated answer is written once a segment, then referred to.
        let mut tapes: Vec<(&Logged, Segment, RecentBodies)> = Vec::new();
        let mut encoded = Vec::new();
        for r in rows {
            let i = *at.entry((&*r.sandbox, &*r.twin, r.epoch)).or_insert_with(|| {
                tapes.push((r, Segment::default(), RecentBodies::default()));
                tapes.len() - 1
            });
            let (_, segment, written) = &mut tapes[i];
            encoded.clear();
            encode_row(&mut encoded, &r.row, written.refer(r.row.seq, &r.row.response_body.0));
            segment.push_encoded(r.row.seq, &encoded);
        }
        let mut out = Segments { sandboxes: Vec::new(), twins: Vec::new(), epochs: Vec::new(), firsts: Vec::new(), lasts: Vec::new(), stored: Vec::new() };
        for (r, segment, _) in tapes {
            out.sandboxes.push(r.sandbox.clone());
            out.twins.push(r.twin.clone());
            out.epochs.push(r.epoch);
            out.firsts.push(segment.first as i64);
            out.lasts.push(segment.last as i64);
            out.stored.push(lz4_flex::compress_prepend_size(&segment.payload));
        }
        out
    }
}

/// [`INSERT_FENCED`]'s parameters, borrowed from the segments.
struct SegmentParams<'a> {
    sandboxes: Vec<&'a str>,
    twins: Vec<&'a str>,
    stored: Vec<&'a [u8]>,
    segments: &'a Segments,
    host: &'a str,
}

impl SegmentParams<'_> {
    fn refs(&self) -> [&(dyn tokio_postgres::types::ToSql + Sync); 7] {
        let s = self.segments;
        [&self.sandboxes, &self.twins, &s.firsts, &s.lasts, &s.epochs, &self.stored, &self.host]
    }
}

/// One transaction: each tape's rows as one segment, then the ops, in the order they came.
/// Returns the (sandbox, epoch) pairs whose rows were refused because this host no longer
/// owns the sandbox at that epoch.
async fn commit(pool: &Pool, host: &str, ops: &[Op], segments: &Segments) -> Result<HashSet<(String, i64)>, StorageError> {
    let mut c = pool.get().await?;
    if ops.iter().all(|op| matches!(op, Op::Touch { .. } | Op::Flush)) {
        return commit_pipelined(&c, host, ops, segments).await;
    }
    let tx = c.transaction().await?;
    let mut fenced = HashSet::new();
    // Every segment in one statement, and every run of touches in one more: a statement is
    // a round trip, and a commit carries rows of a hundred sandboxes.
    if !segments.stored.is_empty() {
        let insert = tx.prepare_cached(INSERT_FENCED).await?;
        let rows = tx.query(&insert, &segments.params(host).refs()).await?;
        fenced = segments.fenced(&rows);
    }
    let mut touches: Vec<(&str, i64)> = Vec::new();
    for op in ops {
        if let Op::Touch { sandbox, idle_deadline_ms } = op {
            touches.push((sandbox, *idle_deadline_ms as i64));
            continue;
        }
        touch(&tx, host, &mut touches).await?;
        match op {
            Op::Put(record) => {
                let text = serde_json::to_string(record).map_err(|e| StorageError::Corrupt(e.to_string()))?;
                tx.execute(
                    "INSERT INTO live_sandboxes (id, record, team_id, expires_at_ms, idle_deadline_ms, owner, epoch) VALUES ($1, $2, $3, $4, $5, $6, 1)
                     ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record, team_id = EXCLUDED.team_id, expires_at_ms = EXCLUDED.expires_at_ms, idle_deadline_ms = EXCLUDED.idle_deadline_ms
                     WHERE live_sandboxes.owner = EXCLUDED.owner AND live_sandboxes.closed IS NULL",
                    &[&record.id, &text, &record.team_id, &(record.expires_at_ms as i64), &(record.idle_deadline_ms as i64), &host],
                )
                .await?;
            }
            Op::Touch { .. } => unreachable!("touches are gathered above"),
            Op::Close { sandbox, tombstone } => {
                let t = StoredTombstone { team_id: tombstone.team_id.clone(), token_hash: tombstone.token_hash.clone(), reason: tombstone.reason.as_str().to_string(), run_id: tombstone.run_id.clone() };
                let text = serde_json::to_string(&t).map_err(|e| StorageError::Corrupt(e.to_string()))?;
                // Only the owner closes a sandbox; one that moved was not this host's to close.
                let seq: Option<i64> = tx
                    .query_opt(
                        "UPDATE live_sandboxes SET record = NULL, closed = $2, closed_seq = nextval('live_closed_seq')
                         WHERE id = $1 AND owner = $3 AND closed IS NULL RETURNING closed_seq",
                        &[sandbox, &text, &host],
                    )
                    .await?
                    .map(|r| r.get(0));
                let Some(seq) = seq else { continue };
                tx.execute("DELETE FROM live_segments WHERE sandbox_id = $1", &[sandbox]).await?;
                if seq % 1024 == 0 {
                    tx.execute("DELETE FROM live_sandboxes WHERE closed_seq IS NOT NULL AND closed_seq <= $1", &[&(seq - MAX_TOMBSTONES)]).await?;
                }
            }
            Op::Flush => {}
        }
    }
    touch(&tx, host, &mut touches).await?;
    tx.commit().await?;
    Ok(fenced)
}

/// A batch of segments and idle-clock moves only, which most are: its statements (BEGIN,
/// the fenced insert, the touches, COMMIT) are sent together and answered together, one
/// round trip instead of four, and every answer of the batch waits for it. Should one fail,
/// PostgreSQL refuses the rest of the transaction and the COMMIT rolls it back; the batch
/// is tried again like any failed one.
async fn commit_pipelined(c: &deadpool_postgres::Client, host: &str, ops: &[Op], segments: &Segments) -> Result<HashSet<(String, i64)>, StorageError> {
    let (ids, deadlines): (Vec<&str>, Vec<i64>) = ops
        .iter()
        .filter_map(|op| match op {
            Op::Touch { sandbox, idle_deadline_ms } => Some((&**sandbox, *idle_deadline_ms as i64)),
            _ => None,
        })
        .unzip();
    // Prepared once a connection; after that no round trip.
    let insert = c.prepare_cached(INSERT_FENCED).await?;
    let touch = c.prepare_cached(TOUCH).await?;
    let params = segments.params(host);
    let inserted = async {
        match segments.stored.is_empty() {
            true => Ok(Vec::new()),
            false => c.query(&insert, &params.refs()).await,
        }
    };
    let touched = async {
        match ids.is_empty() {
            true => Ok(0),
            false => c.execute(&touch, &[&ids, &deadlines, &host]).await,
        }
    };
    // `join!` polls each in turn, and a statement is sent on its first poll: all four go out
    // before any answer is awaited. Every one is awaited, so none is left half-read.
    let (begun, inserted, touched, committed) = tokio::join!(c.batch_execute("BEGIN"), inserted, touched, c.batch_execute("COMMIT"));
    begun?;
    let rows = inserted?;
    touched?;
    committed?;
    Ok(segments.fenced(&rows))
}

/// The fence, in the same statement as the insert (one round trip, which every answer waits
/// for): which sandboxes this host owns, at which epoch, read under a share lock that a
/// claim by another host (an update of the row) waits behind until this commit ends. A
/// claim that came first has bumped the epoch already, and its segments are not inserted.
/// Rows served as this host closed a sandbox go with its tape.
const INSERT_FENCED: &str = "WITH fence AS (
         SELECT id, epoch, closed IS NOT NULL AS closed FROM live_sandboxes WHERE id = ANY($1) AND owner = $7 FOR SHARE
     ), inserted AS (
         INSERT INTO live_segments (sandbox_id, twin, first_seq, last_seq, epoch, rows)
         SELECT u.s, u.t, u.f, u.l, u.e, u.r FROM UNNEST($1::TEXT[], $2::TEXT[], $3::BIGINT[], $4::BIGINT[], $5::BIGINT[], $6::BYTEA[]) AS u(s, t, f, l, e, r)
         JOIN fence ON fence.id = u.s AND fence.epoch = u.e AND NOT fence.closed
         ON CONFLICT DO NOTHING
     )
     SELECT id, epoch FROM fence";

/// Idle clocks move forward only, and only for this host's open sandboxes.
const TOUCH: &str = "UPDATE live_sandboxes AS l SET idle_deadline_ms = GREATEST(l.idle_deadline_ms, u.ms)
     FROM UNNEST($1::TEXT[], $2::BIGINT[]) AS u(id, ms) WHERE l.id = u.id AND l.closed IS NULL AND l.owner = $3";

/// Move the idle clocks of `touches` (a run of consecutive touches, so they keep their place
/// among the ops), in one statement.
async fn touch(tx: &deadpool_postgres::Transaction<'_>, host: &str, touches: &mut Vec<(&str, i64)>) -> Result<(), StorageError> {
    if touches.is_empty() {
        return Ok(());
    }
    let (ids, deadlines): (Vec<&str>, Vec<i64>) = touches.drain(..).unzip();
    tx.execute(TOUCH, &[&ids, &deadlines, &host]).await?;
    Ok(())
}

/// A sandbox's record as stored, with the idle clock its own column moved on since.
fn record_of(id: &str, text: Option<&str>, idle_deadline_ms: i64) -> Result<SandboxRecord, String> {
    let mut record = parse_record(Some(id), text)?;
    record.idle_deadline_ms = record.idle_deadline_ms.max(idle_deadline_ms.max(0) as u64);
    Ok(record)
}

fn parse_tombstone(text: &str) -> Result<Tombstone, String> {
    let t = serde_json::from_str::<StoredTombstone>(text).map_err(|e| format!("its tombstone is not a tombstone: {e}"))?;
    let reason = CloseReason::parse(&t.reason).ok_or_else(|| format!("`{}` is not a reason a sandbox closes for", t.reason))?;
    Ok(Tombstone { team_id: t.team_id, token_hash: t.token_hash, reason, run_id: t.run_id })
}

/// What a host starts with: every sandbox no live host owns, claimed for this one (a
/// malformed record moved to `live_quarantine`), and the newest tombstones.
async fn load(pool: &Pool, ownership: &Ownership) -> Result<Restored, StorageError> {
    let mut c = pool.get().await?;
    let mut out = Restored::default();
    let mut bad: Vec<(String, &str, Option<String>, String)> = Vec::new();
    let claimed = c
        .query(
            "UPDATE live_sandboxes s SET owner = $1, epoch = s.epoch + 1
             WHERE s.closed IS NULL AND s.record IS NOT NULL
               AND (s.owner IS NULL OR s.owner = $1 OR NOT EXISTS (SELECT 1 FROM live_hosts h WHERE h.id = s.owner AND h.lease_until > now()))
             RETURNING s.id, s.record, s.idle_deadline_ms, s.epoch",
            &[&ownership.host],
        )
        .await?;
    for r in claimed {
        let (id, text, idle, epoch): (String, Option<String>, i64, i64) = (r.get(0), r.get(1), r.get(2), r.get(3));
        match record_of(&id, text.as_deref(), idle) {
            Ok(record) => {
                ownership.own(&id, epoch);
                out.open.push(record);
            }
            Err(why) => bad.push((id, "sandbox", text, why)),
        }
    }
    out.open.sort_by(|a, b| a.id.cmp(&b.id));
    for r in c.query("SELECT id, closed FROM live_sandboxes WHERE closed IS NOT NULL ORDER BY closed_seq DESC LIMIT $1", &[&MAX_TOMBSTONES]).await? {
        let (id, text): (String, String) = (r.get(0), r.get(1));
        match parse_tombstone(&text) {
            Ok(t) => out.closed.push((id, t)),
            Err(why) => bad.push((id, "tombstone", Some(text), why)),
        }
    }
    out.closed.reverse();
    if !bad.is_empty() {
        let now = crate::sandbox::unix_ms(std::time::SystemTime::now()) as i64;
        let tx = c.transaction().await?;
        for (id, what, text, why) in &bad {
            tracing::error!(sandbox = %id, what, error = %why, "a malformed live-sandbox record was moved to live_quarantine; start goes on without it");
            tx.execute("INSERT INTO live_quarantine (id, what, content, error, at_ms) VALUES ($1, $2, $3, $4, $5)", &[id, what, text, why, &now]).await?;
            tx.execute("DELETE FROM live_sandboxes WHERE id = $1", &[id]).await?;
            out.quarantined.push(id.clone());
        }
        tx.commit().await?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{append, read, record, row};
    use super::super::wait;
    use super::*;
    use tokio_postgres::NoTls;

    const LEASE: Duration = Duration::from_secs(2);

    async fn open(url: &str) -> PgLiveStore {
        PgLiveStore(PgLive::connect(url, Durability::Window, LEASE).await.unwrap())
    }

    /// The next host (or this one restarted), once the one before handed its sandboxes
    /// back on its way out.
    async fn hand_over(before: PgLiveStore, url: &str) -> PgLiveStore {
        before.0.release().await.unwrap();
        drop(before);
        open(url).await
    }

    /// Make `host`'s lease run out now, as if it had been paused past it: it stops renewing
    /// (a paused process does), and its lease in the database ends.
    async fn expire_lease(url: &str, host: &PgLiveStore) {
        host.0.renewing.abort();
        let (c, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(conn);
        c.execute("UPDATE live_hosts SET lease_until = now() - INTERVAL '1 second' WHERE id = $1", &[&host.0.ownership.host]).await.unwrap();
    }

    /// A record whose clocks run far into the future.
    fn fresh(id: &str) -> SandboxRecord {
        let mut r = record(id);
        (r.expires_at_ms, r.idle_deadline_ms) = (u64::MAX / 4, u64::MAX / 4);
        r
    }

    async fn segments(url: &str) -> i64 {
        let (c, conn) = tokio_postgres::connect(url, NoTls).await.unwrap();
        tokio::spawn(conn);
        c.query_one("SELECT COUNT(*) FROM live_segments", &[]).await.unwrap().get(0)
    }

    fn seqs(rows: Vec<TapeRow>) -> Vec<u64> {
        rows.iter().map(|r| r.seq).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_waits_for_its_commit_and_another_host_reads_the_sandbox_back() {
        let url = crate::storage::test_postgres::database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        wait(|d| live.put(record("sbx_b"), d)).await.unwrap();
        let ja = live.journal("sbx_a", "acme");
        for seq in 1..=3 {
            append(&ja, row(seq)).await;
            assert_eq!(ja.durable_through(), seq, "answered only once committed");
        }
        live.touch("sbx_a", 99);
        live.close("sbx_b", &Tombstone { team_id: "team_1".into(), token_hash: "h".into(), reason: CloseReason::Finalized, run_id: Some("run_1".into()) });
        wait(|d| live.flush(d)).await.unwrap();

        // The next host, once this one is gone.
        drop(ja);
        let other = hand_over(live, &url).await;
        let back = other.load().unwrap();
        assert_eq!(back.open.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["sbx_a"]);
        assert_eq!(back.open[0].idle_deadline_ms, 99, "the idle clock is kept");
        assert_eq!(back.closed.len(), 1);
        assert_eq!((back.closed[0].0.as_str(), back.closed[0].1.run_id.as_deref()), ("sbx_b", Some("run_1")));
        let journal = other.journal("sbx_a", "acme");
        assert_eq!(seqs(read(&journal, 1, u64::MAX, usize::MAX).await), [1, 2, 3]);
        assert_eq!(seqs(read(&journal, 2, 3, 10).await), [2], "a range");
        assert_eq!(seqs(read(&journal, 1, u64::MAX, 2).await), [1, 2], "a page");
        assert_eq!(other.load().unwrap().open.len(), 1, "loading again reads the database again");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rows_appended_together_share_segments_and_a_closed_sandbox_keeps_none() {
        let url = crate::storage::test_postgres::database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let (ja, jb) = (live.journal("sbx_a", "acme"), live.journal("sbx_a", "other"));
        for seq in 1..=10 {
            let mut a = (*row(seq)).clone();
            a.response_body = pome_tape::Body(bytes::Bytes::from(vec![0xff, seq as u8, 0x00]));
            // Appended without waiting, as a busy store does: they commit together.
            ja.append(Arc::new(a), Box::new(|r| r.unwrap()));
            jb.append(row(seq), Box::new(|r| r.unwrap()));
        }
        wait(|d| live.flush(d)).await.unwrap();
        let n = segments(&url).await;
        assert!(n < 20, "rows committed together share segments ({n} for 20 rows)");
        let all = read(&ja, 1, u64::MAX, usize::MAX).await;
        assert_eq!(seqs(all.clone()), (1..=10).collect::<Vec<_>>());
        assert_eq!(all[4].response_body.0[..], [0xff, 5, 0x00], "bodies are bytes");
        assert_eq!(read(&jb, 1, u64::MAX, usize::MAX).await, (1..=10).map(|s| (*row(s)).clone()).collect::<Vec<_>>());
        assert_eq!(seqs(read(&ja, 3, 8, 100).await), [3, 4, 5, 6, 7], "a range inside a segment");

        live.close("sbx_a", &Tombstone { team_id: "team_1".into(), token_hash: "h".into(), reason: CloseReason::Discarded, run_id: None });
        // A request queued before the discard, served after it.
        append(&ja, row(11)).await;
        wait(|d| live.flush(d)).await.unwrap();
        assert_eq!(segments(&url).await, 0, "nothing of a closed sandbox stays in the database");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sandbox_has_one_owner_and_another_host_claims_it_only_once_the_owners_lease_ran_out() {
        let url = crate::storage::test_postgres::database().await;
        let a = open(&url).await;
        a.0.advertise("http://a.example:1").await.unwrap();
        wait(|d| a.put(record("sbx_a"), d)).await.unwrap();
        let ja = a.journal("sbx_a", "acme");
        for seq in 1..=3 {
            append(&ja, row(seq)).await;
        }

        let b = open(&url).await;
        assert!(b.load().unwrap().open.is_empty(), "a second host claims nothing a live host owns");
        match b.0.directory("sbx_a").await.unwrap() {
            Directory::Open { owner, url, alive } => {
                assert_eq!((owner.as_deref(), url.as_str(), alive), (Some(a.0.ownership.host.as_str()), "http://a.example:1", true));
            }
            other => panic!("{other:?}"),
        }
        assert!(b.0.claim("sbx_a").await.unwrap().is_none(), "refused while the owner's lease holds");
        assert!(matches!(b.0.directory("sbx_nope").await.unwrap(), Directory::Unknown));

        // The owner dies: nothing renews its lease, and once it ran out the sandbox is B's.
        drop((ja, a));
        let started = std::time::Instant::now();
        let record = loop {
            if let Some(r) = b.0.claim("sbx_a").await.unwrap() {
                break r;
            }
            assert!(started.elapsed() < LEASE * 3, "claimed once the dead owner's lease ran out");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(started.elapsed() >= LEASE / 2, "not before the lease ran out ({:?})", started.elapsed());
        assert_eq!(record.id, "sbx_a");
        let jb = b.journal("sbx_a", "acme");
        assert_eq!(seqs(read(&jb, 1, u64::MAX, usize::MAX).await), [1, 2, 3], "the tape goes on where the dead host left it");
        append(&jb, row(4)).await;
        assert_eq!(seqs(read(&jb, 1, u64::MAX, usize::MAX).await), [1, 2, 3, 4]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_owner_paused_past_its_lease_commits_nothing_for_the_sandbox_it_lost() {
        let url = crate::storage::test_postgres::database().await;
        let a = open(&url).await;
        let mut lost = a.0.take_lost().unwrap();
        wait(|d| a.put(record("sbx_a"), d)).await.unwrap();
        let ja = a.journal("sbx_a", "acme");
        append(&ja, row(1)).await;

        // A is "paused": its lease runs out in the database while it still believes it serves.
        let b = open(&url).await;
        expire_lease(&url, &a).await;
        assert!(b.0.claim("sbx_a").await.unwrap().is_some(), "B claims the sandbox of a host whose lease ran out");
        let jb = b.journal("sbx_a", "acme");
        append(&jb, row(2)).await;

        // A wakes and serves a request from before: its row is refused, its answer never given.
        let refused = wait(|d| ja.append(row(2), d)).await.expect_err("the row of a lost sandbox is not committed");
        assert_eq!(refused, MOVED);
        assert_eq!(lost.recv().await.as_deref(), Some("sbx_a"), "A is told to drop the sandbox");
        assert_eq!(wait(|d| ja.append(row(3), d)).await.expect_err("refused at once from now on"), MOVED);
        assert_eq!(seqs(read(&jb, 1, u64::MAX, usize::MAX).await), [1, 2], "only B's row 2 is on the tape");
        assert_eq!(read(&jb, 2, 3, 1).await[0].request_id, "r2");

        // A closing it now changes nothing: only the owner closes a sandbox.
        a.close("sbx_a", &Tombstone { team_id: "team_1".into(), token_hash: "h".into(), reason: CloseReason::Discarded, run_id: None });
        wait(|d| a.flush(d)).await.unwrap();
        assert!(matches!(b.0.directory("sbx_a").await.unwrap(), Directory::Open { .. }));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_host_whose_lease_lapsed_answers_unavailable_and_drops_what_it_lost_before_serving_again() {
        let url = crate::storage::test_postgres::database().await;
        let a = PgLiveStore(PgLive::connect(&url, Durability::Window, Duration::from_millis(600)).await.unwrap());
        let mut lost = a.0.take_lost().unwrap();
        wait(|d| a.put(record("sbx_a"), d)).await.unwrap();
        wait(|d| a.put(record("sbx_b"), d)).await.unwrap();
        let ja = a.journal("sbx_a", "acme");
        // A is paused past its lease (as it finds when it resumes), and meanwhile B claims
        // one of its sandboxes.
        let b = open(&url).await;
        expire_lease(&url, &a).await;
        a.0.ownership.serving_until_ms.store(0, Ordering::Release);
        assert!(ja.unavailable().is_some(), "a host past its lease serves nothing");
        assert!(b.0.claim("sbx_a").await.unwrap().is_some());
        // A resumes: it renews, finds sbx_a gone, and serves sbx_b again.
        tokio::spawn(keep_renewing(a.0.pool.clone(), a.0.ownership.clone()));
        assert_eq!(tokio::time::timeout(Duration::from_secs(10), lost.recv()).await.unwrap().as_deref(), Some("sbx_a"));
        let started = std::time::Instant::now();
        while a.journal("sbx_b", "acme").unavailable().is_some() {
            assert!(started.elapsed() < Duration::from_secs(10), "serving again once renewed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        append(&a.journal("sbx_b", "acme"), row(1)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn creates_on_several_hosts_at_once_never_pass_the_teams_quota() {
        let url = crate::storage::test_postgres::database().await;
        let hosts = [Arc::new(open(&url).await), Arc::new(open(&url).await), Arc::new(open(&url).await)];
        let mut creates = tokio::task::JoinSet::new();
        for i in 0..12 {
            let host = hosts[i % 3].clone();
            creates.spawn(async move { host.0.create(&fresh(&format!("sbx_{i}")), 5).await.unwrap() });
        }
        let mut made = 0;
        while let Some(r) = creates.join_next().await {
            match r.unwrap() {
                Ok(()) => made += 1,
                Err(used) => assert_eq!(used, 5),
            }
        }
        assert_eq!(made, 5, "exactly the quota");
        let mut other = fresh("sbx_other");
        other.team_id = "team_2".into();
        assert_eq!(hosts[0].0.create(&other, 5).await.unwrap(), Ok(()), "another team's quota is its own");
        assert_eq!(hosts[1].0.team_records("team_1").await.unwrap().len(), 5, "every host lists the team's sandboxes");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_sandbox_of_a_dead_host_is_closed_by_the_store_s_clock() {
        let url = crate::storage::test_postgres::database().await;
        let a = open(&url).await;
        let mut expired = record("sbx_old");
        (expired.expires_at_ms, expired.idle_deadline_ms) = (1, u64::MAX / 4);
        a.0.create(&expired, 10).await.unwrap().unwrap();
        a.0.create(&fresh("sbx_fresh"), 10).await.unwrap().unwrap();
        let b = open(&url).await;
        assert_eq!(b.0.close_orphans_expired().await.unwrap(), 0, "not while its host lives: the host closes its own");
        expire_lease(&url, &a).await;
        assert_eq!(b.0.close_orphans_expired().await.unwrap(), 1);
        match b.0.directory("sbx_old").await.unwrap() {
            Directory::Closed(t) => assert_eq!(t.reason, CloseReason::LifetimeExpired),
            other => panic!("{other:?}"),
        }
        assert!(matches!(b.0.directory("sbx_fresh").await.unwrap(), Directory::Open { .. }));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_row_appended_while_the_database_is_down_waits_and_is_committed_once_it_is_back() {
        let server = crate::storage::test_postgres::Server::start();
        let url = server.database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let journal = live.journal("sbx_a", "acme");
        append(&journal, row(1)).await;
        assert_eq!(journal.unavailable(), None);

        server.down();
        let (tx, mut answered) = tokio::sync::oneshot::channel();
        journal.append(row(2), Box::new(move |r| tx.send(r).unwrap()));
        let started = std::time::Instant::now();
        while journal.unavailable().is_none() {
            assert!(started.elapsed() < std::time::Duration::from_secs(20), "the journal says the sandbox is unavailable while its row cannot be committed");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(answered.try_recv().is_err(), "no answer while the row is not committed");
        assert_eq!(journal.durable_through(), 1);

        server.up();
        let done = tokio::time::timeout(std::time::Duration::from_secs(30), answered).await.expect("answered once the database is back");
        done.unwrap().unwrap();
        assert_eq!(journal.unavailable(), None, "available again");
        assert_eq!(journal.durable_through(), 2);
        assert_eq!(seqs(read(&journal, 1, u64::MAX, usize::MAX).await), [1, 2], "nothing lost, nothing twice");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_malformed_record_is_quarantined_and_the_start_goes_on() {
        let url = crate::storage::test_postgres::database().await;
        let live = open(&url).await;
        wait(|d| live.put(record("sbx_good"), d)).await.unwrap();
        let (c, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(conn);
        c.execute("INSERT INTO live_sandboxes (id, record) VALUES ('sbx_bad', '{\"id\": 7')", &[]).await.unwrap();
        let back = hand_over(live, &url).await.load().unwrap();
        assert_eq!(back.open.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["sbx_good"]);
        assert_eq!(back.quarantined, ["sbx_bad"]);
        let kept: i64 = c.query_one("SELECT COUNT(*) FROM live_quarantine WHERE id = 'sbx_bad'", &[]).await.unwrap().get(0);
        assert_eq!(kept, 1, "kept for the operator to look at");
    }
}
