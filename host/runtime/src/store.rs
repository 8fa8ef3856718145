//! One twin store per (sandbox, twin), owned by one task that serves its calls one at a time:
//! the tape order is the order of execution. Callers hold a [`TwinStore`] handle around a
//! bounded channel; each call carries a oneshot for its reply. Dropping the last handle ends
//! the task and frees the store.
//!
//! A trap or a deadline poisons a wasmtime store. The task then rebuilds it: a fresh store
//! restored from the newest checkpoint (or the seed snapshot), with the tape's successful
//! requests after it replayed at their recorded times. Nothing the agent created is lost; the
//! failed request is on the tape with its error. A checkpoint is the world's snapshot, taken
//! once the store has spent `Limits::checkpoint_after` of guest time since the last one, so a
//! rebuild costs about that much however long the tape has grown. A small world is
//! snapshotted between requests; a large one in a store of its own on a low-priority thread
//! ([`crate::background`]), which replays the rows since the last checkpoint, so no world's
//! size ever stalls its requests.
//!
//! When the store writes its rows to a [`Journal`] (a durable server), a tape keeps only its
//! newest rows in memory (bounded by `Limits::tape_memory_rows` and `tape_memory_bytes`):
//! a row leaves memory once the journal has committed it, and whatever reads a whole tape
//! (the events route, finalize, recovery, a restart) reads the older rows back from the
//! journal. A busy sandbox's memory stays flat however long its tape grows.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use wasmtime::Store;

use crate::metrics::{Metrics, TwinRequestMetrics};
use crate::engine::{self, Auth, GuestError, HostError, HostErrorKind, HostState, HttpRequest, Runtime, TwinImage, TwinInstance};
use crate::seeds::SeedImage;
use pome_tape::{Body, Fidelity, Headers, TapeRow};

/// A request as the twin will see it: prefix stripped, headers lower-cased, credentials
/// redacted.
#[derive(Debug, Clone)]
pub struct TwinRequest {
    pub request_id: String,
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub base_url: String,
    pub auth: Auth,
    /// The door it came through when not REST (`mcp`), and the MCP tool called; both go on
    /// the tape row.
    pub via: Option<String>,
    pub tool: Option<String>,
}

/// A twin's answer. Headers and body are shared with the tape row that records them.
#[derive(Debug, Clone)]
pub struct TwinReply {
    pub status: u16,
    pub headers: Headers,
    pub body: Bytes,
    /// The twin refused the request for its credential (it had no agent token and the twin
    /// did not serve it): the host counts such refusals per client address.
    pub refused: bool,
}

impl From<engine::HttpResponse> for TwinReply {
    fn from(r: engine::HttpResponse) -> TwinReply {
        TwinReply { status: r.status, headers: r.headers.into(), body: r.body.into(), refused: false }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the twin's seed snapshot did not restore: {0}")]
    Restore(String),
    #[error(transparent)]
    Guest(#[from] GuestError),
    #[error("instantiating the twin failed: {0}")]
    Instantiate(String),
    /// The host has no room for another store: its pool of store slots is full, or the
    /// operating system refused the memory mappings one needs. A capacity limit, not a fault
    /// of the twin: the caller may try again once stores close.
    #[error("this host has no room for another twin store: {0}")]
    NoRoom(String),
    #[error("the twin store is closed")]
    Closed,
    #[error("reading the tape's older rows back: {0}")]
    Journal(String),
    #[error("this twin was built against a contract older than 0.3.0 and cannot write its world as a seed")]
    CannotWriteSeed,
    #[error("the twin cannot write this world as a seed: {0}")]
    SeedRefused(String),
}

/// What to read out of a world: its state export (for grading and diffs), or a seed document
/// that boots it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    State,
    Seed,
}

async fn export(rt: &Runtime, store: &mut Store<HostState>, twin: &TwinInstance, what: Export) -> Result<String, StoreError> {
    match what {
        Export::State => Ok(rt.call(store, async |s| twin.state(s).await).await?),
        Export::Seed => match rt.call(store, async |s| twin.export_seed(s).await).await? {
            None => Err(StoreError::CannotWriteSeed),
            Some(written) => written.map_err(StoreError::SeedRefused),
        },
    }
}

/// Where a store's tape rows go to outlive the process (the server's write-ahead tape).
/// `append` is called in tape order; `done` runs once the row is as durable as the server's
/// mode promises (at once for a mode that does not wait), with the reason when it could
/// not be made durable. The store does not wait for it: the next request is served
/// meanwhile, and only the answer waits.
///
/// One journal holds one twin's tape of one sandbox. Rows it has committed may leave the
/// store's memory: it must give them back from `read` for as long as the sandbox is open.
pub trait Journal: Send + Sync {
    fn append(&self, row: Arc<TapeRow>, done: Box<dyn FnOnce(Result<(), String>) + Send>);
    /// Append several rows, in order: a store serving a queue of requests hands their rows
    /// over together, and a journal may write them at once.
    fn append_all(&self, rows: Vec<(Arc<TapeRow>, Box<dyn FnOnce(Result<(), String>) + Send>)>) {
        for (row, done) in rows {
            self.append(row, done);
        }
    }
    /// The sequence number up to which every row is committed (0 for none).
    fn durable_through(&self) -> u64;
    /// The committed rows with `from <= seq < to`, in order, at most `limit` of them.
    fn read(&self, from: u64, to: u64, limit: usize, done: Box<dyn FnOnce(Result<Vec<TapeRow>, String>) + Send>);
    /// Why rows cannot be made durable now (storage is failing and its writer retrying),
    /// as a message for the agent. While it says so, the store serves nothing: an answer it
    /// cannot record is not given.
    fn unavailable(&self) -> Option<String> {
        None
    }
}

/// Read committed rows back from `journal` (see [`Journal::read`]), checked to run on from
/// `from` without a gap: a missing row is a lost row, never something to skip over.
async fn read_rows(journal: &Arc<dyn Journal>, from: u64, to: u64, limit: usize) -> Result<Vec<TapeRow>, StoreError> {
    let (tx, rx) = oneshot::channel();
    journal.read(from, to, limit, Box::new(move |r| {
        let _ = tx.send(r);
    }));
    let rows = rx.await.map_err(|_| StoreError::Journal("the journal stopped".into()))?.map_err(StoreError::Journal)?;
    if let Some((r, seq)) = rows.iter().zip(from..).find(|(r, seq)| r.seq != *seq) {
        return Err(StoreError::Journal(format!("row {seq} is missing on disk (found row {} in its place)", r.seq)));
    }
    Ok(rows)
}

/// Every row `from <= seq < to` (at most `limit`): rows that left memory must all be there.
async fn read_all(journal: &Arc<dyn Journal>, from: u64, to: u64, limit: usize) -> Result<Vec<TapeRow>, StoreError> {
    let rows = read_rows(journal, from, to, limit).await?;
    let want = (to - from).min(limit as u64) as usize;
    if rows.len() != want {
        return Err(StoreError::Journal(format!("rows {from}..{to} are not all on disk ({} of {want} found)", rows.len())));
    }
    Ok(rows)
}

/// Rows read back from a journal at a time, when replaying or restoring a tape.
const READ_PAGE: usize = 1024;

/// How much of a tape a store holds (see [`TwinStore::memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapeMemory {
    /// Rows on the tape, and their weight (what the tape caps count).
    pub rows: u64,
    pub bytes: usize,
    /// Rows held in memory, and their weight (what the memory budget counts).
    pub rows_in_memory: usize,
    pub bytes_in_memory: usize,
}

