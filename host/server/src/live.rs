//! Live sandboxes on disk: the write-ahead tape. Everything needed to bring an open sandbox
//! back after a restart — its record (id, team, token, twins, seeds, task version, clocks,
//! idempotency key) and every tape row — goes through the one [`LiveStore`] interface, so
//! the same record can later live in a database several hosts share.
//!
//! A twin store appends each row to the row log ([`log`]) itself, with one `write`; the
//! SQLite implementation's writer thread moves logged rows into `live.db` every
//! [`COMMIT_EVERY`], the rows of every sandbox in one transaction, each tape's rows as one
//! compressed segment, and commits sandbox records (create, touch, close) as they come.
//! `--durability` says when an answer may leave:
//! - `sync`: after its row is logged and the log fsynced, one fsync for every answer waiting
//!   (a crash, `kill -9` or power cut loses no answered call);
//! - `window` (the default): after its row is logged, which puts it in the operating
//!   system's hands (a crash or `kill -9` loses no answered call); the row is fsynced
//!   within about [`WINDOW`] (in the database's log once committed there, or in the row log
//!   if commits stall), so only a power cut can lose the calls of that window;
//! - `memory`: nothing is written; a restart loses every open sandbox.
//!
//! A write that fails (a full disk, an I/O error) never leaves a hole in a tape: the row is
//! held and tried again, with backoff, until it goes through, and so is a batch the database
//! refuses. Meanwhile the answers that wait for them keep waiting, and twin stores refuse new
//! requests with 503 ([`Journal::unavailable`]) rather than serve what could not be
//! recorded; they carry on by themselves once storage does.

mod log;
pub mod postgres;
mod segment;

pub use postgres::{PgLive, PgLiveStore};

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use pome_runtime::store::Journal;
use pome_tape::TapeRow;
use rusqlite::{Connection, OptionalExtension as _, params};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::sandbox::{CloseReason, SandboxMeta, Tombstone};
use segment::{Segment, encode_row};
use crate::storage::StorageError;

/// When an answered twin call is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Before its answer is sent.
    Sync,
    /// Logged before its answer is sent, fsynced within about [`WINDOW`]. The default: a
    /// commit without fsync costs tens of microseconds and is shared by every answer of its
    /// batch, while `sync`'s fsync per batch costs 30-40 % of the mixed bench's throughput
    /// at 64 connections on the development machine. A crash or `kill -9` loses nothing
    /// answered; a power cut loses at most the last window.
    #[default]
    Window,
    /// Never: live sandboxes end with the process.
    Memory,
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Durability, String> {
        match s {
            "sync" => Ok(Durability::Sync),
            "window" => Ok(Durability::Window),
            "memory" => Ok(Durability::Memory),
            other => Err(format!("`{other}` is not a durability mode: sync, window or memory")),
        }
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Durability::Sync => "sync",
            Durability::Window => "window",
            Durability::Memory => "memory",
        })
    }
}

/// About the longest a logged row waits to be fsynced in `window` mode: what a power cut
/// (not a crash) may lose. The writer commits logged rows to the database every
/// [`COMMIT_EVERY`] and the syncer fsyncs the database's log [`SYNC_EVERY`] after; when
/// commits stall past [`STALLED`], the syncer fsyncs the row log files themselves.
pub const WINDOW: Duration = Duration::from_millis(200);
/// How often `window` mode's syncer looks for something to fsync.
const SYNC_EVERY: Duration = Duration::from_millis(50);
/// Syncer passes without a commit after which logged rows are fsynced in the row log:
/// [`COMMIT_EVERY`] plus a pass's slack, so the row log is fsynced only when the writer is
/// slow or failing.
const STALLED: u32 = 3;
/// How often the writer moves logged rows into the database. Nobody waits for it (answers
/// wait for the log), so it is long enough that a busy tape's rows of one interval make one
/// segment, and short enough that rows leave the stores' memory soon after.
const COMMIT_EVERY: Duration = Duration::from_millis(100);
/// Logged bytes that wake the writer before [`COMMIT_EVERY`] is up, so a burst of large
/// rows is not held twice over (in the stores and waiting) for long.
const COMMIT_BYTES: usize = 8 << 20;
/// How long the writer waits before trying a failed batch again, at first and at most:
/// short enough that a freed disk is noticed within a second, long enough that a broken
/// disk is not hammered.
const RETRY_FIRST: Duration = Duration::from_millis(20);
const RETRY_MAX: Duration = Duration::from_secs(1);

/// Everything but the tape that an open sandbox needs to come back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SandboxRecord {
    pub id: String,
    pub team_id: String,
    /// SHA-256 (hex) of the agent's token: the agent continues with its token after a
    /// restart, and the disk never holds it.
    #[serde(default)]
    pub token_hash: String,
    /// The agent and discard tokens in clear, as an older pome wrote them: read, hashed into
    /// `token_hash` at load (and the record rewritten without them), never written.
    #[serde(default, rename = "token", skip_serializing)]
    pub legacy_token: Option<String>,
    #[serde(default, rename = "discard_token", skip_serializing)]
    pub legacy_discard_token: Option<String>,
    /// Primary twin first, with the seed text each booted from ("" = the twin's default).
    pub twins: Vec<String>,
    pub seeds: Vec<String>,
    /// The digest of each twin's component, so a restart on other twin code is noticed.
    #[serde(default)]
    pub twin_digests: Vec<String>,
    pub meta: SandboxMeta,
    pub idempotency_key: Option<String>,
    /// Wall-clock times, Unix milliseconds.
    pub created_at_ms: u64,
    pub expires_at_ms: u64,
    pub idle_deadline_ms: u64,
}

/// What a start finds on disk.
#[derive(Default)]
pub struct Restored {
    /// Open sandboxes; each twin's tape is read back through its journal as it is replayed.
    pub open: Vec<SandboxRecord>,
    /// Closed sandboxes, oldest first: callers with the token still hear 410, not 404.
    pub closed: Vec<(String, Tombstone)>,
    /// Records that could not be read (malformed JSON, a wrong type, twins without seeds),
    /// moved into the `quarantine` table: one bad record never stops a start.
    pub quarantined: Vec<String>,
}

/// Called once a write is as durable as the mode promises, or with why it is not.
pub type Done = Box<dyn FnOnce(Result<(), String>) + Send>;

/// The durable record of live sandboxes. One implementation today (SQLite, one host); the
/// interface is what a shared database would implement.
pub trait LiveStore: Send + Sync {
    /// Record a new sandbox; `done` runs once it is committed (in every mode: the create's
    /// answer hands out the token, so the sandbox must exist after a crash).
    fn put(&self, record: SandboxRecord, done: Done);
    /// The journal the `twin` store of `sandbox` writes its rows to and reads older ones
    /// back from (rows leave the store's memory once committed here).
    fn journal(&self, sandbox: &str, twin: &str) -> Arc<dyn Journal>;
    /// The sandbox's idle clock moved.
    fn touch(&self, sandbox: &str, idle_deadline_ms: u64);
    /// The sandbox closed for good: its tape goes, a tombstone stays.
    fn close(&self, sandbox: &str, tombstone: &Tombstone);
    /// Everything written so far is committed when `done` runs.
    fn flush(&self, done: Done);
    /// Read back every sandbox (at start, before serving).
    fn load(&self) -> Result<Restored, StorageError>;
    fn mode(&self) -> Durability;
}

/// Wait for a `Done`-style write from async code.
pub async fn wait(f: impl FnOnce(Done)) -> Result<(), String> {
    let (tx, rx) = oneshot::channel();
    f(Box::new(move |r| {
        let _ = tx.send(r);
    }));
    rx.await.unwrap_or_else(|_| Err("the live-sandbox writer stopped".into()))
}

enum Op {
    Put(SandboxRecord),
    Touch { sandbox: String, idle_deadline_ms: u64 },
    Close { sandbox: String, tombstone: Tombstone },
    Flush,
}

struct Entry {
    op: Op,
    done: Option<Done>,
}

