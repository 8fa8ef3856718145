//! Prometheus metrics for `/metrics`: sandboxes open, twin requests and their latency, traps,
//! rebuilds, checkpoints (and how long each paused its store) and the rows rebuilds replayed.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TwinLabel {
    twin: String,
}

pub struct Metrics {
    registry: Mutex<Registry>,
    pub sandboxes_open: Gauge,
    sandboxes_created: Counter,
    requests: Family<TwinLabel, Counter>,
    latency: Family<TwinLabel, Histogram>,
    guest: Family<TwinLabel, Histogram>,
    traps: Family<TwinLabel, Counter>,
    rebuilds: Family<TwinLabel, Counter>,
    replayed: Family<TwinLabel, Counter>,
    checkpoints: Family<TwinLabel, Counter>,
    checkpoint_replayed: Family<TwinLabel, Counter>,
    checkpoint_pauses: Family<TwinLabel, Histogram>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("pome");
        let sandboxes_open = Gauge::default();
        let sandboxes_created = Counter::default();
        let requests = Family::<TwinLabel, Counter>::default();
        let latency = Family::<TwinLabel, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(0.000_01, 4.0, 10)));
        let guest = Family::<TwinLabel, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(0.000_01, 4.0, 10)));
        let traps = Family::<TwinLabel, Counter>::default();
        let rebuilds = Family::<TwinLabel, Counter>::default();
        let replayed = Family::<TwinLabel, Counter>::default();
        let checkpoints = Family::<TwinLabel, Counter>::default();
        let checkpoint_replayed = Family::<TwinLabel, Counter>::default();
        let checkpoint_pauses = Family::<TwinLabel, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(0.000_1, 2.0, 14)));
        registry.register("sandboxes_open", "Sandboxes open now", sandboxes_open.clone());
        registry.register("sandboxes_created", "Sandboxes created since start", sandboxes_created.clone());
        registry.register("twin_requests", "Requests served by twins (tape rows written)", requests.clone());
        registry.register("twin_request_seconds", "Time a twin store took to serve a request", latency.clone());
        registry.register("twin_guest_seconds", "Of that, the time inside the twin's own code (its handle call)", guest.clone());
        registry.register("twin_traps", "Guest traps and deadline overruns", traps.clone());
        registry.register("twin_rebuilds", "Twin stores rebuilt from snapshot and tape", rebuilds.clone());
        registry.register("twin_replayed_rows", "Tape rows replayed to rebuild twin stores", replayed.clone());
        registry.register("twin_checkpoints", "Checkpoints taken: a store's world snapshotted between requests, so a rebuild replays only the rows after it", checkpoints.clone());
        registry.register("twin_checkpoint_replayed_rows", "Tape rows replayed off the stores' paths to build checkpoints of worlds too large to snapshot between requests", checkpoint_replayed.clone());
        registry.register("twin_checkpoint_pause_seconds", "How long a store stopped serving for a checkpoint: a small world's snapshot, or taking in one built off its path", checkpoint_pauses.clone());
        Metrics { registry: Mutex::new(registry), sandboxes_open, sandboxes_created, requests, latency, guest, traps, rebuilds, replayed, checkpoints, checkpoint_replayed, checkpoint_pauses }
    }
}

impl Metrics {
    pub fn sandbox_created(&self) {
        self.sandboxes_created.inc();
        self.sandboxes_open.inc();
    }
    pub fn sandbox_closed(&self) {
        self.sandboxes_open.dec();
    }
    /// The request counters of one twin, looked up once per store rather than per request.
    pub fn twin_requests(&self, twin: &str) -> TwinRequestMetrics {
        let l = TwinLabel { twin: twin.to_string() };
        TwinRequestMetrics {
            requests: self.requests.get_or_create(&l).clone(),
            latency: self.latency.get_or_create(&l).clone(),
            guest: self.guest.get_or_create(&l).clone(),
        }
    }
    pub fn trap(&self, twin: &str) {
        self.traps.get_or_create(&TwinLabel { twin: twin.to_string() }).inc();
    }
    pub fn rebuild(&self, twin: &str) {
        self.rebuilds.get_or_create(&TwinLabel { twin: twin.to_string() }).inc();
    }
    pub fn replayed(&self, twin: &str, rows: u64) {
        self.replayed.get_or_create(&TwinLabel { twin: twin.to_string() }).inc_by(rows);
    }
    /// A checkpoint taken, for which its store stopped serving for `paused`, built by
    /// replaying `replayed` rows off its path (none when taken in the store).
    pub fn checkpoint(&self, twin: &str, paused: Duration, replayed: u64) {
        let l = TwinLabel { twin: twin.to_string() };
        self.checkpoints.get_or_create(&l).inc();
        self.checkpoint_replayed.get_or_create(&l).inc_by(replayed);
        self.checkpoint_pauses.get_or_create(&l).observe(paused.as_secs_f64());
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry.lock().unwrap());
        out
    }
}

/// Handles to one twin's request metrics (cheap clones of shared counters).
#[derive(Clone)]
pub struct TwinRequestMetrics {
    requests: Counter,
    latency: Histogram,
    guest: Histogram,
}

impl TwinRequestMetrics {
    /// One request served in `took`, `guest` of it inside the twin: the rest is the host's
    /// (the call's arguments and answer, the tape row).
    pub fn observe(&self, took: Duration, guest: Duration) {
        self.requests.inc();
        self.latency.observe(took.as_secs_f64());
        self.guest.observe(guest.as_secs_f64());
    }
}