/// How many of the latest rows a new row may share bytes with.
const SHARE_WINDOW: usize = 64;

/// Rows a store gathers from its queue before handing them to the journal together: a
/// write per eight rows rather than per row, while the first answer waits for at most seven
/// more guest calls (tens of microseconds for the calls that are served this fast).
const GATHER_ROWS: usize = 8;

/// Nor past this long, so a slow request does not hold the answers before it.
const GATHER_FOR: Duration = Duration::from_millis(1);

/// What the journal calls once a row is durable, or could not be made so.
type Done = Box<dyn FnOnce(Result<(), String>) + Send>;

enum Msg {
    Handle(TwinRequest, oneshot::Sender<TwinReply>),
    RenderError(HostErrorKind, String, oneshot::Sender<TwinReply>),
    Tape { after: u64, limit: usize, reply: oneshot::Sender<TapeView> },
    Memory(oneshot::Sender<TapeMemory>),
    Export(Export, oneshot::Sender<Result<String, StoreError>>),
    CheckpointAtOrBefore(u64, oneshot::Sender<Option<Arc<Checkpoint>>>),
}

/// A cheap, cloneable handle to one twin store's task.
#[derive(Clone)]
pub struct TwinStore {
    pub twin: String,
    /// The forms of the agent token this twin's clients send (from its description).
    pub credentials: Arc<[pome_contract::Credential]>,
    /// Webhooks this twin asked for, with every attempt to deliver them.
    pub deliveries: crate::outbound::Log,
    tx: mpsc::Sender<Msg>,
    closing: Arc<AtomicBool>,
}

impl TwinStore {
    /// The sandbox is closing: its tape is about to leave the journal. The store serves on
    /// until its last handle goes, but begins no checkpoint, and one it is building may fail
    /// to read its rows without a warning.
    pub fn close(&self) {
        self.closing.store(true, Relaxed);
    }

    /// Instantiate `image`, restore `seed` into it and start its task. Fails (and starts
    /// nothing) when the twin cannot come up.
    pub async fn start(rt: Arc<Runtime>, image: Arc<TwinImage>, seed: Arc<SeedImage>, metrics: Arc<Metrics>, outbound: Arc<crate::outbound::Policy>) -> Result<TwinStore, StoreError> {
        Self::resume(rt, image, seed, metrics, outbound, None, false).await
    }

    /// Start a store that writes its rows to `journal`. With `restore`, the store continues
    /// the tape already in the journal (rows recorded before a restart): the world is
    /// rebuilt by replaying them on the seed snapshot, at their recorded times, and the
    /// virtual clock continues after the last. Webhooks are not sent again.
    pub async fn resume(
        rt: Arc<Runtime>,
        image: Arc<TwinImage>,
        seed: Arc<SeedImage>,
        metrics: Arc<Metrics>,
        outbound: Arc<crate::outbound::Policy>,
        journal: Option<Arc<dyn Journal>>,
        restore: bool,
    ) -> Result<TwinStore, StoreError> {
        let booted = boot(&rt, &image, &seed.snapshot).await?;
        let deliveries = crate::outbound::Deliveries::new(rt.held.clone());
        let mut worker = Worker::serving(rt, image, seed, booted, metrics, (outbound, deliveries), journal);
        if restore {
            worker.restore().await?;
            worker.checkpoint_if_due().await;
        }
        Ok(worker.start())
    }

    /// Start a store whose tape begins with `rows`, a fork's inheritance: rows 1..=N of
    /// another tape, in order. Its world is rebuilt from `base` (a checkpoint of that tape at
    /// or before row N) or the seed, by replaying the rows after it at their recorded times;
    /// the rows are marked inherited, written to `journal` (and committed before this
    /// returns, so a restart brings the fork back), and the virtual clock continues after
    /// the last. Nothing is delivered again. The replay runs on a background thread, so a
    /// long inheritance does not hold a thread that serves requests.
    #[allow(clippy::too_many_arguments)]
    pub async fn fork(
        rt: Arc<Runtime>,
        image: Arc<TwinImage>,
        seed: Arc<SeedImage>,
        metrics: Arc<Metrics>,
        outbound: Arc<crate::outbound::Policy>,
        journal: Option<Arc<dyn Journal>>,
        base: Option<Arc<Checkpoint>>,
        rows: Vec<TapeRow>,
    ) -> Result<TwinStore, StoreError> {
        if let Some((row, seq)) = rows.iter().zip(1..).find(|(r, seq)| r.seq != *seq) {
            return Err(StoreError::Journal(format!("an inherited tape must run 1, 2, …: row {seq} is row {}", row.seq)));
        }
        if let Some(c) = &base
            && c.seq > rows.len() as u64
        {
            return Err(StoreError::Journal(format!("a checkpoint after row {} cannot start a fork at row {}", c.seq, rows.len())));
        }
        let deliveries = crate::outbound::Deliveries::new(rt.held.clone());
        let background = rt.background.spawn({
            let rt = rt.clone();
            async move {
                let booted = boot(&rt, &image, base.as_ref().map_or(&seed.snapshot, |c| &c.snapshot)).await?;
                let mut worker = Worker::serving(rt, image, seed, booted, metrics, (outbound, deliveries), journal);
                worker.inherit(base, rows).await?;
                // The world just rebuilt is exact at the fork's row: keep it as the fork's
                // checkpoint rather than replay the inheritance again in the background.
                if worker.checkpoints.since > Duration::ZERO {
                    worker.checkpoint_here().await;
                }
                Ok::<_, StoreError>(worker)
            }
        });
        let mut worker = background.await.map_err(|_| StoreError::Closed)??;
        worker.checkpoint_if_due().await;
        Ok(worker.start())
    }

    /// The newest checkpoint of this store's world, if it has taken one.
    pub async fn checkpoint_at_or_before(&self, seq: u64) -> Result<Option<Arc<Checkpoint>>, StoreError> {
        self.ask(|reply| Msg::CheckpointAtOrBefore(seq, reply)).await
    }

    /// Serve one request. `record: false` for requests the host refused (bad credentials):
    /// the twin renders the refusal, but nothing reaches the tape.
    pub async fn handle(&self, req: TwinRequest) -> Result<TwinReply, StoreError> {
        self.ask(|tx| Msg::Handle(req, tx)).await
    }

    /// Have the twin render a host-side error in its API's own shape.
    pub async fn render_error(&self, kind: HostErrorKind, message: String) -> Result<TwinReply, StoreError> {
        self.ask(|tx| Msg::RenderError(kind, message, tx)).await
    }

    /// The whole tape, in order (older rows read back from the journal).
    pub async fn tape(&self) -> Result<Vec<Arc<TapeRow>>, StoreError> {
        self.rows_after(0, usize::MAX).await
    }

    /// At most `limit` rows with a sequence number above `after`, in order.
    pub async fn rows_after(&self, after: u64, limit: usize) -> Result<Vec<Arc<TapeRow>>, StoreError> {
        let view = self.ask(|reply| Msg::Tape { after, limit, reply }).await?;
        let mut out = Vec::new();
        if let Some((journal, from, to)) = view.older {
            out = read_all(&journal, from, to, limit).await?.into_iter().map(Arc::new).collect();
        }
        let room = limit - out.len();
        out.extend(view.recent.into_iter().take(room));
        Ok(out)
    }