/// Live sandboxes in their own SQLite database (`live.db`), apart from teams and runs so the
/// tape's write rate never contends with the control plane's.
pub struct SqliteLive {
    queue: Arc<Queue>,
    /// Where twin stores append their rows.
    log: Arc<log::RowLog>,
    mode: Durability,
    path: std::path::PathBuf,
    /// Reader connections kept for reading tapes back (WAL: readers never wait for the
    /// writer).
    readers: Mutex<Vec<Connection>>,
    /// Why the last commit failed, while the writer is retrying it. Read (with the log's
    /// own) by every twin store before it serves a request.
    failing: Arc<Failing>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sandboxes (
    id TEXT PRIMARY KEY,
    -- The SandboxRecord as JSON; NULL once closed (the token goes with it).
    record TEXT,
    idle_deadline_ms INTEGER NOT NULL DEFAULT 0,
    -- The tombstone as JSON once closed.
    closed TEXT,
    closed_seq INTEGER
);
-- The rows of one tape that one commit wrote, first_seq..=last_seq, as one LZ4-compressed
-- segment (`Segment`): under load a commit carries several rows of each busy tape, which
-- then cost one insert and compress against each other (a polled list repeats itself).
-- A rowid table with the key in an index: segments are kilobytes, and a WITHOUT ROWID
-- table would move them around its key's B-tree on every insert.
CREATE TABLE IF NOT EXISTS tape_segments (
    sandbox_id TEXT NOT NULL,
    twin TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    rows BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS tape_segments_key ON tape_segments (sandbox_id, twin, last_seq);
";

/// Closed sandboxes remembered across restarts (as tombstones), newest kept.
const MAX_TOMBSTONES: i64 = 200_000;

#[derive(Serialize, Deserialize)]
struct StoredTombstone {
    team_id: String,
    token_hash: String,
    reason: String,
    run_id: Option<String>,
}

impl SqliteLive {
    /// Open `path` (creating it) and start the writer thread.
    pub fn open(path: &Path, mode: Durability) -> Result<Arc<SqliteLive>, StorageError> {
        let mut conn = connect(path)?;
        if mode != Durability::Sync {
            // A commit writes the log and leaves its fsync to the syncer thread (WAL stays
            // consistent at NORMAL: a power cut loses the newest commits, never the database).
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            // Checkpoints (which fsync) are the syncer's too, off the path answers wait on.
            conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        }
        // The writer's cache holds one commit's pages (100 ms of rows, a few megabytes): a
        // larger one is walked whole at every transaction's end (pcache1Truncate), which cost
        // more CPU than the rows' own writing.
        conn.pragma_update(None, "cache_size", -8192)?;
        conn.execute_batch(SCHEMA)?;
        migrate_rows_table(&mut conn)?;
        let next_log = replay_logs(&mut conn, path)?;
        let log = log::RowLog::open(path, mode, next_log).map_err(|e| StorageError::Corrupt(format!("opening the live-sandbox log beside {}: {e}", path.display())))?;
        let queue = Arc::new(Queue::default());
        let failing = Arc::new(Failing::default());
        let writer_state = Writer { queue: queue.clone(), log: log.clone(), mode, failing: failing.clone(), db: path.to_path_buf() };
        std::thread::Builder::new()
            .name("pome-live-writer".into())
            .spawn(move || writer_state.run(conn))
            .map_err(|e| StorageError::Corrupt(format!("starting the live-sandbox writer: {e}")))?;
        Ok(Arc::new(SqliteLive { queue, log, mode, path: path.to_path_buf(), readers: Mutex::new(Vec::new()), failing }))
    }

    /// Why writes are failing now, if they are.
    pub fn failing(&self) -> Option<String> {
        self.log.failing().or_else(|| self.failing.get())
    }

    /// The committed rows of one tape with `from <= seq < to`, at most `limit`.
    fn read_rows(&self, sandbox: &str, twin: &str, from: u64, to: u64, limit: usize) -> Result<Vec<TapeRow>, StorageError> {
        let conn = match self.readers.lock().unwrap().pop() {
            Some(c) => c,
            None => connect(&self.path)?,
        };
        let rows = (|| {
            let mut st = conn.prepare_cached("SELECT first_seq, rows FROM tape_segments WHERE sandbox_id = ?1 AND twin = ?2 AND last_seq >= ?3 ORDER BY last_seq, rowid")?;
            let mut rows = st.query(params![sandbox, twin, from.min(i64::MAX as u64) as i64])?;
            let mut range = RangeRows::new(from, to, limit);
            while let Some(r) = rows.next()? {
                if !range.wants(r.get::<_, i64>(0)?.max(0) as u64) {
                    break;
                }
                range.add(r.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?, sandbox)?;
            }
            Ok::<_, StorageError>(range.rows())
        })();
        let mut readers = self.readers.lock().unwrap();
        if readers.len() < MAX_READERS {
            readers.push(conn);
        }
        rows
    }

    fn send(&self, op: Op, done: Option<Done>) {
        // A new sandbox is refused at once while storage is failing: its create would
        // otherwise wait for the disk with its slot held.
        if matches!(op, Op::Put(_)) && let Some(why) = self.failing() {
            if let Some(done) = done {
                done(Err(format!("storage is failing: {why}")));
            }
            return;
        }
        let mut q = self.queue.state.lock().unwrap();
        if q.stopped {
            drop(q);
            if let Some(done) = done {
                done(Err("the live-sandbox writer stopped".into()));
            }
            return;
        }
        // A touch goes with the next scheduled commit: a sandbox called about once a
        // second touches about once a second, and a commit (and a writer's wake-up) for each
        // cost more than the calls themselves at a thousand such sandboxes.
        let wake = !matches!(op, Op::Touch { .. }) && q.hurry();
        q.entries.push(Entry { op, done });
        drop(q);
        if wake {
            self.queue.ready.notify_one();
        }
    }
}

impl Drop for SqliteLive {
    fn drop(&mut self) {
        // The writer commits what is logged and queued, then ends.
        self.log.stop();
        self.queue.state.lock().unwrap().stopped = true;
        self.queue.ready.notify_one();
    }
}

/// What the writer thread is given to write: filled by every sandbox, emptied a batch at
/// a time.
#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when something urgent is queued ([`QueueState::urgent`]), and when the
    /// store is dropped.
    ready: Condvar,
}

#[derive(Default)]
struct QueueState {
    entries: Vec<Entry>,
    stopped: bool,
    /// Something cannot wait for the next scheduled commit: an op someone waits on, a
    /// close, or a backlog of logged bytes.
    urgent: bool,
}

impl QueueState {
    /// Mark the queue urgent; whether the writer needs waking for it (it was not already).
    fn hurry(&mut self) -> bool {
        !std::mem::replace(&mut self.urgent, true)
    }
}

impl Queue {
    /// Have the writer commit now rather than at its next [`COMMIT_EVERY`].
    fn hurry(&self) {
        let wake = self.state.lock().unwrap().hurry();
        if wake {
            self.ready.notify_one();
        }
    }
}

fn connect(path: &Path) -> Result<Connection, StorageError> {
    let conn = Connection::open(path)?;
    // WAL: a commit appends to the log; FULL: and fsyncs it, so a committed row survives
    // a power cut, not only a crash.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // Room for a busy minute's pages (64 MiB) before SQLite spills them mid-transaction, and
    // a larger log between checkpoints, which then write each hot page once.
    conn.pragma_update(None, "cache_size", -65536)?;
    conn.pragma_update(None, "wal_autocheckpoint", 8192)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    Ok(conn)
}

/// Reader connections kept open between reads.
const MAX_READERS: usize = 4;

impl Segment {
    /// Store the segment, unless its sandbox is closed: requests queued when a sandbox was
    /// discarded are still served, and their rows must not outlive the sandbox on disk.
    fn insert(&self, conn: &Connection, sandbox: &str, twin: &str) -> Result<(), StorageError> {
        let stored = lz4_flex::compress_prepend_size(&self.payload);
        conn.prepare_cached(
            "INSERT INTO tape_segments (sandbox_id, twin, first_seq, last_seq, rows) SELECT ?1, ?2, ?3, ?4, ?5
             WHERE NOT EXISTS (SELECT 1 FROM sandboxes WHERE id = ?1 AND closed IS NOT NULL)",
        )?
        .execute(params![sandbox, twin, self.first as i64, self.last as i64, stored])?;
        Ok(())
    }
}

/// The rows `from <= seq < to` of one tape, at most `limit`, gathered from its segments in
/// the order they end: one tape's segments never overlap, so the first that starts at `to`
/// or later ends the range. A row written twice (never expected) reads as the later write.
struct RangeRows {
    from: u64,
    to: u64,
    limit: usize,
    rows: std::collections::BTreeMap<u64, TapeRow>,
}

impl RangeRows {
    fn new(from: u64, to: u64, limit: usize) -> RangeRows {
        RangeRows { from, to, limit, rows: Default::default() }
    }

    /// Whether a segment that starts at `first` may hold rows still wanted.
    fn wants(&self, first: u64) -> bool {
        let enough = self.rows.len() >= self.limit && self.rows.last_key_value().is_some_and(|(last, _)| *last < first);
        first < self.to && !enough
    }

    fn add(&mut self, stored: &[u8], sandbox: &str) -> Result<(), StorageError> {
        let segment = Segment::decode(stored).map_err(|e| StorageError::Corrupt(format!("a tape segment of sandbox {sandbox}: {e}")))?;
        self.rows.extend(segment.into_iter().filter(|row| (self.from..self.to).contains(&row.seq)).map(|row| (row.seq, row)));
        Ok(())
    }

