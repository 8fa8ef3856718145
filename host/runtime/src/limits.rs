//! Every limit the host enforces, in one place. Each has a default chosen for a 2-core,
//! 24 GiB machine hosting thousands of sandboxes, and one CLI flag to override it
//! (`pome serve --help`). Every store is built through `runtime::Runtime::new_store`, which
//! always installs the memory cap and the deadline.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Limits {
    /// Linear memory one twin store may grow to. Real twins hold a seeded world of a few MB;
    /// 128 MiB leaves room for large seeds while a runaway guest is stopped long before it
    /// hurts the host.
    pub store_memory_bytes: usize,
    /// CPU time one guest call may take. Twins answer in microseconds; a second means a
    /// loop, not work.
    pub call_deadline: Duration,
    /// Largest request body passed to a twin (file uploads are the big ones).
    pub request_body_bytes: usize,
    /// Largest response a twin may return; larger ones are refused, not truncated.
    pub response_body_bytes: usize,
    /// Bytes a guest may pass through tape imports while serving one request, so a guest
    /// cannot exhaust host memory through `record-change`.
    pub host_call_bytes: usize,
    /// Rows per twin tape. At the cap, requests are refused rather than served unrecorded.
    pub tape_rows: usize,
    /// Bytes of recorded bodies per twin tape, the same rule as `tape_rows`.
    pub tape_bytes: usize,
    /// Rows of one tape kept in memory when its rows are durable on disk (`--durability`
    /// sync or window): older rows leave memory once committed and are read back from disk
    /// when a whole tape is read (events, finalize, recovery). In memory-only mode every
    /// row stays in memory, bounded by `tape_rows`, `tape_bytes` and `memory_budget`.
    pub tape_memory_rows: usize,
    /// Bytes of one tape kept in memory, the same rule as `tape_memory_rows`.
    pub tape_memory_bytes: usize,
    /// Largest seed accepted at sandbox create.
    pub seed_bytes: usize,
    /// Bytes of named seeds (`POST /v1/seeds`) one team may store. Sixteen seeds at the seed
    /// cap: room for a suite's worlds, not for using the server as a disk.
    pub team_seed_bytes: usize,
    /// Twin stores that may exist at once, across all sandboxes: the pooling allocator
    /// reserves address space for this many up front.
    pub max_stores: u32,
    /// Requests queued for one store before callers wait; one store serves one at a time.
    pub store_queue: usize,
    /// Seed snapshots kept in memory (one per distinct (twin, seed) pair).
    pub seed_cache_entries: usize,
    /// Client connections held at once, so a flood of clients costs bounded memory and file
    /// descriptors. At the cap a new client takes the place of the connection that has been
    /// idle longest; when none is idle, it waits until one closes.
    pub max_connections: usize,
    /// Time a client has to send a request's headers, from when the connection is ready for
    /// one (so also how long a kept-alive connection may sit idle); then it is closed. A slow
    /// client (slowloris) holds a connection no longer than this.
    pub header_timeout: Duration,
    /// Time a client has to send a request's whole body, from when its headers arrived. A
    /// client trickling its body a byte at a time holds the request (and the connection)
    /// no longer than this; 16 MiB takes well under a second on any link that serves agents.
    pub body_timeout: Duration,
    /// Requests one HTTP/2 connection may have in flight at once. hyper's default (200) lets
    /// one connection queue more work than a hundred HTTP/1 clients; an agent's SDK opens a
    /// handful of streams at most.
    pub h2_streams: u32,
    /// Guest time a store spends on requests after its last checkpoint before it takes
    /// another (its world's snapshot, taken between requests). A trap or a deadline rebuilds
    /// the store from its newest checkpoint and replays only the rows after it, so recovering
    /// costs about this much however long the tape. A world whose snapshot is slow waits ten
    /// snapshots' time, so checkpoints never take more than a tenth of a busy store's time.
    pub checkpoint_after: Duration,
    /// A world whose last snapshot was at most this many bytes is checkpointed in its store,
    /// between requests: serialising it takes about a millisecond. A larger one is checkpointed
    /// off the store's path (see `store`), so no checkpoint stalls a large world's requests.
    pub checkpoint_inline_bytes: usize,
    /// Memory all twin stores' linear memories and all tapes may hold together. Past it, new
    /// sandboxes are refused with 503 and `Retry-After` (open ones keep working) rather than
    /// the machine running out. Default: three quarters of the machine's memory.
    pub memory_budget: usize,
}

/// Three quarters of this machine's memory (8 GiB when it cannot be read).
pub fn default_memory_budget() -> usize {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib << 10)
    });
    total.map_or(8 << 30, |t| t / 4 * 3)
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            store_memory_bytes: 128 << 20,
            call_deadline: Duration::from_secs(1),
            request_body_bytes: 16 << 20,
            response_body_bytes: 16 << 20,
            host_call_bytes: 16 << 20,
            tape_rows: 100_000,
            tape_bytes: 256 << 20,
            tape_memory_rows: 256,
            tape_memory_bytes: 1 << 20,
            seed_bytes: 16 << 20,
            team_seed_bytes: 256 << 20,
            max_stores: 12_000,
            store_queue: 256,
            seed_cache_entries: 256,
            max_connections: 10_000,
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            h2_streams: 32,
            checkpoint_after: Duration::from_millis(250),
            checkpoint_inline_bytes: 128 << 10,
            memory_budget: default_memory_budget(),
        }
    }
}