    /// How many rows and bytes the tape has, and how many of them are in memory.
    pub async fn memory(&self) -> Result<TapeMemory, StoreError> {
        self.ask(Msg::Memory).await
    }

    /// The twin's `state()` JSON.
    pub async fn state(&self) -> Result<String, StoreError> {
        self.ask(|reply| Msg::Export(Export::State, reply)).await?
    }

    /// The world now as a seed document (contract 0.3.0's `export-seed`).
    pub async fn seed(&self) -> Result<String, StoreError> {
        self.ask(|reply| Msg::Export(Export::Seed, reply)).await?
    }

    async fn ask<R>(&self, msg: impl FnOnce(oneshot::Sender<R>) -> Msg) -> Result<R, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(msg(tx)).await.map_err(|_| StoreError::Closed)?;
        rx.await.map_err(|_| StoreError::Closed)
    }
}

/// A fresh store holding the world `snapshot` captured (a seed's, or a checkpoint's).
async fn boot(rt: &Runtime, image: &TwinImage, snapshot: &[u8]) -> Result<(Store<HostState>, TwinInstance), StoreError> {
    let mut store = rt.new_store();
    let instance = rt.instantiate(&mut store, image).await.map_err(|e| {
        let out_of_memory = e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::OutOfMemory));
        let pool_full = e.chain().any(|c| c.is::<wasmtime::PoolConcurrencyLimitError>());
        if out_of_memory {
            // Most often the kernel's cap on memory mappings (each store takes a handful).
            tracing::warn!(error = %format!("{e:#}"), "the system refused the memory mappings of a new twin store; raise vm.max_map_count (e.g. sysctl vm.max_map_count=262144) or lower --max-stores");
            StoreError::NoRoom(format!("the system refused its memory mappings ({e:#})"))
        } else if pool_full {
            StoreError::NoRoom(format!("every store slot is taken ({e:#}); pome serve --max-stores sets how many"))
        } else {
            StoreError::Instantiate(format!("{e:#}"))
        }
    })?;
    rt.call(&mut store, async |s| instance.restore(s, snapshot).await)
        .await?
        .map_err(StoreError::Restore)?;
    Ok((store, instance))
}

/// What a store answers to "rows after `after`": the rows still in memory, and where to
/// read the older ones (the journal and the range `from..to`) when some left memory.
struct TapeView {
    older: Option<(Arc<dyn Journal>, u64, u64)>,
    recent: Vec<Arc<TapeRow>>,
}

/// A tape as its store holds it: every row counted, the newest ones in memory.
#[derive(Default)]
struct Tape {
    /// Rows recorded (the last sequence number: they run 1, 2, … without gaps), and their
    /// weight, for the tape caps.
    rows: u64,
    bytes: usize,
    /// The weight of the rows that changed the world (a twin reports its changes): about
    /// the most the world can have grown by, where reads only lengthen the tape.
    changed_bytes: usize,
    /// The newest rows, `rows - recent.len() + 1 ..= rows`; older ones are in the journal.
    recent: VecDeque<Arc<TapeRow>>,
    /// Each row's weight and marks, one for one with `recent`.
    recent_marks: VecDeque<RowMarks>,
    /// The weight of `recent`, counted in `Held::tapes`.
    recent_bytes: usize,
    /// Rows known to be in the journal without asking it (those a restart read back).
    durable: u64,
}

impl Tape {
    /// The sequence number of the oldest row in memory (`rows + 1` when none is).
    fn first_in_memory(&self) -> u64 {
        self.rows + 1 - self.recent.len() as u64
    }
}

/// A row's `TapeRow::weight` (counted once, when the row is pushed, since counting walks
/// both bodies) and its marks, kept beside it in memory.
#[derive(Clone, Copy)]
struct RowMarks {
    weight: usize,
    marks: Marks,
}

/// The lengths and checksums of a row's bodies and answer headers. The search for a recent
/// row with the same bytes (`share_recorded`) compares these, side by side in one deque,
/// and reads a row itself only when they match: read through every row, a store called
/// once a second among thousands walked 64 rows of cold memory on every call.
#[derive(Clone, Copy, Default)]
struct Marks {
    request: Mark,
    response: Mark,
    headers: Mark,
}

/// A length and a CRC-32: equal bytes have equal marks; equal marks are then compared.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Mark(u64);

impl Mark {
    fn of(bytes: &[u8]) -> Mark {
        Mark(((bytes.len() as u64) << 32) | u64::from(crc32fast::hash(bytes)))
    }

    fn of_headers(headers: &[(String, String)]) -> Mark {
        let (mut crc, mut len) = (crc32fast::Hasher::new(), 0);
        for (name, value) in headers {
            for part in [name.as_bytes(), b"\0", value.as_bytes(), b"\0"] {
                crc.update(part);
                len += part.len();
            }
        }
        Mark(((len as u64) << 32) | u64::from(crc.finalize()))
    }
}

impl Marks {
    fn of(request_body: &[u8], response_body: &[u8], response_headers: &[(String, String)]) -> Marks {
        Marks { request: Mark::of(request_body), response: Mark::of(response_body), headers: Mark::of_headers(response_headers) }
    }

    fn of_row(row: &TapeRow) -> Marks {
        Marks::of(&row.request_body.0, &row.response_body.0, &row.response_headers)
    }
}

/// The world after row `seq`, as the twin's snapshot: where a rebuild, a fork or a look
/// at an earlier position starts replaying from.
pub struct Checkpoint {
    pub seq: u64,
    pub snapshot: Vec<u8>,
}

/// A checkpoint built off the store's path, and what building it cost apart from replaying
/// rows: restoring the previous world and snapshotting the new one, both as large as the world.
struct Built {
    checkpoint: Checkpoint,
    cost: Duration,
    /// Checkpoints taken along the way (see [`Checkpoints::mark_every`]), oldest first.
    marks: Vec<Checkpoint>,
    /// Rows replayed to build it (none for one taken in its store).
    replayed: u64,
}

/// Earlier checkpoints a store keeps besides its newest.
const KEPT_CHECKPOINTS: usize = 8;

/// What a store knows about checkpointing itself.
#[derive(Default)]
struct Checkpoints {
    /// Shared with the task building the next one, which starts from it.
    newest: Option<Arc<Checkpoint>>,
    /// Earlier ones, oldest first, so that the world after an earlier row (a fork, a look
    /// back) replays from near it. Past [`KEPT_CHECKPOINTS`], or the store's memory cap in
    /// bytes, every other one goes: the spacing doubles and the whole tape stays covered.
    earlier: Vec<Arc<Checkpoint>>,
    /// The next checkpoint, being built in a store of its own.
    building: Option<oneshot::Receiver<Result<Built, StoreError>>>,
    /// Guest time of the applied rows after the newest checkpoint (or the one being built):
    /// what a rebuild replays.
    since: Duration,
    /// What the last checkpoint cost beyond replaying its rows.
    cost: Duration,
    /// The tape's `changed_bytes` when the newest checkpoint (or the one being built) began:
    /// the world has grown by at most about what its changing rows weigh since.
    changed_bytes: usize,
    /// Set when a checkpoint failed: this store takes no more.
    off: bool,
    /// In a store building a checkpoint: snapshot the world also every this much replay, so
    /// that one build leaves checkpoints all along the rows it replayed, and the world after
    /// any of them (a fork, a look back) replays only a short way.
    mark_every: Option<Duration>,
    marks: Vec<Checkpoint>,
    /// What the last mark's snapshot took: marks wait ten times that too, so in a large
    /// world (a snapshot as long as the world is large) they take at most a tenth of the
    /// replay, as checkpoints take at most a tenth of a busy store's time.
    mark_cost: Duration,
    /// Raised by [`TwinStore::close`]: the sandbox is closing and its tape leaving the
    /// journal, so no checkpoint is begun, and one under way that fails for want of its rows
    /// is no news.
    closing: Arc<AtomicBool>,
}