    fn rows(self) -> Vec<TapeRow> {
        self.rows.into_values().take(self.limit).collect()
    }
}

/// Move rows a pome before segments stored (`tape_rows`, a row each: its wire form as text,
/// or LZ4-compressed) into one-row segments, once, at open.
fn migrate_rows_table(conn: &mut Connection) -> Result<(), StorageError> {
    let old: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tape_rows')", [], |r| r.get(0))?;
    if !old {
        return Ok(());
    }
    let tx = conn.transaction()?;
    {
        let mut read = tx.prepare("SELECT sandbox_id, twin, seq, row FROM tape_rows ORDER BY sandbox_id, twin, seq")?;
        let mut rows = read.query([])?;
        while let Some(r) = rows.next()? {
            let (sandbox, twin, seq) = (r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?);
            let row: TapeRow = match r.get_ref(3)? {
                rusqlite::types::ValueRef::Blob(b) => lz4_flex::decompress_size_prepended(b).map_err(|e| e.to_string()).and_then(|j| serde_json::from_slice(&j).map_err(|e| e.to_string())),
                rusqlite::types::ValueRef::Text(t) => serde_json::from_slice(t).map_err(|e| e.to_string()),
                other => Err(format!("a stored row of type {:?}", other.data_type())),
            }
            .map_err(|e| StorageError::Corrupt(format!("row {seq} of sandbox {sandbox}: {e}")))?;
            let mut encoded = Vec::new();
            encode_row(&mut encoded, &row, None);
            let mut segment = Segment::default();
            segment.push_encoded(row.seq, &encoded);
            segment.insert(&tx, &sandbox, &twin)?;
        }
    }
    tx.execute_batch("DROP TABLE tape_rows")?;
    tx.commit()?;
    Ok(())
}

/// Put the rows a crash left only in the log files beside `db` into the database (those
/// past what each tape already holds there), then remove the files. Returns the number the
/// next log file takes.
fn replay_logs(conn: &mut Connection, db: &Path) -> Result<u64, StorageError> {
    let io = |e: std::io::Error| StorageError::Corrupt(format!("reading the live-sandbox log beside {}: {e}", db.display()));
    let files = log::log_files(db).map_err(io)?;
    let next = files.last().map_or(1, |(n, _)| n + 1);
    if files.is_empty() {
        return Ok(next);
    }
    /// One tape's replay: the last row the database holds or this replay added, the rows
    /// to add, and the response bodies logged whole, which later rows may refer to.
    #[derive(Default)]
    struct Tape {
        last: u64,
        segment: Segment,
        bodies: std::collections::HashMap<u64, bytes::Bytes>,
        /// A row referred to a body found nowhere: the rows after it are not added.
        broken: bool,
    }
    let mut tapes: std::collections::BTreeMap<(String, String), Tape> = std::collections::BTreeMap::new();
    let tx = conn.transaction()?;
    {
        let mut held = tx.prepare("SELECT COALESCE(MAX(last_seq), 0) FROM tape_segments WHERE sandbox_id = ?1 AND twin = ?2")?;
        let mut holding = tx.prepare("SELECT rows FROM tape_segments WHERE sandbox_id = ?1 AND twin = ?2 AND first_seq <= ?3 AND last_seq >= ?3")?;
        for (_, path) in &files {
            let bytes = bytes::Bytes::from(std::fs::read(path).map_err(io)?);
            let (frames, torn) = log::read_frames(&bytes);
            if torn > 0 {
                // A power cut mid-write (or a disk that refused one): the frames before it
                // are whole, and nothing after it was ever answered in `sync` mode.
                tracing::warn!(file = %path.display(), bytes = torn, "the live-sandbox log ends in a partial frame; it is passed over");
            }
            for (seq, sandbox, twin, part) in frames {
                let key = (sandbox, twin);
                let tape = match tapes.get_mut(&key) {
                    Some(t) => t,
                    None => {
                        let last: i64 = held.query_row(params![key.0, key.1], |r| r.get(0))?;
                        tapes.entry(key.clone()).or_insert(Tape { last: last.max(0) as u64, ..Tape::default() })
                    }
                };
                let response = segment::response_of(part);
                if let Some((_, segment::Response::Inline(body))) = &response {
                    tape.bodies.insert(seq, bytes.slice_ref(body));
                }
                if seq <= tape.last || tape.broken {
                    continue;
                }
                match response {
                    Some((at, segment::Response::SameAs(earlier))) => {
                        // Earlier in the log, or committed (its log file gone) in the database.
                        if !tape.bodies.contains_key(&earlier) {
                            let stored: Option<Vec<u8>> = holding.query_row(params![key.0, key.1, earlier as i64], |r| r.get(0)).optional()?;
                            let row = stored.and_then(|s| Segment::decode(&s).ok()).and_then(|rows| rows.into_iter().find(|r| r.seq == earlier));
                            if let Some(row) = row {
                                tape.bodies.insert(earlier, row.response_body.0);
                            }
                        }
                        let Some(body) = tape.bodies.get(&earlier) else {
                            tracing::warn!(sandbox = %key.0, twin = %key.1, seq, earlier, "a logged row's answer is that of a row found neither in the log nor in live.db; this tape's rows from it on are passed over");
                            tape.broken = true;
                            continue;
                        };
                        let mut whole = part[..at].to_vec();
                        whole.extend_from_slice(&(body.len() as u32).to_le_bytes());
                        whole.extend_from_slice(body);
                        tape.segment.push_encoded(seq, &whole);
                    }
                    _ => tape.segment.push_encoded(seq, part),
                }
                tape.last = seq;
            }
        }
    }
    let mut replayed = 0;
    for ((sandbox, twin), Tape { segment, .. }) in &tapes {
        if !segment.payload.is_empty() {
            segment.insert(&tx, sandbox, twin)?;
            replayed += segment.last - segment.first + 1;
        }
    }
    tx.commit()?;
    // On disk before the files that also hold the rows go.
    conn.query_row("PRAGMA wal_checkpoint(FULL)", [], |_| Ok(()))?;
    sync_file(&wal_path(db));
    for (_, path) in &files {
        std::fs::remove_file(path).map_err(io)?;
    }
    if replayed > 0 {
        tracing::info!(rows = replayed, "rows found only in the live-sandbox log were put into live.db");
    }
    Ok(next)
}

/// The files a live store keeps beside `db` (its database's own logs and the row log), for
/// moving a corrupt one aside with everything that goes with it.
pub fn files_beside(db: &Path) -> Vec<std::path::PathBuf> {
    let mut out: Vec<std::path::PathBuf> = ["-wal", "-shm"].iter().map(|s| format!("{}{s}", db.display()).into()).collect();
    out.extend(log::log_files(db).unwrap_or_default().into_iter().map(|(_, p)| p));
    out
}

/// Bodies this large are logged off the async workers: copying, summing and writing
/// megabytes takes milliseconds, which a worker must not spend while other tenants' requests
/// wait for it.
const LARGE_ROW: usize = 256 << 10;

struct RowJournal {
    tape: Arc<TapeLog>,
}

/// What logging one tape's rows needs, shared with a thread logging a large one.
struct TapeLog {
    sandbox: Arc<str>,
    twin: Arc<str>,
    live: Arc<SqliteLive>,
    /// The last seq of this tape committed to the database by the writer.
    committed: Arc<AtomicU64>,
    /// While a large row is being logged on a blocking thread, the rows after it wait here,
    /// in order, and that thread logs them next: a tape's rows reach the log in order.
    behind: Mutex<Option<std::collections::VecDeque<(Arc<TapeRow>, Done)>>>,
    /// Response bodies this tape logged whole lately: a repeat is logged as a reference.
    logged_bodies: Mutex<segment::RecentBodies>,
}

impl TapeLog {
    /// Log rows of this tape, in order.
    fn log(&self, rows: Vec<(Arc<TapeRow>, Done)>) {
        let mut bodies = self.logged_bodies.lock().unwrap();
        let logged = rows
            .into_iter()
            .map(|(row, done)| {
                let same_as = bodies.refer(row.seq, &row.response_body.0);
                (log::Logged::new(self.sandbox.clone(), self.twin.clone(), row, same_as, self.committed.clone()), done)
            })
            .collect();
        drop(bodies);
        if self.live.log.append(logged) >= COMMIT_BYTES {
            self.live.queue.hurry();
        }
    }
}

impl Journal for RowJournal {
    fn append(&self, row: Arc<TapeRow>, done: Box<dyn FnOnce(Result<(), String>) + Send>) {
        // Logged here, on the store's own thread: the answer waits for the write (and, in
        // `sync`, its fsync), never for another thread. (`memory` mode opens no live store.)
        let mut behind = self.tape.behind.lock().unwrap();
        if let Some(queue) = behind.as_mut() {
            queue.push_back((row, done));
            return;
        }
        let large = row.request_body.0.len() + row.response_body.0.len() >= LARGE_ROW;
        let runtime = match tokio::runtime::Handle::try_current() {
            Ok(runtime) if large => runtime,
            _ => {
                drop(behind);
                return self.tape.log(vec![(row, done)]);
            }
        };
        *behind = Some(Default::default());
        drop(behind);
        let tape = self.tape.clone();
        runtime.spawn_blocking(move || {
            tape.log(vec![(row, done)]);
            loop {
                let next = {
                    let mut behind = tape.behind.lock().unwrap();
                    match behind.as_mut().and_then(|q| q.pop_front()) {
                        Some(next) => next,
                        None => {
                            *behind = None;
                            break;
                        }
                    }
                };
                tape.log(vec![next]);
            }
        });
    }

    fn append_all(&self, rows: Vec<(Arc<TapeRow>, Done)>) {
        // Rows queued behind a large one, or large themselves, go one by one as above.
        let large = rows.iter().any(|(row, _)| row.request_body.0.len() + row.response_body.0.len() >= LARGE_ROW);
        if large || self.tape.behind.lock().unwrap().is_some() {
            return rows.into_iter().for_each(|(row, done)| self.append(row, done));
        }
        self.tape.log(rows);
    }

    fn durable_through(&self) -> u64 {
        self.tape.committed.load(Ordering::Acquire)
    }