/// The epoch tick: the granularity of call deadlines, and how long a busy guest holds a
/// runtime thread before it yields. A millisecond: at five, a tenant's long calls on both
/// threads of a 2-core host held every other tenant's requests back by up to five.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Sandbox clocks from the product page: 30 minutes of life, 30 minutes idle.
#[derive(Debug, Clone, Copy)]
pub struct Lifetimes {
    pub lifetime: Duration,
    pub idle: Duration,
}

impl Default for Lifetimes {
    fn default() -> Self {
        Lifetimes { lifetime: Duration::from_secs(30 * 60), idle: Duration::from_secs(30 * 60) }
    }
}

/// Twins per sandbox: fixed by the platform, on every plan (task files are checked against it
/// too, so it lives with the shared vocabulary).
pub use pome_contract::MAX_TWINS_PER_SANDBOX;

/// Failed authentications one client address may make within [`AUTH_FAILURE_WINDOW`] before
/// its further failing attempts are answered 429 without being checked. Twenty covers a
/// person retyping a key and a script retrying with a stale one; a key guesser needs far more.
pub const AUTH_FAILURES_ALLOWED: u32 = 20;
/// The window [`AUTH_FAILURES_ALLOWED`] counts in, and how long an address stays refused
/// after it passed the count (from its first failure in the window).
pub const AUTH_FAILURE_WINDOW: Duration = Duration::from_secs(10);
/// Client addresses whose failures are remembered at once (about 64 bytes each, so 4 MiB at
/// most); past it the oldest is forgotten, so a flood of addresses cannot grow memory.
pub const AUTH_TRACKED_ADDRESSES: usize = 65_536;
/// Live API keys one team may hold. Keys are checked in memory (no database query per
/// request), so their number must be bounded; a hundred is more than any team rotates.
pub const MAX_LIVE_KEYS_PER_TEAM: usize = 100;
/// Body bytes read from a twin request that does not carry the sandbox's agent token: enough
/// for a credential in a form body (Slack's `token=`) or a GraphQL document sent with a
/// seeded key, while a stranger cannot make the host read 16 MiB for a refusal.
pub const UNAUTHENTICATED_BODY_BYTES: usize = 256 << 10;
/// How long a request for a sandbox waits while open sandboxes are being restored at start
/// before it is answered as if the sandbox did not exist. Replaying a long tape takes seconds.
pub const RESTORE_WAIT: Duration = Duration::from_secs(60);

// ---- Outbound webhook deliveries (`outbound::Policy`, `pome serve --delivery-*`) ----------

/// Attempts per delivery, the first included. Webhook senders retry a few times; four spans a
/// receiver's restart without keeping work for a closed sandbox long.
pub const DELIVERY_ATTEMPTS: u32 = 4;

/// Wait before a delivery's second attempt; doubled for each one after (1 s, 2 s, 4 s).
pub const DELIVERY_BACKOFF: Duration = Duration::from_secs(1);

/// One attempt (and one host-name lookup) may take this long: a receiver that cannot answer
/// in ten seconds is down, as Stripe and GitHub treat it.
pub const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Distinct endpoint URLs one twin store may deliver to. Stripe allows 16 webhook endpoints
/// per account and a task needs one or two, so every honest world fits, while a tenant cannot
/// make the host knock on a whole network.
pub const DELIVERY_ENDPOINTS: usize = 16;

/// Deliveries of one twin store pending or retrying at once. A store serves one request at a
/// time and a request asks for a few deliveries that settle within a second against a live
/// receiver; 64 covers a burst of them, while one store's dead endpoint cannot pile up
/// tasks (each retrying for about 50 s) without end.
pub const DELIVERIES_IN_FLIGHT: usize = 64;

/// Delivery attempts (and host-name lookups) in progress at once across the process: each holds
/// a socket (or a blocking-pool thread for a lookup). 64 keeps deliveries a small share of the
/// file descriptors the clients' connections need, and of the 512 blocking threads; more
/// deliveries wait their turn rather than fail.
pub const DELIVERY_ATTEMPTS_AT_ONCE: usize = 64;

/// Entries one twin store's delivery log keeps (the newest): far more than a task's run
/// produces, and a bound on what a tenant that never stops asking can make the log hold.
pub const DELIVERY_LOG_ENTRIES: usize = 1_000;

/// Bytes one twin store's delivery log keeps (the newest entries; the newest one always). It
/// counts in the memory budget with the tapes; 4 MiB is a few thousand real events.
pub const DELIVERY_LOG_BYTES: usize = 4 << 20;

/// Bytes of a delivery's body its log entry keeps: a Stripe or Linear event is a few KiB, and
/// the whole body is on the tape row that asked for it.
pub const DELIVERY_LOG_BODY_BYTES: usize = 64 << 10;