struct Worker {
    rt: Arc<Runtime>,
    image: Arc<TwinImage>,
    seed: Arc<SeedImage>,
    store: Store<HostState>,
    instance: TwinInstance,
    tape: Tape,
    /// The last virtual time handed out, in Unix microseconds; times only move forward.
    last_us: u64,
    metrics: Arc<Metrics>,
    served: TwinRequestMetrics,
    /// Where this store's webhooks go and are logged; `None` when replaying, which must
    /// never send anything twice.
    outbound: Option<(Arc<crate::outbound::Policy>, crate::outbound::Log)>,
    /// Where rows go to be durable; `None` in memory-only mode and when replaying.
    journal: Option<Arc<dyn Journal>>,
    /// Set when the world itself has outgrown the memory cap: the refusal every later
    /// request gets.
    full: Option<String>,
    checkpoints: Checkpoints,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let c = &self.checkpoints;
        let checkpoints: usize = c.newest.iter().chain(&c.earlier).map(|c| c.snapshot.len()).sum();
        self.rt.held.tapes.fetch_sub(self.tape.recent_bytes + checkpoints, Relaxed);
    }
}

/// What wakes a store's task: a message, or the checkpoint it was building.
enum Wake {
    Msg(Msg),
    Built(Result<Result<Built, StoreError>, oneshot::error::RecvError>),
}

impl Worker {
    /// A store that only replays: no webhooks, no journal, no metrics anyone reads. It
    /// rebuilds a world from a snapshot and rows, for `replay` and for checkpoints.
    fn replayer(rt: Arc<Runtime>, image: Arc<TwinImage>, seed: Arc<SeedImage>, (store, instance): (Store<HostState>, TwinInstance)) -> Worker {
        let metrics = Arc::new(Metrics::default());
        let served = metrics.twin_requests(&image.name);
        Worker { rt, image, seed, store, instance, tape: Tape::default(), last_us: 0, metrics, served, outbound: None, journal: None, full: None, checkpoints: Checkpoints::default() }
    }

    /// A store that serves: its webhooks go out through `outbound`, its rows to `journal`.
    fn serving(
        rt: Arc<Runtime>,
        image: Arc<TwinImage>,
        seed: Arc<SeedImage>,
        (store, instance): (Store<HostState>, TwinInstance),
        metrics: Arc<Metrics>,
        outbound: (Arc<crate::outbound::Policy>, crate::outbound::Log),
        journal: Option<Arc<dyn Journal>>,
    ) -> Worker {
        let served = metrics.twin_requests(&image.name);
        Worker { rt, image, seed, store, instance, tape: Tape::default(), last_us: 0, metrics, served, outbound: Some(outbound), journal, full: None, checkpoints: Checkpoints::default() }
    }

    /// Start this store's task; the handle is how everyone else reaches it.
    fn start(self) -> TwinStore {
        let (tx, rx) = mpsc::channel(self.rt.limits.store_queue);
        let twin = self.image.name.clone();
        let credentials = self.image.description.credentials.clone().into();
        let deliveries = self.outbound.as_ref().map(|(_, log)| log.clone()).unwrap_or_else(|| crate::outbound::Deliveries::new(self.rt.held.clone()));
        let closing = self.checkpoints.closing.clone();
        tokio::spawn(self.run(rx));
        TwinStore { twin, credentials, deliveries, tx, closing }
    }