    fn unavailable(&self) -> Option<String> {
        // The cause (a full disk, say) is the operator's to read in the log, not a tenant's.
        self.tape.live.failing().map(|_| UNAVAILABLE.to_string())
    }

    fn read(&self, from: u64, to: u64, limit: usize, done: Box<dyn FnOnce(Result<Vec<TapeRow>, String>) + Send>) {
        let (live, sandbox, twin) = (self.tape.live.clone(), self.tape.sandbox.clone(), self.tape.twin.clone());
        let read = move || done(live.read_rows(&sandbox, &twin, from, to, limit).map_err(|e| e.to_string()));
        // Off the async workers: a long tape takes a while to read and parse. A bulk stream's
        // thread, or a background thread replaying rows for a checkpoint, is off them already,
        // at a low priority: read there.
        if crate::proxy::on_bulk_thread() || pome_runtime::background::on_background_thread() {
            read();
        } else {
            tokio::task::spawn_blocking(read);
        }
    }
}

/// What a journal tells the agent while its rows cannot be recorded. The cause (a full disk,
/// a database that is down) is the operator's to read in the log, not a tenant's.
const UNAVAILABLE: &str = "the host cannot record this sandbox's calls right now; the request was not served, try again shortly";

/// Why a live store's commits fail, while its writer retries them. Every request asks, so
/// asking while all is well reads one atomic and takes no lock.
#[derive(Default)]
struct Failing {
    now: std::sync::atomic::AtomicBool,
    why: Mutex<Option<String>>,
}

impl Failing {
    fn get(&self) -> Option<String> {
        if self.now.load(Ordering::Acquire) { self.why.lock().unwrap().clone() } else { None }
    }

    /// A commit failed with `why`; true when commits had been going through until now.
    fn fail(&self, why: String) -> bool {
        let first = self.why.lock().unwrap().replace(why).is_none();
        self.now.store(true, Ordering::Release);
        first
    }

    /// A commit went through; true when commits had been failing until now.
    fn recover(&self) -> bool {
        self.now.swap(false, Ordering::AcqRel) && self.why.lock().unwrap().take().is_some()
    }
}

/// A journal handle needs the store itself (to send); `LiveStore` is implemented on the Arc.
pub struct Live(pub Arc<SqliteLive>);

/// The `LiveStore` methods that queue an op for the store's writer (`self.0.send`), the same
/// in both stores.
macro_rules! queued_ops {
    () => {
        fn put(&self, record: SandboxRecord, done: Done) {
            self.0.send(Op::Put(record), Some(done));
        }

        fn touch(&self, sandbox: &str, idle_deadline_ms: u64) {
            self.0.send(Op::Touch { sandbox: sandbox.to_string(), idle_deadline_ms }, None);
        }

        fn close(&self, sandbox: &str, tombstone: &Tombstone) {
            self.0.send(Op::Close { sandbox: sandbox.to_string(), tombstone: tombstone.clone() }, None);
        }

        fn flush(&self, done: Done) {
            self.0.send(Op::Flush, Some(done));
        }
    };
}
use queued_ops;

impl LiveStore for Live {
    queued_ops!();

    fn journal(&self, sandbox: &str, twin: &str) -> Arc<dyn Journal> {
        Arc::new(RowJournal {
            tape: Arc::new(TapeLog { sandbox: sandbox.into(), twin: twin.into(), live: self.0.clone(), committed: Arc::default(), behind: Mutex::default(), logged_bodies: Mutex::default() }),
        })
    }

    fn load(&self) -> Result<Restored, StorageError> {
        // A reader connection of its own: the writer may be running.
        let conn = connect(&self.0.path)?;
        load(&conn)
    }

    fn mode(&self) -> Durability {
        self.0.mode
    }
}

/// A stored value as text, if it is text.
fn text_of(v: rusqlite::types::Value) -> Option<String> {
    match v {
        rusqlite::types::Value::Text(t) => Some(t),
        _ => None,
    }
}

/// An open sandbox's stored record, checked: why it cannot be restored otherwise.
fn parse_record(id: Option<&str>, text: Option<&str>) -> Result<SandboxRecord, String> {
    let (id, text) = (id.ok_or("its id is not text")?, text.ok_or("its record is not text")?);
    let mut record: SandboxRecord = serde_json::from_str(text).map_err(|e| format!("its record is not a sandbox record: {e}"))?;
    if record.id != id {
        return Err(format!("its record names another sandbox, {}", record.id));
    }
    if record.twins.is_empty() || record.twins.len() != record.seeds.len() {
        return Err(format!("it has {} twins and {} seeds", record.twins.len(), record.seeds.len()));
    }
    // An older pome kept the tokens in clear: only the agent token's hash is kept (the
    // discard token is made anew at restore and lives in memory only).
    if let Some(token) = record.legacy_token.take()
        && record.token_hash.is_empty()
    {
        record.token_hash = crate::auth::hash_key(&token);
    }
    record.legacy_discard_token = None;
    if record.token_hash.len() != 64 || !record.token_hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("it has no agent token hash".into());
    }
    Ok(record)
}

fn load(conn: &Connection) -> Result<Restored, StorageError> {
    use rusqlite::types::Value as Sql;
    let mut out = Restored::default();
    // (rowid, id, what it is, its text, why it is bad)
    let mut bad: Vec<(i64, Option<String>, &str, Option<String>, String)> = Vec::new();
    // Records written by an older pome with tokens in clear, to rewrite without them.
    let mut rewrite: Vec<SandboxRecord> = Vec::new();
    {
        let mut st = conn.prepare("SELECT rowid, id, record, idle_deadline_ms FROM sandboxes WHERE closed IS NULL AND record IS NOT NULL ORDER BY id")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Sql>(1)?, r.get::<_, Sql>(2)?, r.get::<_, Sql>(3)?)))?;
        for row in rows {
            let (rowid, id, record, idle) = row?;
            let (id, text) = (text_of(id), text_of(record));
            let legacy = text.as_deref().is_some_and(|t| t.contains("\"token\""));
            match parse_record(id.as_deref(), text.as_deref()) {
                Ok(mut record) => {
                    let idle = if let Sql::Integer(i) = idle { i.max(0) as u64 } else { 0 };
                    record.idle_deadline_ms = record.idle_deadline_ms.max(idle);
                    if legacy {
                        rewrite.push(record.clone());
                    }
                    out.open.push(record);
                }
                Err(why) => bad.push((rowid, id, "sandbox", text, why)),
            }
        }
    }
    {
        let mut st = conn.prepare("SELECT rowid, id, closed FROM sandboxes WHERE closed IS NOT NULL ORDER BY closed_seq DESC LIMIT ?1")?;
        let rows = st.query_map([MAX_TOMBSTONES], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Sql>(1)?, r.get::<_, Sql>(2)?)))?;
        for row in rows {
            let (rowid, id, text) = row?;
            let (id, text) = (text_of(id), text_of(text));
            let parsed = match (&id, &text) {
                (Some(_), Some(t)) => serde_json::from_str::<StoredTombstone>(t).map_err(|e| format!("its tombstone is not a tombstone: {e}")),
                _ => Err("its id or tombstone is not text".to_string()),
            };
            match parsed {
                Ok(t) => {
                    let Some(reason) = CloseReason::parse(&t.reason) else {
                        bad.push((rowid, id, "tombstone", text, format!("`{}` is not a reason a sandbox closes for", t.reason)));
                        continue;
                    };
                    out.closed.push((id.unwrap_or_default(), Tombstone { team_id: t.team_id, token_hash: t.token_hash, reason, run_id: t.run_id }));
                }
                Err(why) => bad.push((rowid, id, "tombstone", text, why)),
            }
        }
        out.closed.reverse();
    }
    if !bad.is_empty() || !rewrite.is_empty() {
        // Freed pages are zeroed, so a rewritten record's clear token does not linger in
        // the file.
        conn.pragma_update(None, "secure_delete", "ON")?;
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS quarantine (
                id TEXT, what TEXT NOT NULL, content TEXT, error TEXT NOT NULL, at_ms INTEGER NOT NULL
            )",
        )?;
        let now = crate::sandbox::unix_ms(std::time::SystemTime::now()) as i64;
        for (rowid, id, what, text, why) in &bad {
            tracing::error!(sandbox = id.as_deref().unwrap_or("?"), what, error = %why, "a malformed record in live.db was moved to its quarantine table; start goes on without it");
            tx.execute("INSERT INTO quarantine (id, what, content, error, at_ms) VALUES (?1, ?2, ?3, ?4, ?5)", params![id, what, text, why, now])?;
            // Its tape segments stay, for the operator to look at.
            tx.execute("DELETE FROM sandboxes WHERE rowid = ?1", [rowid])?;
            out.quarantined.push(id.clone().unwrap_or_else(|| format!("rowid {rowid}")));
        }
        for record in &rewrite {
            let text = serde_json::to_string(record).map_err(|e| StorageError::Corrupt(e.to_string()))?;
            tx.execute("UPDATE sandboxes SET record = ?2 WHERE id = ?1", params![record.id, text])?;
        }
        tx.commit()?;
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
    Ok(out)
}

/// The writer thread's side of the store.
struct Writer {
    queue: Arc<Queue>,
    log: Arc<log::RowLog>,
    mode: Durability,
    failing: Arc<Failing>,
    /// The database, whose log the syncer fsyncs and checkpoints in `window` mode.
    db: std::path::PathBuf,
}

fn wal_path(db: &Path) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push("-wal");
    name.into()
}

impl Writer {
    /// Every [`COMMIT_EVERY`] (at once for an op someone waits on: a create, a flush), take
    /// the queued ops and the logged rows, write them in one transaction and commit, then
    /// release the ops' answers and let the rows leave the stores' memory. A batch that
    /// fails is kept and tried again, with what arrived meanwhile behind it, until it goes
    /// through: its rows are never dropped. Rows the log refused are retried here too.
    fn run(self, mut conn: Connection) {
        let mut closed_seq: i64 = conn.query_row("SELECT COALESCE(MAX(closed_seq), 0) FROM sandboxes", [], |r| r.get(0)).unwrap_or(0);
        let syncer = (self.mode == Durability::Window).then(|| Syncer::start(self.db.clone(), self.log.clone()));
        let (mut ops, mut rows, mut retired): (Vec<Entry>, Vec<log::Logged>, Vec<std::path::PathBuf>) = Default::default();
        let mut retry = RETRY_FIRST;
        let mut scratch = Scratch::default();
        let mut next_commit = std::time::Instant::now() + COMMIT_EVERY;
        loop {
            let stopping = {
                let mut q = self.queue.state.lock().unwrap();
                // Commits keep their schedule whatever is queued, unless it is urgent.
                while ops.is_empty() && !q.urgent && !q.stopped {
                    let now = std::time::Instant::now();
                    if now >= next_commit {
                        break;
                    }
                    q = self.queue.ready.wait_timeout(q, next_commit - now).unwrap().0;
                }
                q.urgent = false;
                ops.append(&mut q.entries);
                q.stopped
            };
            next_commit = std::time::Instant::now() + COMMIT_EVERY;
            // Ops first, then rows: every row logged before a flush was queued is in the
            // batch that answers the flush.
            let log_ok = !self.log.has_held() || self.log.retry_held();
            let taken = self.log.take();
            rows.extend(taken.rows);
            retired.extend(taken.retired);
            if ops.is_empty() && rows.is_empty() && retired.is_empty() {
                if stopping && log_ok {
                    break;
                }
                if log_ok {
                    continue;
                }
            }
            let before = closed_seq;
            let written = if ops.is_empty() && rows.is_empty() { Ok(()) } else { write_batch(&mut conn, &rows, &ops, &mut closed_seq, &mut scratch) };
            match written {
                Ok(()) => {
                    if self.failing.recover() {
                        tracing::info!("writing live sandboxes works again; the held rows are committed");
                    }
                    if let Some(s) = &syncer {
                        s.dirty.store(true, Ordering::Release);
                    }
                    for r in rows.drain(..) {
                        r.committed.fetch_max(r.row.seq, Ordering::Release);
                    }
                    for e in ops.drain(..) {
                        if let Some(done) = e.done {
                            done(Ok(()));
                        }
                    }
                    if !retired.is_empty() {
                        // Every row of these log files is committed; in `window` mode the
                        // database's own log is fsynced first, or a power cut could take the
                        // rows from both.
                        if self.mode == Durability::Window {
                            sync_file(&wal_path(&self.db));
                        }
                        for path in retired.drain(..) {
                            if let Err(e) = std::fs::remove_file(&path) {
                                tracing::warn!(error = %e, file = %path.display(), "removing a committed live-sandbox log file failed");
                            }
                        }
                    }
                    if log_ok {
                        retry = RETRY_FIRST;
                        continue;
                    }
                    if stopping && retry >= RETRY_MAX {
                        tracing::error!("giving up on live-sandbox rows the log could not take at shutdown");
                        self.log.give_up_held("the live-sandbox log could not be written");
                        break;
                    }
                }
                Err(e) => {
                    closed_seq = before;
                    let first = self.failing.fail(e.to_string());
                    if first {
                        tracing::error!(error = %e, entries = ops.len() + rows.len(), "writing live sandboxes failed; holding the batch and retrying");
                    }
                    if stopping && retry >= RETRY_MAX {
                        // The process is going and the disk still refuses: say so to whoever
                        // waits rather than hang the shutdown. (Logged rows stay in the log,
                        // and the next start puts them into the database.)
                        tracing::error!(error = %e, entries = ops.len(), "giving up on uncommitted live-sandbox records at shutdown");
                        for entry in ops.drain(..) {
                            if let Some(done) = entry.done {
                                done(Err(e.to_string()));
                            }
                        }
                        self.log.give_up_held(&e.to_string());
                        break;
                    }
                }
            }
            std::thread::sleep(retry);
            retry = (retry * 2).min(RETRY_MAX);
            // The retry's own wait was the sleep.
            next_commit = std::time::Instant::now();
        }
        if let Some(s) = syncer {
            s.stop();
        }
    }
}

/// In `window` mode, fsyncs the database's write-ahead log at most [`SYNC_EVERY`] after a
/// commit, and checkpoints it into the database every [`CHECKPOINT_EVERY`] passes, both off
/// the writer's path: answers never wait for a disk flush, and a power cut loses at most
/// about a [`WINDOW`]. The row log is not fsynced while commits keep up: every row in it is
/// soon in the database's log too (compressed, in segments), so the disk is written once
/// instead of twice. (A passive checkpoint runs beside the writer; the log restarts from
/// its beginning once one has caught up.)
struct Syncer {
    dirty: Arc<std::sync::atomic::AtomicBool>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start(db: std::path::PathBuf, log: Arc<log::RowLog>) -> Syncer {
        let dirty = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (d, st) = (dirty.clone(), stop.clone());
        let wal = wal_path(&db);
        let thread = std::thread::Builder::new()
            .name("pome-live-sync".into())
            .spawn(move || {
                let (mut windows, mut written, mut quiet) = (0u32, false, 0u32);
                let mut conn = None;
                while !st.load(Ordering::Acquire) {
                    std::thread::sleep(SYNC_EVERY);
                    if d.swap(false, Ordering::AcqRel) {
                        sync_file(&wal);
                        (written, quiet) = (true, 0);
                    } else {
                        quiet = quiet.saturating_add(1);
                        if quiet >= STALLED {
                            // Rows may wait in the row log alone: fsync it (once per stall,
                            // unless more rows are logged).
                            log.sync_all();
                        }
                    }
                    windows += 1;
                    if written && windows >= CHECKPOINT_EVERY {
                        (windows, written) = (0, false);
                        if conn.is_none() {
                            conn = connect(&db).ok();
                        }
                        if let Some(c) = &conn
                            && let Err(e) = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                        {
                            tracing::warn!(error = %e, "checkpointing the live-sandbox log failed; it is tried again");
                        }
                    }
                }
                log.sync_all();
                sync_file(&wal);
            })
            .ok();
        Syncer { dirty, stop, thread }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Syncer passes between checkpoints of the log into the database: often enough that the log
/// stays tens of megabytes under a sustained load.
const CHECKPOINT_EVERY: u32 = 20;

/// fsync a file by path: any descriptor of a file flushes its pages, including those
/// SQLite's own descriptor wrote.
fn sync_file(path: &Path) {
    if let Err(e) = std::fs::File::open(path).and_then(|f| f.sync_data())
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(error = %e, file = %path.display(), "fsync of the live-sandbox log failed");
    }
}

/// The writer's buffers for building and compressing segments, kept from one commit to the
/// next: allocated afresh each time, they cost more than the compression (the allocator
/// hands back new pages, which the kernel must zero).
#[derive(Default)]
struct Scratch {
    payload: Vec<u8>,
    compressed: Vec<u8>,
}

impl Scratch {
    /// More than this is given back after a commit (a burst of large rows passes).
    const KEEP: usize = 16 << 20;

    /// `payload` compressed as `Segment::decode` reads it: its length, then LZ4.
    fn compress(&mut self) -> &[u8] {
        let max = 4 + lz4_flex::block::get_maximum_output_size(self.payload.len());
        if self.compressed.len() < max {
            self.compressed.resize(max, 0);
        }
        let n = lz4_flex::block::compress_into(&self.payload, &mut self.compressed[4..]).expect("the output holds the largest compression");
        self.compressed[..4].copy_from_slice(&(self.payload.len() as u32).to_le_bytes());
        &self.compressed[..4 + n]
    }