    /// Take `rows` (1..=N of another tape) as this tape's start: replay those after `base`
    /// (the world this store was booted from), record each as inherited, and wait until the
    /// journal holds them all.
    async fn inherit(&mut self, base: Option<Arc<Checkpoint>>, rows: Vec<TapeRow>) -> Result<(), StoreError> {
        let from = base.as_ref().map_or(1, |c| c.seq + 1);
        let mut committed = Vec::new();
        for mut row in rows {
            row.inherited = true;
            if row.applied && row.seq >= from {
                let started = Instant::now();
                self.call_handle(&mut replay_request(&row), row.ts, row.seq).await?;
                self.checkpoints.since += started.elapsed();
            }
            self.last_us = self.last_us.max(row.ts);
            let row = Arc::new(row);
            if let Some(journal) = &self.journal {
                let (tx, rx) = oneshot::channel();
                journal.append(row.clone(), Box::new(move |written| {
                    let _ = tx.send(written);
                }));
                committed.push(rx);
            }
            let marks = Marks::of_row(&row);
            self.push(row, marks);
        }
        for written in committed {
            written.await.map_err(|_| StoreError::Journal("the journal stopped".into()))?.map_err(StoreError::Journal)?;
        }
        self.tape.durable = self.tape.rows;
        if let Some(c) = base {
            self.rt.held.tapes.fetch_add(c.snapshot.len(), Relaxed);
            self.checkpoints.newest = Some(c);
        }
        self.trim();
        Ok(())
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        // A message taken from the queue while gathering requests, served next.
        let mut next: Option<Msg> = None;
        loop {
            let building = &mut self.checkpoints.building;
            // In this order: a finished checkpoint is installed first (a store whose queue
            // never empties must not starve it), then the message taken aside, then the queue.
            let wake = tokio::select! {
                biased;
                built = async { building.as_mut().expect("guarded by the branch's condition").await }, if building.is_some() => Wake::Built(built),
                msg = async { next.take() }, if next.is_some() => Wake::Msg(msg.expect("guarded by the branch's condition")),
                msg = rx.recv() => match msg {
                    Some(msg) => Wake::Msg(msg),
                    None => return,
                },
            };
            let msg = match wake {
                Wake::Msg(msg) => msg,
                Wake::Built(built) => {
                    self.install(built, Instant::now());
                    continue;
                }
            };
            match msg {
                Msg::Handle(req, reply) => {
                    // Requests already queued behind this one are served with it, and their
                    // rows go to the journal together: one write for a busy store's queue
                    // rather than one each. A few at most, so the first answer is not held
                    // for long.
                    let mut logging = Vec::new();
                    let (mut req, mut reply) = (req, reply);
                    let gathering = Instant::now();
                    loop {
                        let (answer, row) = self.serve(req).await;
                        self.answer(answer, row, reply, &mut logging);
                        if logging.len() >= GATHER_ROWS || gathering.elapsed() >= GATHER_FOR {
                            break;
                        }
                        match rx.try_recv() {
                            Ok(Msg::Handle(r, tx)) => (req, reply) = (r, tx),
                            Ok(other) => {
                                next = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    if let Some(journal) = &self.journal
                        && !logging.is_empty()
                    {
                        journal.append_all(logging);
                    }
                    // After the answers left, so no request waits on the snapshot.
                    self.checkpoint_if_due().await;
                }
                Msg::RenderError(kind, message, reply) => {
                    let _ = reply.send(self.render_error(kind, message).await);
                }
                Msg::Tape { after, limit, reply } => {
                    let first = self.tape.first_in_memory();
                    let older = match &self.journal {
                        Some(journal) if after + 1 < first => Some((journal.clone(), after + 1, first)),
                        _ => None,
                    };
                    let recent = self.tape.recent.iter().filter(|r| r.seq > after).take(limit).cloned().collect();
                    let _ = reply.send(TapeView { older, recent });
                }
                Msg::CheckpointAtOrBefore(seq, reply) => {
                    let c = &self.checkpoints;
                    let _ = reply.send(c.earlier.iter().chain(&c.newest).rev().find(|c| c.seq <= seq).cloned());
                }
                Msg::Memory(reply) => {
                    let t = &self.tape;
                    let _ = reply.send(TapeMemory { rows: t.rows, bytes: t.bytes, rows_in_memory: t.recent.len(), bytes_in_memory: t.recent_bytes });
                }
                Msg::Export(what, reply) => {
                    let out = export(&self.rt, &mut self.store, &self.instance, what).await;
                    // A trap or deadline may have left the world half-changed: rebuild it.
                    if let Err(StoreError::Guest(e)) = &out {
                        self.recover(e).await;
                    }
                    let _ = reply.send(out);
                }
            }
        }
    }

    /// Send `answer`, or, when its row goes to the journal, add the row to `logging` with
    /// what sends the answer once the row is durable (per the mode).
    fn answer(&self, answer: TwinReply, row: Option<Arc<TapeRow>>, reply: oneshot::Sender<TwinReply>, logging: &mut Vec<(Arc<TapeRow>, Done)>) {
        // Webhooks the row asked for leave with its answer, never before the row is durable:
        // a delivery must not announce what a crash then forgets.
        let outbound = self.outbound.clone().filter(|_| row.as_ref().is_some_and(|r| !r.deliveries.is_empty()));
        match (&self.journal, row) {
            (Some(_), Some(row)) => logging.push((
                row.clone(),
                Box::new(move |written| {
                    let answer = match written {
                        Ok(()) => {
                            if let Some((policy, log)) = outbound {
                                crate::outbound::send_row(&policy, &log, &row);
                            }
                            answer
                        }
                        Err(e) => fallback(503, &format!("the request was served but could not be recorded durably: {e}")),
                    };
                    let _ = reply.send(answer);
                }),
            )),
            (_, row) => {
                if let (Some((policy, log)), Some(row)) = (outbound, row) {
                    crate::outbound::send_row(&policy, &log, &row);
                }
                let _ = reply.send(answer);
            }
        }
    }

    /// Serve one request: the answer, and the tape row it made (none for a refusal).
    async fn serve(&mut self, mut req: TwinRequest) -> (TwinReply, Option<Arc<TapeRow>>) {
        let twin = self.image.name.clone();
        if self.tape.rows >= self.rt.limits.tape_rows as u64 || self.tape.bytes >= self.rt.limits.tape_bytes {
            let msg = format!(
                "this sandbox's {twin} tape is full ({} rows, {} MiB cap); finalize the sandbox and start a new one",
                self.tape.rows,
                self.rt.limits.tape_bytes >> 20
            );
            return (self.render_error(HostErrorKind::TapeFull, msg).await, None);
        }
        if let Some(msg) = self.full.clone() {
            return (self.render_error(HostErrorKind::TapeFull, msg).await, None);
        }
        if let Some(msg) = self.journal.as_ref().and_then(|j| j.unavailable()) {
            // In the twin's own error shape, with the status and header every client library
            // knows to retry on.
            let mut reply = self.render_error(HostErrorKind::TwinFailed, msg).await;
            reply.status = 503;
            let mut headers: Vec<(String, String)> = reply.headers.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("retry-after")).cloned().collect();
            headers.push(("retry-after".into(), "1".into()));
            reply.headers = headers.into();
            return (reply, None);
        }

        let started = Instant::now();
        let ts = self.next_time();
        let seq = self.tape.rows + 1;
        let handled = self.call_handle(&mut req, ts, seq).await;
        let guest = started.elapsed();
        let (reply, facts, error, applied) = match handled {
            // Refused by the host and only rendered by the twin: not a tape row. (A twin
            // may serve a route without a credential, e.g. a pre-signed upload URL; that
            // request reached its router, so it is recorded like any other.)
            Ok((reply, facts)) if req.auth != Auth::Agent && facts.action.is_none() && !facts.unsupported => return (TwinReply { refused: true, ..reply }, None),
            Ok((reply, facts)) if reply.body.len() > self.rt.limits.response_body_bytes => {
                let msg = format!(
                    "the {twin} twin answered {} bytes, over the {} MiB response cap",
                    reply.body.len(),
                    self.rt.limits.response_body_bytes >> 20
                );
                // The twin did its work; only the answer is refused. Its changes stand.
                (self.render_error(HostErrorKind::TwinFailed, msg.clone()).await, facts, Some(msg), true)
            }
            Ok((reply, facts)) => (reply, facts, None, true),
            Err(e) => {
                self.metrics.trap(&twin);
                let msg = format!("{e}; the sandbox was rebuilt and the request had no effect");
                self.recover(&e).await;
                self.note_full(&e);
                let reply = self.render_error(HostErrorKind::TwinFailed, msg.clone()).await;
                (reply, engine::CallFacts::default(), Some(msg), false)
            }
        };
        let changes = facts.changes;
        let marks = Marks::of(&req.body, &reply.body, &reply.headers);
        let reply = self.share_recorded(reply, marks);
        let request_body = self.recorded_body(req.body, marks.request);
        let row = TapeRow {
            seq,
            ts,
            twin: twin.clone(),
            request_id: req.request_id,
            method: req.method,
            path: req.path,
            query: req.query,
            request_headers: req.headers,
            request_body,
            base_url: req.base_url,
            auth: auth_name(req.auth).to_string(),
            via: req.via,
            tool: req.tool,
            status: reply.status,
            response_headers: reply.headers.clone(),
            response_body: Body(reply.body.clone()),
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            action: facts.action,
            fidelity: if facts.unsupported { Fidelity::Unsupported } else { Fidelity::Semantic },
            state_mutation: !changes.is_empty(),
            state_delta: changes,
            deliveries: facts.deliveries.into_iter().map(|d| pome_contract::Delivery {
                url: d.url,
                method: d.method,
                headers: d.headers,
                body: Body(d.body.into()).to_text(),
                event: d.event,
            }).collect(),
            error,
            applied,
            inherited: false,
        };
        if row.applied {
            self.checkpoints.since += guest;
        }
        let row = Arc::new(row);
        self.push(row.clone(), marks);
        self.served.observe(started.elapsed(), guest);
        (reply, Some(row))
    }

    /// One `handle` call at virtual time `ts_us` with the PRNG at request `seq`, returning
    /// the reply and what the guest reported. The request is lent to the guest and handed
    /// back unchanged (moved, not copied: bodies can be large).
    async fn call_handle(&mut self, req: &mut TwinRequest, ts_us: u64, seq: u64) -> Result<(TwinReply, engine::CallFacts), GuestError> {
        self.store.data().clock.set_micros(ts_us);
        self.store.data().random.reseed(&self.seed.digest, seq);
        engine::begin_facts(&mut self.store);
        let wit_req = HttpRequest {
            method: std::mem::take(&mut req.method),
            path: std::mem::take(&mut req.path),
            query: std::mem::take(&mut req.query),
            headers: std::mem::take(&mut req.headers),
            body: std::mem::take(&mut req.body),
            base_url: std::mem::take(&mut req.base_url),
            auth: req.auth,
        };
        let twin = &self.instance;
        let result = self.rt.call(&mut self.store, async |s| twin.handle(s, &wit_req).await).await;
        // Taken before looking at the result, so a failed call cannot leak into the next.
        let facts = engine::take_facts(&mut self.store);
        let HttpRequest { method, path, query, headers, body, base_url, .. } = wit_req;
        (req.method, req.path, req.query, req.headers, req.body, req.base_url) = (method, path, query, headers, body, base_url);
        Ok((result?.into(), facts))
    }

    /// Add a row to the tape, then let rows the journal holds leave memory.
    fn push(&mut self, row: Arc<TapeRow>, marks: Marks) {
        let weight = row.weight();
        let t = &mut self.tape;
        t.rows = row.seq;
        t.bytes += weight;
        if row.state_mutation {
            t.changed_bytes += weight;
        }
        t.recent_bytes += weight;
        self.rt.held.tapes.fetch_add(weight, Relaxed);
        t.recent.push_back(row);
        t.recent_marks.push_back(RowMarks { weight, marks });
        self.trim();
    }

    /// Drop the oldest rows in memory past the tape's memory bounds, as far as the journal
    /// has committed them. Without a journal every row stays.
    fn trim(&mut self) {
        let Some(journal) = &self.journal else { return };
        let (max_rows, max_bytes) = (self.rt.limits.tape_memory_rows, self.rt.limits.tape_memory_bytes);
        let t = &mut self.tape;
        if t.recent.len() <= max_rows && t.recent_bytes <= max_bytes {
            return;
        }
        let durable = t.durable.max(journal.durable_through());
        let mut freed = 0;
        while t.recent.len() > max_rows || t.recent_bytes > max_bytes {
            match t.recent.front() {
                Some(r) if r.seq <= durable => {
                    let w = t.recent_marks.pop_front().map_or(0, |m| m.weight);
                    t.recent.pop_front();
                    t.recent_bytes -= w;
                    freed += w;
                }
                _ => break,
            }
        }
        self.rt.held.tapes.fetch_sub(freed, Relaxed);
    }

    /// Rows recent enough to be worth sharing bytes with (clients repeat themselves), newest
    /// first, with their marks.
    fn recent_rows(&self) -> impl Iterator<Item = (&TapeRow, &Marks)> {
        let t = &self.tape;
        t.recent.iter().zip(&t.recent_marks).rev().take(SHARE_WINDOW).map(|(r, m)| (&**r, &m.marks))
    }

    /// A request body for the tape, sharing a recent row's copy when the bytes are the same.
    fn recorded_body(&self, body: Vec<u8>, mark: Mark) -> Body {
        self.recent_rows()
            .find(|(r, m)| m.request == mark && *r.request_body.0 == *body)
            .map(|(r, _)| r.request_body.clone())
            .unwrap_or_else(|| Body(body.into()))
    }

    /// The reply with its headers and body swapped for a recent row's identical ones, so a
    /// client polling an unchanged answer does not grow the tape by a copy each time.
    fn share_recorded(&self, mut reply: TwinReply, marks: Marks) -> TwinReply {
        if let Some((r, _)) = self.recent_rows().find(|(r, m)| m.response == marks.response && r.response_body.0 == reply.body) {
            reply.body = r.response_body.0.clone();
        }
        if let Some((r, _)) = self.recent_rows().find(|(r, m)| m.headers == marks.headers && r.response_headers == reply.headers) {
            reply.headers = r.response_headers.clone();
        }
        reply
    }

    async fn render_error(&mut self, kind: HostErrorKind, message: String) -> TwinReply {
        let twin = &self.instance;
        let err = HostError { kind, message: message.clone() };
        match self.rt.call(&mut self.store, async |s| twin.render_error(s, &err).await).await {
            Ok(r) => r.into(),
            Err(e) => {
                self.recover(&e).await;
                fallback(500, &message)
            }
        }
    }

    /// After a guest failure: rebuild the store and replay the tape. If even that fails
    /// (a twin that is not deterministic), the old store stays and later calls say so.
    async fn recover(&mut self, cause: &GuestError) {
        tracing::warn!(twin = %self.image.name, error = %cause, "twin failed; rebuilding its store from the seed snapshot and the tape");
        self.metrics.rebuild(&self.image.name);
        match self.rebuild().await {
            Ok(()) => {}
            Err(e) => tracing::error!(twin = %self.image.name, error = %e, "rebuilding the twin store failed"),
        }
    }

    /// After a request ran out of memory and the store was rebuilt: when the rebuilt world
    /// alone holds more than half the cap, the world is what fills it, and every later request
    /// would fail the same way, each paying a replay of the whole tape. Such a store refuses
    /// from then on, at once and in the twin's own shape. (A single request that balloons on a
    /// small world leaves the rebuilt store small, and the sandbox goes on.)
    fn note_full(&mut self, cause: &GuestError) {
        let cap = self.rt.limits.store_memory_bytes;
        let grown = self.store.data().memory_grown();
        if matches!(cause, GuestError::Memory(_)) && grown > cap / 2 {
            self.full = Some(format!(
                "this sandbox's {} store is full: its world holds about {} MiB of its {} MiB memory cap, and a request ran out of the rest; finalize the sandbox and start a new one (the host's --store-memory-mib sets the cap)",
                self.image.name,
                grown >> 20,
                cap >> 20
            ));
        }
    }

    async fn rebuild(&mut self) -> Result<(), StoreError> {
        let from_checkpoint = match &self.checkpoints.newest {
            Some(c) => match boot(&self.rt, &self.image, &c.snapshot).await {
                Ok(booted) => Some((booted, c.seq + 1)),
                Err(e) => {
                    // The twin's own snapshot did not restore: start over from the seed.
                    tracing::warn!(twin = %self.image.name, error = %e, "a checkpoint did not restore; replaying the whole tape");
                    self.drop_checkpoint();
                    self.checkpoints.off = true;
                    None
                }
            },
            None => None,
        };
        let ((store, instance), from) = match from_checkpoint {
            Some(c) => c,
            None => (boot(&self.rt, &self.image, &self.seed.snapshot).await?, 1),
        };
        let old_store = std::mem::replace(&mut self.store, store);
        let old_instance = std::mem::replace(&mut self.instance, instance);
        if let Err(e) = self.replay_tape(from).await {
            self.store = old_store;
            self.instance = old_instance;
            return Err(e);
        }
        Ok(())
    }

    /// Apply the tape's applied rows from `from` on to the current store, each at its
    /// recorded time: the older ones read back from the journal a page at a time, then those
    /// in memory.
    async fn replay_tape(&mut self, from: u64) -> Result<u64, StoreError> {
        let first = self.tape.first_in_memory();
        let recent: Vec<Arc<TapeRow>> = self.tape.recent.iter().filter(|r| r.applied && r.seq >= from).cloned().collect();
        let mut replayed = 0;
        if from < first {
            let journal = self.journal.clone().ok_or_else(|| StoreError::Journal("rows left memory without a journal".into()))?;
            let mut from = from;
            while from < first {
                let page = read_all(&journal, from, first, READ_PAGE).await?;
                from += page.len() as u64;
                for row in page.iter().filter(|r| r.applied) {
                    self.replay_row(row).await?;
                    replayed += 1;
                }
            }
        }
        for row in recent {
            self.replay_row(&row).await?;
            replayed += 1;
        }
        self.metrics.replayed(&self.image.name, replayed);
        Ok(replayed)
    }

    /// Replay one row; in a store marking its way (see [`Checkpoints::mark_every`]), snapshot
    /// the world once enough replay has gone by since the last mark, and ten times what that
    /// mark's snapshot took.
    async fn replay_row(&mut self, row: &TapeRow) -> Result<(), StoreError> {
        let started = Instant::now();
        self.call_handle(&mut replay_request(row), row.ts, row.seq).await?;
        let Some(every) = self.checkpoints.mark_every else { return Ok(()) };
        self.checkpoints.since += started.elapsed();
        if self.checkpoints.since >= every.max(self.checkpoints.mark_cost * 10) && row.seq < self.tape.rows {
            self.checkpoints.since = Duration::ZERO;
            let snapping = Instant::now();
            let twin = &self.instance;
            let snapshot = self.rt.call(&mut self.store, async |s| twin.snapshot(s).await).await?;
            self.checkpoints.mark_cost = snapping.elapsed();
            self.checkpoints.marks.push(Checkpoint { seq: row.seq, snapshot });
        }
        Ok(())
    }

    /// Checkpoint when the rows since the last one took long enough to be worth not
    /// replaying. A small world (its last snapshot and the rows since that changed it within
    /// `checkpoint_inline_bytes`) is snapshotted here, between requests, in about a
    /// millisecond. A larger one is built off the store's path: a background thread boots a
    /// store of its own from the newest checkpoint (or the seed), replays the rows since at
    /// their recorded times, and snapshots that, while this store goes on serving, so a world of any size never stalls it; the price is replaying
    /// those rows twice. Either way a checkpoint waits ten times what the last one cost
    /// beyond replaying, so checkpoints take at most a tenth of a busy store's time.
    async fn checkpoint_if_due(&mut self) {
        let c = &self.checkpoints;
        if c.off || c.building.is_some() || c.closing.load(Relaxed) || c.since < self.rt.limits.checkpoint_after.max(c.cost * 10) {
            return;
        }
        // The changing rows since count requests and answers, more than the world grew by: a
        // world near the line goes off the path rather than stall its store. Reads count for
        // nothing, so a world read far more than written (a flood of `auth.test`) is
        // snapshotted in place, not replayed row by row off the path. A twin that changes its
        // world without saying so costs only itself: its next snapshot is larger than
        // guessed, and from then on the snapshot's real size sends it off the path.
        let last_size = c.newest.as_ref().map_or(self.seed.snapshot.len(), |c| c.snapshot.len());
        let grown = self.tape.changed_bytes - c.changed_bytes;
        let base = c.newest.clone();
        self.checkpoints.changed_bytes = self.tape.changed_bytes;
        if last_size + grown <= self.rt.limits.checkpoint_inline_bytes {
            return self.checkpoint_here().await;
        }
        let from = base.as_ref().map_or(1, |c| c.seq + 1);
        // Rows that left memory are committed, so the journal gives them back.
        let journal = self.journal.clone();
        // The rows go with their marks, weighing nothing: the replayer does not count them.
        let (recent, recent_marks): (VecDeque<_>, VecDeque<_>) =
            self.tape.recent.iter().zip(&self.tape.recent_marks).filter(|(r, _)| r.seq >= from).map(|(r, m)| (r.clone(), RowMarks { weight: 0, ..*m })).unzip();
        let (rt, image, seed, upto) = (self.rt.clone(), self.image.clone(), self.seed.clone(), self.tape.rows);
        self.checkpoints.since = Duration::ZERO;
        let background = &self.rt.background;
        self.checkpoints.building = Some(background.spawn(async move {
            let started = Instant::now();
            let booted = boot(&rt, &image, base.as_ref().map_or(&seed.snapshot, |c| &c.snapshot)).await?;
            let mut replayer = Worker::replayer(rt, image, seed, booted);
            replayer.journal = journal;
            replayer.tape.rows = upto;
            (replayer.tape.recent, replayer.tape.recent_marks) = (recent, recent_marks);
            replayer.checkpoints.mark_every = Some(replayer.rt.limits.checkpoint_after / 4);
            let replaying = Instant::now();
            let rows = replayer.replay_tape(from).await?;
            let replayed = replaying.elapsed();
            let twin = &replayer.instance;
            let snapshot = replayer.rt.call(&mut replayer.store, async |s| twin.snapshot(s).await).await?;
            let marks = std::mem::take(&mut replayer.checkpoints.marks);
            Ok(Built { checkpoint: Checkpoint { seq: upto, snapshot }, cost: started.elapsed().saturating_sub(replayed), marks, replayed: rows })
        }));
    }

    /// Snapshot this store's world between requests. A snapshot that fails poisons the store
    /// like any guest failure: it is rebuilt, and takes no more checkpoints.
    async fn checkpoint_here(&mut self) {
        let started = Instant::now();
        let twin = &self.instance;
        match self.rt.call(&mut self.store, async |s| twin.snapshot(s).await).await {
            Ok(snapshot) => {
                self.checkpoints.since = Duration::ZERO;
                self.install(Ok(Ok(Built { checkpoint: Checkpoint { seq: self.tape.rows, snapshot }, cost: started.elapsed(), marks: Vec::new(), replayed: 0 })), started);
            }
            Err(e) => {
                self.checkpoints.off = true;
                self.recover(&e).await;
            }
        }
    }

    /// Take a checkpoint built off the path as the newest. One that failed (a twin whose
    /// replay or snapshot traps) turns checkpoints off for this store; the store itself is
    /// untouched, and a rebuild replays from the last good one.
    fn install(&mut self, built: Result<Result<Built, StoreError>, oneshot::error::RecvError>, paused_since: Instant) {
        self.checkpoints.building = None;
        match built {
            Ok(Ok(Built { checkpoint, cost, marks, replayed })) => {
                self.retire_newest();
                for mark in marks {
                    self.rt.held.tapes.fetch_add(mark.snapshot.len(), Relaxed);
                    self.checkpoints.earlier.push(Arc::new(mark));
                }
                self.thin_checkpoints();
                self.rt.held.tapes.fetch_add(checkpoint.snapshot.len(), Relaxed);
                self.checkpoints.newest = Some(Arc::new(checkpoint));
                self.checkpoints.cost = cost;
                self.metrics.checkpoint(&self.image.name, paused_since.elapsed(), replayed);
            }
            Ok(Err(e)) if self.checkpoints.closing.load(Relaxed) => {
                tracing::debug!(twin = %self.image.name, error = %e, "building a checkpoint failed as its sandbox closed");
                self.checkpoints.off = true;
            }
            Ok(Err(e)) => {
                tracing::warn!(twin = %self.image.name, error = %e, "building a checkpoint failed; this store takes no more");
                self.checkpoints.off = true;
            }
            Err(e) => {
                tracing::warn!(twin = %self.image.name, error = %e, "the thread building a checkpoint stopped; this store takes no more");
                self.checkpoints.off = true;
            }
        }
    }

    /// Drop every checkpoint (one did not restore: none is trusted).
    fn drop_checkpoint(&mut self) {
        for c in self.checkpoints.newest.take().into_iter().chain(self.checkpoints.earlier.drain(..)) {
            self.rt.held.tapes.fetch_sub(c.snapshot.len(), Relaxed);
        }
    }

    /// The newest checkpoint becomes an earlier one, making room for the next.
    fn retire_newest(&mut self) {
        let Some(c) = self.checkpoints.newest.take() else { return };
        self.checkpoints.earlier.push(c);
        self.thin_checkpoints();
    }

    /// Keep the earlier checkpoints within [`KEPT_CHECKPOINTS`] and the store's memory cap.
    fn thin_checkpoints(&mut self) {
        let earlier = &mut self.checkpoints.earlier;
        let cap = self.rt.limits.store_memory_bytes;
        while earlier.len() > KEPT_CHECKPOINTS || (earlier.len() > 1 && earlier.iter().map(|c| c.snapshot.len()).sum::<usize>() > cap) {
            let mut i = 0;
            earlier.retain(|c| {
                i += 1;
                let keep = i % 2 == 1;
                if !keep {
                    self.rt.held.tapes.fetch_sub(c.snapshot.len(), Relaxed);
                }
                keep
            });
        }
    }

    /// Continue the tape the journal holds from before a restart: replay its rows a page at
    /// a time, keeping the newest in memory, and move the virtual clock past the last.
    async fn restore(&mut self) -> Result<(), StoreError> {
        let Some(journal) = self.journal.clone() else { return Ok(()) };
        loop {
            let from = self.tape.rows + 1;
            let page = read_rows(&journal, from, u64::MAX, READ_PAGE).await?;
            let last_page = page.len() < READ_PAGE;
            for row in page {
                if row.applied {
                    let started = Instant::now();
                    self.call_handle(&mut replay_request(&row), row.ts, row.seq).await?;
                    self.checkpoints.since += started.elapsed();
                }
                self.last_us = self.last_us.max(row.ts);
                self.tape.durable = row.seq;
                let marks = Marks::of_row(&row);
                self.push(Arc::new(row), marks);
            }
            if last_page {
                return Ok(());
            }
        }
    }

    fn next_time(&mut self) -> u64 {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_micros() as u64;
        self.last_us = now.max(self.last_us + 1);
        self.last_us
    }
}

/// The request a tape row records, as the twin saw it.
pub fn replay_request(row: &TapeRow) -> TwinRequest {
    TwinRequest {
        request_id: row.request_id.clone(),
        method: row.method.clone(),
        path: row.path.clone(),
        query: row.query.clone(),
        headers: row.request_headers.clone(),
        body: row.request_body.0.to_vec(),
        base_url: row.base_url.clone(),
        auth: match row.auth.as_str() {
            "missing" => Auth::Missing,
            "invalid" => Auth::Invalid,
            _ => Auth::Agent,
        },
        via: row.via.clone(),
        tool: row.tool.clone(),
    }
}

fn auth_name(a: Auth) -> &'static str {
    match a {
        Auth::Agent => "agent",
        Auth::Missing => "missing",
        Auth::Invalid => "invalid",
    }
}

/// An answer when even the twin cannot render one.
fn fallback(status: u16, message: &str) -> TwinReply {
    let body = serde_json::json!({"error": {"type": "internal_error", "message": message}});
    TwinReply {
        status,
        headers: vec![("content-type".to_string(), "application/json".to_string())].into(),
        body: serde_json::to_vec(&body).unwrap().into(),
        refused: false,
    }
}

/// The twin's state export of the world after the last of `rows` (rows 1..=N of a tape, or
/// none: the seed's world), rebuilt on a background thread from `base` (a checkpoint of that
/// tape at or before row N) or the seed.
pub async fn state_after(rt: Arc<Runtime>, image: Arc<TwinImage>, seed: Arc<SeedImage>, base: Option<Arc<Checkpoint>>, rows: Vec<TapeRow>) -> Result<String, StoreError> {
    export_after(rt, image, seed, base, rows, Export::State).await
}

/// [`state_after`], reading `what` out of the rebuilt world.
pub async fn export_after(rt: Arc<Runtime>, image: Arc<TwinImage>, seed: Arc<SeedImage>, base: Option<Arc<Checkpoint>>, rows: Vec<TapeRow>, what: Export) -> Result<String, StoreError> {
    let job = rt.background.spawn({
        let rt = rt.clone();
        async move {
            let booted = boot(&rt, &image, base.as_ref().map_or(&seed.snapshot, |c| &c.snapshot)).await?;
            let mut w = Worker::replayer(rt, image, seed, booted);
            let from = base.as_ref().map_or(1, |c| c.seq + 1);
            for row in rows.iter().filter(|r| r.applied && r.seq >= from) {
                w.call_handle(&mut replay_request(row), row.ts, row.seq).await?;
            }
            export(&w.rt, &mut w.store, &w.instance, what).await
        }
    });
    job.await.map_err(|_| StoreError::Closed)?
}

/// One response that came out differently on replay.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Mismatch {
    pub seq: u64,
    pub expected_status: u16,
    pub actual_status: u16,
    pub expected_body: String,
    pub actual_body: String,
}