    fn trim(&mut self) {
        for buf in [&mut self.payload, &mut self.compressed] {
            if buf.capacity() > Self::KEEP {
                *buf = Vec::new();
            }
        }
    }
}

fn write_batch(conn: &mut Connection, rows: &[log::Logged], ops: &[Entry], closed_seq: &mut i64, scratch: &mut Scratch) -> Result<(), StorageError> {
    // The rows of each tape make one segment, in the order they were logged. They go in
    // before the ops: a sandbox's `Put` was committed before its first row was served, and a
    // `Close` in this batch then deletes its rows with the rest.
    let mut at: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    let mut tapes: Vec<Vec<&log::Logged>> = Vec::new();
    for r in rows {
        let i = *at.entry((&*r.sandbox, &*r.twin)).or_insert_with(|| {
            tapes.push(Vec::new());
            tapes.len() - 1
        });
        tapes[i].push(r);
    }
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO tape_segments (sandbox_id, twin, first_seq, last_seq, rows) SELECT ?1, ?2, ?3, ?4, ?5
             WHERE NOT EXISTS (SELECT 1 FROM sandboxes WHERE id = ?1 AND closed IS NOT NULL)",
        )?;
        for tape in &tapes {
            scratch.payload.clear();
            let (mut first, mut last) = (u64::MAX, 0);
            // A repeated answer is written once a segment, then referred to.
            let mut written = segment::RecentBodies::default();
            for r in tape {
                (first, last) = (first.min(r.row.seq), last.max(r.row.seq));
                r.push_row(&mut scratch.payload, written.refer(r.row.seq, &r.row.response_body.0));
            }
            insert.execute(params![&*tape[0].sandbox, &*tape[0].twin, first as i64, last as i64, scratch.compress()])?;
        }
        drop(insert);
        scratch.trim();
        for e in ops {
            match &e.op {
                Op::Put(record) => {
                    let text = serde_json::to_string(record).map_err(|e| StorageError::Corrupt(e.to_string()))?;
                    tx.execute(
                        "INSERT OR REPLACE INTO sandboxes (id, record, idle_deadline_ms, closed, closed_seq) VALUES (?1, ?2, ?3, NULL, NULL)",
                        params![record.id, text, record.idle_deadline_ms as i64],
                    )?;
                }
                Op::Touch { sandbox, idle_deadline_ms } => {
                    tx.prepare_cached("UPDATE sandboxes SET idle_deadline_ms = MAX(idle_deadline_ms, ?2) WHERE id = ?1 AND closed IS NULL")?
                        .execute(params![sandbox, *idle_deadline_ms as i64])?;
                }
                Op::Close { sandbox, tombstone } => {
                    *closed_seq += 1;
                    let t = StoredTombstone {
                        team_id: tombstone.team_id.clone(),
                        token_hash: tombstone.token_hash.clone(),
                        reason: tombstone.reason.as_str().to_string(),
                        run_id: tombstone.run_id.clone(),
                    };
                    let text = serde_json::to_string(&t).map_err(|e| StorageError::Corrupt(e.to_string()))?;
                    tx.execute("DELETE FROM tape_segments WHERE sandbox_id = ?1", [sandbox])?;
                    tx.execute(
                        "INSERT INTO sandboxes (id, record, closed, closed_seq) VALUES (?1, NULL, ?2, ?3)
                         ON CONFLICT(id) DO UPDATE SET record = NULL, closed = excluded.closed, closed_seq = excluded.closed_seq",
                        params![sandbox, text, *closed_seq],
                    )?;
                    if *closed_seq % 1024 == 0 {
                        tx.execute("DELETE FROM sandboxes WHERE closed_seq IS NOT NULL AND closed_seq <= ?1", [*closed_seq - MAX_TOMBSTONES])?;
                    }
                }
                Op::Flush => {}
            }
        }
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pome_tape::Body;
    use proptest::prelude::*;

    fn tape_row(seq: u64, path: String, headers: Vec<(String, String)>, req: Vec<u8>, resp: Vec<u8>) -> TapeRow {
        let mut row: TapeRow = serde_json::from_value(serde_json::json!({
            "seq": seq, "ts": "2026-01-01T00:00:00.000001Z", "twin": "acme", "request_id": "r", "method": "POST",
            "path": path, "query": "", "request_headers": headers, "request_body": "", "base_url": "http://h/s/x/acme",
            "auth": "agent", "status": 200, "response_headers": [], "response_body": "", "latency_ms": 0.5, "action": null,
            "fidelity": "semantic", "state_mutation": false, "state_delta": [], "error": null
        }))
        .unwrap();
        row.request_body = Body(req.into());
        row.response_body = Body(resp.into());
        row
    }

    fn stored(rows: &[TapeRow]) -> Vec<u8> {
        let (mut segment, mut written) = (Segment::default(), segment::RecentBodies::default());
        for row in rows {
            let mut encoded = Vec::new();
            encode_row(&mut encoded, row, written.refer(row.seq, &row.response_body.0));
            segment.push_encoded(row.seq, &encoded);
        }
        lz4_flex::compress_prepend_size(&segment.payload)
    }

    fn any_row() -> impl Strategy<Value = TapeRow> {
        (0u64..1 << 53, ".{0,40}", prop::collection::vec(("[a-z-]{1,12}", ".{0,30}"), 0..4), prop::collection::vec(any::<u8>(), 0..300), prop::collection::vec(any::<u8>(), 0..300))
            .prop_map(|(seq, path, headers, req, resp)| tape_row(seq, path, headers, req, resp))
    }

    proptest! {
        /// Any rows, bodies of any bytes, read back from their stored segment exactly.
        #[test]
        fn a_stored_segment_reads_back_its_rows_exactly(rows in prop::collection::vec(any_row(), 1..6)) {
            prop_assert_eq!(Segment::decode(&stored(&rows)).unwrap(), rows);
        }

        /// Rows repeating earlier rows' answers (the same bytes shared, or equal bytes apart)
        /// are stored with references, and read back exactly all the same.
        #[test]
        fn a_segment_with_repeated_answers_reads_back_its_rows_exactly(rows in prop::collection::vec(any_row(), 1..8), repeats in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 0..8)) {
            let mut rows: Vec<TapeRow> = rows.into_iter().zip(1..).map(|(r, seq)| TapeRow { seq, ..r }).collect();
            for (i, (from, shared)) in repeats.into_iter().enumerate() {
                let to = i % rows.len();
                let from = from.index(to + 1);
                let body = rows[from].response_body.0.clone();
                rows[to].response_body = Body(if shared { body } else { bytes::Bytes::copy_from_slice(&body) });
            }
            prop_assert_eq!(Segment::decode(&stored(&rows)).unwrap(), rows);
        }

        /// A segment cut short, or with bytes changed, is an error or other rows — never a
        /// panic, and never an allocation of what a corrupt size header claims.
        #[test]
        fn a_damaged_segment_is_refused_without_panicking(rows in prop::collection::vec(any_row(), 1..4), cut in any::<prop::sample::Index>(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4)) {
            let whole = stored(&rows);
            let short = &whole[..cut.index(whole.len())];
            prop_assert!(Segment::decode(short).is_err(), "a segment cut short is refused");
            let mut changed = whole.clone();
            for (at, byte) in flips {
                let i = at.index(changed.len());
                changed[i] ^= byte;
            }
            let _ = Segment::decode(&changed);
        }