/// Re-execute `rows` (a tape) on a fresh store booted from `seed`, each at its recorded time
/// and sequence number, and report every response that differs from the recorded one.
/// A deterministic twin gives none.
pub async fn replay(rt: Arc<Runtime>, image: Arc<TwinImage>, seed: Arc<SeedImage>, rows: &[TapeRow]) -> Result<Vec<Mismatch>, StoreError> {
    let booted = boot(&rt, &image, &seed.snapshot).await?;
    let mut w = Worker::replayer(rt, image, seed, booted);
    let mut out = Vec::new();
    for row in rows.iter().filter(|r| r.applied) {
        let (reply, facts) = w.call_handle(&mut replay_request(row), row.ts, row.seq).await?;
        if row.error.is_some() {
            // Applied but answered by the host (an answer over the size cap): its effect is
            // replayed, its answer was never the twin's to compare.
            continue;
        }
        // The webhooks the twin asks for are part of its answer: same bytes, same order.
        let asked: Vec<(String, String)> = facts.deliveries.into_iter().map(|d| (d.url, Body(d.body.into()).to_text())).collect();
        let recorded: Vec<(String, String)> = row.deliveries.iter().map(|d| (d.url.clone(), d.body.clone())).collect();
        if reply.status != row.status || reply.body != row.response_body.0 || reply.headers != row.response_headers || asked != recorded {
            out.push(Mismatch {
                seq: row.seq,
                expected_status: row.status,
                actual_status: reply.status,
                expected_body: row.response_body.to_text(),
                actual_body: Body(reply.body).to_text(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn equal_bytes_have_equal_marks_so_a_repeat_is_still_found() {
        assert!(Mark::of(b"{\"ok\":true}") == Mark::of(b"{\"ok\":true}".to_vec().as_slice()));
        let h = [("content-type", "application/json"), ("x-ratelimit-remaining", "4999")];
        assert!(Mark::of_headers(&headers(&h)) == Mark::of_headers(&headers(&h)));
    }

    #[test]
    fn answers_that_differ_have_different_marks_so_no_row_is_read_for_them() {
        // Same length, one byte apart: a rate-limit counter going down.
        let a = headers(&[("x-ratelimit-remaining", "4999")]);
        let b = headers(&[("x-ratelimit-remaining", "4998")]);
        assert!(Mark::of_headers(&a) != Mark::of_headers(&b));
        assert!(Mark::of(b"{\"ts\":\"1.000001\"}") != Mark::of(b"{\"ts\":\"1.000002\"}"));
        // Where a name ends and its value begins is part of the mark.
        assert!(Mark::of_headers(&headers(&[("ab", "c")])) != Mark::of_headers(&headers(&[("a", "bc")])));
        assert!(Mark::of(b"abc") != Mark::of(b"abcd"));
    }
}