        /// Any bytes at all: an answer, never a panic.
        #[test]
        fn any_bytes_as_a_segment_are_refused_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = Segment::decode(&bytes);
        }

        /// Logged rows of any bytes read back whole from the log, then cut anywhere: the
        /// frames before the cut and nothing else, never a panic.
        #[test]
        fn a_row_log_reads_back_its_whole_frames_however_it_is_cut(rows in prop::collection::vec(any_row(), 1..5), cut in any::<prop::sample::Index>()) {
            let frames: Vec<Vec<u8>> = rows.iter().map(|r| log::Logged::new("sbx_a".into(), "acme".into(), Arc::new(r.clone()), None, Arc::default()).frame()).collect();
            let bytes = frames.concat();
            let (read, torn) = log::read_frames(&bytes);
            prop_assert_eq!(torn, 0);
            prop_assert_eq!(read.iter().map(|f| f.0).collect::<Vec<_>>(), rows.iter().map(|r| r.seq).collect::<Vec<_>>());
            // A frame's row part is the row in a segment's form: the writer copies it as is.
            for (frame, row) in read.iter().zip(&rows) {
                let mut encoded = Vec::new();
                encode_row(&mut encoded, row, None);
                prop_assert_eq!(frame.3, &encoded[..]);
            }
            let at = cut.index(bytes.len());
            let whole = frames.iter().scan(0, |end, f| { *end += f.len(); Some(*end) }).take_while(|end| *end <= at).count();
            let (read, torn) = log::read_frames(&bytes[..at]);
            prop_assert_eq!(read.len(), whole);
            prop_assert_eq!(torn, at - frames[..whole].iter().map(Vec::len).sum::<usize>());
        }

        #[test]
        fn any_bytes_as_a_row_log_are_read_without_panicking(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = log::read_frames(&bytes);
        }
    }

    /// LZ4 output ending just after a match decompresses without error, to fewer bytes;
    /// repetitive bodies make matches, so some cut of this segment ends just after one.
    #[test]
    fn a_segment_cut_anywhere_is_refused() {
        let rows: Vec<TapeRow> = (1..4).map(|seq| tape_row(seq, "/v1/customers".into(), vec![], b"name=a".repeat(40), b"{\"id\": \"cus_1\"}".repeat(30))).collect();
        let whole = stored(&rows);
        assert_eq!(Segment::decode(&whole).unwrap(), rows);
        for cut in 0..whole.len() {
            assert!(Segment::decode(&whole[..cut]).is_err(), "a segment cut at {cut} of {} bytes is refused", whole.len());
        }
    }

    #[test]
    fn an_answer_stored_as_that_of_a_row_not_before_it_is_refused() {
        let mut payload = Vec::new();
        encode_row(&mut payload, &row(1), None);
        encode_row(&mut payload, &row(2), Some(3));
        let err = Segment::decode(&lz4_flex::compress_prepend_size(&payload)).unwrap_err();
        assert!(err.contains("refers to row 3"), "{err}");
    }

    /// A body a row repeats: long enough to be worth a reference.
    fn answer(tag: u8) -> bytes::Bytes {
        bytes::Bytes::from(vec![tag; 4096])
    }

    fn answering(seq: u64, body: &bytes::Bytes) -> Arc<TapeRow> {
        Arc::new(TapeRow { response_body: Body(body.clone()), ..(*row(seq)).clone() })
    }

    #[tokio::test]
    async fn a_repeated_answer_is_logged_and_stored_once_and_reads_back_whole() {
        let path = tempfile_dir().join("live.db");
        let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let journal = live.journal("sbx_a", "acme");
        // An agent polling a list between two other reads: the store hands the repeats over
        // as the same bytes; one comes as equal bytes apart.
        let (list, one, other) = (answer(b'l'), answer(b'1'), answer(b'2'));
        let bodies = [&list, &one, &list, &other, &list, &list, &bytes::Bytes::copy_from_slice(&list), &one];
        let rows: Vec<Arc<TapeRow>> = bodies.iter().zip(1..).map(|(b, seq)| answering(seq, b)).collect();
        for r in &rows {
            append(&journal, r.clone()).await;
        }
        let logged = std::fs::read(log::log_path(&path, 1)).unwrap();
        assert!(logged.len() < 4 * 4096, "three answers logged whole, the repeats referred to ({} bytes)", logged.len());
        wait(|d| live.flush(d)).await.unwrap();
        let stored: i64 = Connection::open(&path).unwrap().query_row("SELECT SUM(LENGTH(rows)) FROM tape_segments", [], |r| r.get(0)).unwrap();
        assert!(stored < 3 * 4096, "stored once a segment, compressed ({stored} bytes)");
        let back = read(&journal, 1, u64::MAX, 100).await;
        assert_eq!(back, rows.iter().map(|r| (**r).clone()).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn rows_a_crash_left_in_the_log_referring_to_earlier_answers_come_back_whole() {
        let path = tempfile_dir().join("live.db");
        let (x, y) = (answer(b'x'), answer(b'y'));
        {
            let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
            wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
            append(&live.journal("sbx_a", "acme"), answering(1, &x)).await;
            wait(|d| live.flush(d)).await.unwrap();
        }
        // Row 1's log file is gone (its row committed); row 2 repeats its answer, row 4 repeats
        // row 3's, which is earlier in the log; row 5 is torn.
        let frame = |seq, body: &bytes::Bytes, same_as| log::Logged::new("sbx_a".into(), "acme".into(), answering(seq, body), same_as, Arc::default()).frame();
        let mut bytes: Vec<u8> = [frame(2, &x, Some(1)), frame(3, &y, None), frame(4, &y, Some(3))].concat();
        let torn = frame(5, &y, Some(3));
        bytes.extend_from_slice(&torn[..torn.len() - 3]);
        std::fs::write(log::log_path(&path, 4), &bytes).unwrap();

        let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
        let back = read(&live.journal("sbx_a", "acme"), 1, u64::MAX, 10).await;
        let bodies: Vec<&[u8]> = back.iter().map(|r| &r.response_body.0[..]).collect();
        assert_eq!(bodies, vec![&x[..], &x[..], &y[..], &y[..]], "rows 1-4, each answer whole");
    }

    #[test]
    fn a_segment_claiming_gigabytes_is_refused_before_anything_is_allocated() {
        let mut forged = u32::MAX.to_le_bytes().to_vec();
        forged.extend_from_slice(&[0u8; 32]);
        let err = Segment::decode(&forged).unwrap_err();
        assert!(err.contains("claims"), "{err}");
    }

    pub(super) fn record(id: &str) -> SandboxRecord {
        SandboxRecord {
            id: id.into(),
            team_id: "team_1".into(),
            token_hash: crate::auth::hash_key("tok"),
            legacy_token: None,
            legacy_discard_token: None,
            twins: vec!["acme".into()],
            seeds: vec!["{}".into()],
            twin_digests: vec![],
            meta: SandboxMeta::default(),
            idempotency_key: None,
            created_at_ms: 1,
            expires_at_ms: 2,
            idle_deadline_ms: 3,
        }
    }

    pub(super) fn row(seq: u64) -> Arc<TapeRow> {
        let text = format!(
            r#"{{"seq":{seq},"ts":"2026-01-01T00:00:00.000001Z","twin":"acme","request_id":"r{seq}","method":"POST","path":"/x","query":"","request_headers":[],"request_body":"","base_url":"http://h/s/sbx/acme","auth":"agent","status":201,"response_headers":[],"response_body":"{{}}","latency_ms":0.1,"action":null,"fidelity":"semantic","state_mutation":true,"state_delta":[],"error":null}}"#
        );
        Arc::new(serde_json::from_str(&text).unwrap())
    }

    #[tokio::test]
    async fn rows_of_an_open_sandbox_come_back_in_order_and_a_closed_one_leaves_a_tombstone() {
        let dir = tempfile_dir();
        for mode in [Durability::Sync, Durability::Window] {
            let path = dir.join(format!("live-{mode}.db"));
            let live = Live(SqliteLive::open(&path, mode).unwrap());
            wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
            wait(|d| live.put(record("sbx_b"), d)).await.unwrap();
            let ja = live.journal("sbx_a", "acme");
            for seq in 1..=3 {
                let (tx, rx) = oneshot::channel();
                ja.append(row(seq), Box::new(move |r| tx.send(r).unwrap()));
                rx.await.unwrap().unwrap();
            }
            live.touch("sbx_a", 99);
            live.close("sbx_b", &Tombstone { team_id: "team_1".into(), token_hash: "h".into(), reason: CloseReason::Finalized, run_id: Some("run_1".into()) });
            wait(|d| live.flush(d)).await.unwrap();

            let back = Live(SqliteLive::open(&path, mode).unwrap()).load().unwrap();
            assert_eq!(back.open.len(), 1, "{mode}");
            let rec = &back.open[0];
            assert_eq!(rec.id, "sbx_a");
            assert_eq!(rec.idle_deadline_ms, 99, "the idle clock is kept");
            assert_eq!(ja.durable_through(), 3, "{mode}: every row committed");
            let again = Live(SqliteLive::open(&path, mode).unwrap());
            let read = |from, to, limit| {
                let (tx, rx) = oneshot::channel();
                again.journal("sbx_a", "acme").read(from, to, limit, Box::new(move |r| tx.send(r).unwrap()));
                rx
            };
            let seqs = |rows: Vec<TapeRow>| rows.iter().map(|r| r.seq).collect::<Vec<_>>();
            assert_eq!(seqs(read(1, u64::MAX, usize::MAX).await.unwrap().unwrap()), vec![1, 2, 3]);
            assert_eq!(seqs(read(2, 3, 10).await.unwrap().unwrap()), vec![2], "a range");
            assert_eq!(seqs(read(1, u64::MAX, 2).await.unwrap().unwrap()), vec![1, 2], "a page");
            assert!(read(1, 9, 9).await.unwrap().unwrap().iter().all(|r| r.twin == "acme"));
            assert_eq!(back.closed.len(), 1);
            assert_eq!(back.closed[0].0, "sbx_b");
            assert_eq!(back.closed[0].1.run_id.as_deref(), Some("run_1"));
        }
    }

    #[tokio::test]
    async fn rows_served_after_a_sandbox_closed_are_not_kept() {
        let dir = tempfile_dir();
        let path = dir.join("late.db");
        let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let journal = live.journal("sbx_a", "acme");
        append(&journal, row(1)).await;
        live.close("sbx_a", &Tombstone { team_id: "team_1".into(), token_hash: "h".into(), reason: CloseReason::Discarded, run_id: None });
        // A request queued before the discard, served after it.
        append(&journal, row(2)).await;
        wait(|d| live.flush(d)).await.unwrap();
        let segments: i64 = Connection::open(&path).unwrap().query_row("SELECT COUNT(*) FROM tape_segments", [], |r| r.get(0)).unwrap();
        assert_eq!(segments, 0, "nothing of a closed sandbox stays on disk");
    }

    pub(super) async fn append(journal: &Arc<dyn Journal>, row: Arc<TapeRow>) {
        let (tx, rx) = oneshot::channel();
        journal.append(row, Box::new(move |r| tx.send(r).unwrap()));
        rx.await.unwrap().unwrap();
    }

    pub(super) async fn read(journal: &Arc<dyn Journal>, from: u64, to: u64, limit: usize) -> Vec<TapeRow> {
        let (tx, rx) = oneshot::channel();
        journal.read(from, to, limit, Box::new(move |r| tx.send(r).unwrap()));
        rx.await.unwrap().unwrap()
    }

    #[tokio::test]
    async fn the_rows_of_a_tape_committed_together_are_one_segment_and_read_back_by_range() {
        let path = tempfile_dir().join("live.db");
        let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let (ja, jb) = (live.journal("sbx_a", "acme"), live.journal("sbx_a", "other"));
        for seq in 1..=10 {
            let mut a = (*row(seq)).clone();
            // Bodies are stored as bytes: any bytes, including text that looks base64-encoded.
            a.response_body = Body(bytes::Bytes::from(vec![0xff, seq as u8, 0x00]));
            a.request_body = Body(bytes::Bytes::from(format!("base64:{seq}")));
            // Appended without waiting, as a busy store does: they commit together.
            ja.append(Arc::new(a), Box::new(|r| r.unwrap()));
            jb.append(row(seq), Box::new(|r| r.unwrap()));
        }
        wait(|d| live.flush(d)).await.unwrap();
        let segments: i64 = Connection::open(&path).unwrap().query_row("SELECT COUNT(*) FROM tape_segments", [], |r| r.get(0)).unwrap();
        assert!(segments < 20, "rows committed together share segments ({segments} for 20 rows)");

        let seqs = |rows: Vec<TapeRow>| rows.iter().map(|r| r.seq).collect::<Vec<_>>();
        let all = read(&ja, 1, u64::MAX, usize::MAX).await;
        assert_eq!(seqs(all.clone()), (1..=10).collect::<Vec<_>>());
        assert_eq!(all[4].response_body.0[..], [0xff, 5, 0x00]);
        assert_eq!(all[4].request_body.0[..], *b"base64:5");
        assert_eq!(read(&jb, 1, u64::MAX, usize::MAX).await, (1..=10).map(|s| (*row(s)).clone()).collect::<Vec<_>>());
        assert_eq!(seqs(read(&ja, 3, 8, 100).await), vec![3, 4, 5, 6, 7], "a range inside a segment");
        assert_eq!(seqs(read(&ja, 9, 20, 1).await), vec![9], "a page");
    }

    #[tokio::test]
    async fn rows_an_older_pome_stored_a_row_at_a_time_move_into_segments_at_open() {
        let path = tempfile_dir().join("live.db");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch("CREATE TABLE tape_rows (sandbox_id TEXT NOT NULL, twin TEXT NOT NULL, seq INTEGER NOT NULL, row BLOB NOT NULL)").unwrap();
            // Compressed (the last format) and text (the one before).
            let compressed = lz4_flex::compress_prepend_size(&serde_json::to_vec(&*row(1)).unwrap());
            old.execute("INSERT INTO tape_rows VALUES ('sbx_a', 'acme', 1, ?1)", [compressed]).unwrap();
            old.execute("INSERT INTO tape_rows VALUES ('sbx_a', 'acme', 2, ?1)", [serde_json::to_string(&*row(2)).unwrap()]).unwrap();
        }
        let live = Live(SqliteLive::open(&path, Durability::Sync).unwrap());
        let journal = live.journal("sbx_a", "acme");
        assert_eq!(read(&journal, 1, u64::MAX, 10).await, vec![(*row(1)).clone(), (*row(2)).clone()]);
        append(&journal, row(3)).await;
        wait(|d| live.flush(d)).await.unwrap();
        assert_eq!(read(&journal, 1, u64::MAX, 10).await.len(), 3);
        let left: i64 = Connection::open(&path).unwrap().query_row("SELECT COUNT(*) FROM sqlite_master WHERE name = 'tape_rows'", [], |r| r.get(0)).unwrap();
        assert_eq!(left, 0, "the old table is gone");
    }

    #[tokio::test]
    async fn in_window_mode_an_answer_leaves_once_its_row_is_logged_and_the_database_follows() {
        let path = tempfile_dir().join("live.db");
        let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let journal = live.journal("sbx_a", "acme");
        let answered = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let a = answered.clone();
        journal.append(row(1), Box::new(move |r| a.store(r.is_ok(), Ordering::SeqCst)));
        assert!(answered.load(Ordering::SeqCst), "released on the appending thread, with no hand-off");
        let logged = std::fs::read(log::log_path(&path, 1)).unwrap();
        let (frames, torn) = log::read_frames(&logged);
        assert_eq!((frames.len(), torn), (1, 0), "the row is in the log file");
        assert_eq!((frames[0].0, frames[0].1.as_str(), frames[0].2.as_str()), (1, "sbx_a", "acme"));
        wait(|d| live.flush(d)).await.unwrap();
        assert_eq!(journal.durable_through(), 1, "committed to the database by the flush");
        assert_eq!(read(&journal, 1, u64::MAX, 10).await, vec![(*row(1)).clone()]);
    }

    #[tokio::test]
    async fn rows_left_only_in_the_log_by_a_crash_are_put_into_the_database_at_start() {
        let path = tempfile_dir().join("live.db");
        {
            let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
            wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
            append(&live.journal("sbx_a", "acme"), row(1)).await;
            wait(|d| live.flush(d)).await.unwrap();
        }
        // What a crash leaves: rows 2 and 3 logged (row 1 again, already committed, as a log
        // file still holds committed rows), the database never told, then half a frame.
        let frame = |seq| log::Logged::new("sbx_a".into(), "acme".into(), row(seq), None, Arc::default()).frame();
        let mut bytes: Vec<u8> = [frame(1), frame(2), frame(3)].concat();
        let torn = frame(4);
        bytes.extend_from_slice(&torn[..torn.len() / 2]);
        std::fs::write(log::log_path(&path, 7), &bytes).unwrap();

        let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
        let journal = live.journal("sbx_a", "acme");
        assert_eq!(read(&journal, 1, u64::MAX, 10).await, [1, 2, 3].map(|s| (*row(s)).clone()).to_vec(), "each row once, the torn one not at all");
        assert!(!log::log_path(&path, 7).exists(), "the replayed file is gone");
        append(&journal, row(4)).await;
        assert!(log::log_path(&path, 8).exists(), "new rows go to a file numbered after it");
        wait(|d| live.flush(d)).await.unwrap();
        assert_eq!(read(&journal, 1, u64::MAX, 10).await.len(), 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_large_row_is_logged_off_the_async_workers_and_the_rows_after_it_keep_their_order() {
        let path = tempfile_dir().join("live.db");
        let live = Live(SqliteLive::open(&path, Durability::Window).unwrap());
        wait(|d| live.put(record("sbx_a"), d)).await.unwrap();
        let journal = live.journal("sbx_a", "acme");
        let mut large = (*row(1)).clone();
        large.response_body = Body(bytes::Bytes::from(vec![b'x'; LARGE_ROW]));
        let mut answers = Vec::new();
        for r in [Arc::new(large), row(2), row(3)] {
            let (tx, rx) = oneshot::channel();
            journal.append(r, Box::new(move |r| tx.send(r).unwrap()));
            answers.push(rx);
        }
        for rx in answers {
            rx.await.unwrap().unwrap();
        }
        let logged = std::fs::read(log::log_path(&path, 1)).unwrap();
        let (frames, _) = log::read_frames(&logged);
        assert_eq!(frames.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1, 2, 3], "in tape order in the log");
        wait(|d| live.flush(d)).await.unwrap();
        assert_eq!(read(&journal, 1, u64::MAX, 10).await.iter().map(|r| r.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn a_frame_with_a_wrong_checksum_ends_the_replay_of_its_file() {
        let mut a = log::Logged::new("sbx_a".into(), "acme".into(), row(1), None, Arc::default()).frame();
        let b = log::Logged::new("sbx_a".into(), "acme".into(), row(2), None, Arc::default()).frame();
        let whole = a.len();
        a.extend_from_slice(&b);
        let last = a.len() - 1;
        a[last] ^= 0xff;
        let (frames, torn) = log::read_frames(&a);
        assert_eq!(frames.len(), 1);
        assert_eq!(torn, a.len() - whole);
    }

    /// Rows logged from many threads at once (a write in the kernel while others arrive, so
    /// rows queue and go out together): each answer is released once, after its row is in
    /// the file; the file holds every row whole; each tape's rows are in its own order.
    #[test]
    fn rows_logged_by_many_threads_at_once_reach_the_log_whole_and_each_tape_in_order() {
        let dir = tempfile_dir();
        let db = dir.join("live.db");
        let log = log::RowLog::open(&db, Durability::Window, 1).unwrap();
        let released = Arc::new(AtomicU64::new(0));
        std::thread::scope(|scope| {
            for tape in 0..8 {
                let (log, released) = (log.clone(), released.clone());
                scope.spawn(move || {
                    let name: Arc<str> = format!("sbx_{tape}").into();
                    // Some tapes hand rows over one at a time, some several at once.
                    for seqs in (1..=300).collect::<Vec<u64>>().chunks(1 + tape % 3) {
                        let rows = seqs.iter().map(|&seq| {
                            let logged = log::Logged::new(name.clone(), "acme".into(), row(seq), None, Arc::default());
                            let released = released.clone();
                            let done: Done = Box::new(move |r| {
                                r.unwrap();
                                released.fetch_add(1, Ordering::Relaxed);
                            });
                            (logged, done)
                        });
                        log.append(rows.collect());
                    }
                });
            }
        });
        assert_eq!(released.load(Ordering::Relaxed), 8 * 300, "every answer released once");
        let bytes = std::fs::read(log::log_path(&db, 1)).unwrap();
        let (frames, torn) = log::read_frames(&bytes);
        assert_eq!(torn, 0);
        for tape in 0..8 {
            let seqs: Vec<u64> = frames.iter().filter(|f| f.1 == format!("sbx_{tape}")).map(|f| f.0).collect();
            assert_eq!(seqs, (1..=300).collect::<Vec<_>>(), "sbx_{tape}");
        }
        assert_eq!(log.take().rows.len(), 8 * 300, "the writer gets every row, once");
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("pome-live-test-{}-{:?}", std::process::id(), std::thread::current().id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
