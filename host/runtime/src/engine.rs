//! The WebAssembly runtime: one `Engine` and one `Linker` per process, each twin component
//! compiled once (and cached on disk) into an `InstancePre`, and the one builder every twin
//! store goes through, so that every store gets the same limits and the same deterministic,
//! capability-free WASI.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use cap_std::fs::Dir;
use rand::SeedableRng as _;
use rand::rngs::StdRng;
use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use pome_contract::Description;

use crate::limits::{EPOCH_TICK, Limits};
use pome_tape::StateChange;

/// Bindings of each contract version this host speaks. A published version never changes, so
/// a component built against 0.1.0 or 0.2.0 keeps loading; new twins target 0.3.0.
mod v1 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.1",
        world: "twin-world",
        imports: { default: trappable },
        exports: { default: async },
    });
}
mod v2 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2",
        world: "twin-world",
        imports: { default: trappable },
        exports: { default: async },
    });
}
mod v3 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.3",
        world: "twin-world",
        imports: { default: trappable },
        exports: { default: async },
    });
}

/// The host speaks in the newest version's types; calls into an older twin are converted.
pub use v3::exports::pome::twin::twin::{Auth, CheckCall, CheckOutcome, CheckWorld, Evidence, HostError, HostErrorKind, HttpRequest, HttpResponse};

pub use pome_contract::{CONTRACT_V1, CONTRACT_V2, CONTRACT_V3};

/// The newest twin contract this host speaks.
pub const CONTRACT: &str = CONTRACT_V3;

/// Why a guest call failed. Guest failures are tagged as the guest's, so users can tell a
/// broken twin from a broken host.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    #[error("twin ran past its {0:?} CPU deadline")]
    Deadline(Duration),
    #[error("twin exceeded its memory cap of {0} MiB")]
    Memory(usize),
    #[error("twin passed more than {0} bytes through tape calls in one request")]
    HostCallData(usize),
    #[error("twin trapped: {0}")]
    Trap(String),
}

/// A marker error raised from the epoch callback; found again in the trap's error chain.
#[derive(Debug, thiserror::Error)]
#[error("deadline exceeded")]
struct DeadlineExceeded;

#[derive(Debug, thiserror::Error)]
#[error("host-call data cap exceeded")]
struct HostCallDataExceeded;

/// Raised by the memory limiter when a guest asks for more than its cap, so the failure is
/// recognised by type, never by an error message's wording.
#[derive(Debug, thiserror::Error)]
#[error("memory cap exceeded")]
struct MemoryCapExceeded;

/// Caps a store's linear memories (and table growth) at the store's limit, and counts what
/// they hold toward the server's memory budget (given back when the store drops).
struct MemoryCap {
    bytes: usize,
    held: Arc<Held>,
    mine: usize,
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.bytes {
            return Err(MemoryCapExceeded.into());
        }
        let grown = desired.saturating_sub(current);
        self.mine += grown;
        self.held.linear.fetch_add(grown, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

impl Drop for MemoryCap {
    fn drop(&mut self) {
        self.held.linear.fetch_sub(self.mine, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What the server holds in memory, counted toward `--memory-budget`: twin stores' linear
/// memories, tapes' rows in memory with their stores' checkpoints, and everything else a
/// tenant can make it hold (`other`): seed images, tape rows being streamed out.
#[derive(Debug, Default)]
pub struct Held {
    pub linear: std::sync::atomic::AtomicUsize,
    pub tapes: std::sync::atomic::AtomicUsize,
    pub other: std::sync::atomic::AtomicUsize,
}

impl Held {
    pub fn total(&self) -> usize {
        use std::sync::atomic::Ordering::Relaxed;
        self.linear.load(Relaxed) + self.tapes.load(Relaxed) + self.other.load(Relaxed)
    }

    /// Count `bytes` in `other` until the guard drops.
    pub fn hold(self: &std::sync::Arc<Self>, bytes: usize) -> HeldBytes {
        self.other.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        HeldBytes { held: self.clone(), bytes }
    }
}

/// Bytes counted in [`Held::other`] while the guard lives.
pub struct HeldBytes {
    held: std::sync::Arc<Held>,
    bytes: usize,
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        self.held.other.fetch_sub(self.bytes, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A webhook the twin asked for while serving the current request.
#[derive(Debug, Clone)]
pub struct OutboundRequest {
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub event: String,
}

/// Per-request facts the guest reports through the `tape` import. Set before each `handle`
/// and taken right after it, so one request's facts never leak into the next.
#[derive(Debug, Default)]
pub struct CallFacts {
    pub action: Option<String>,
    pub unsupported: bool,
    pub changes: Vec<StateChange>,
    pub deliveries: Vec<OutboundRequest>,
    /// Only `handle` records; calls in `init`, `state` etc. are ignored.
    recording: bool,
    bytes: usize,
}

/// The virtual clock shared between the store's host state and its WASI clocks.
#[derive(Clone, Default)]
pub struct VirtualClock(Arc<std::sync::atomic::AtomicU64>);

impl VirtualClock {
    /// Microseconds since the Unix epoch.
    pub fn set_micros(&self, us: u64) {
        self.0.store(us, std::sync::atomic::Ordering::Relaxed)
    }
    fn micros(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl wasmtime_wasi::HostWallClock for VirtualClock {
    fn resolution(&self) -> Duration {
        Duration::from_micros(1)
    }
    fn now(&self) -> Duration {
        Duration::from_micros(self.micros())
    }
}

impl wasmtime_wasi::HostMonotonicClock for VirtualClock {
    fn resolution(&self) -> u64 {
        1_000
    }
    fn now(&self) -> u64 {
        self.micros() * 1_000
    }
}

/// The guest's randomness: a PRNG reseeded before every call from the seed's digest and the
/// request's sequence number, so a replayed request draws the same bytes.
#[derive(Clone)]
pub struct VirtualRandom(Arc<Mutex<StdRng>>);

impl VirtualRandom {
    fn new() -> Self {
        VirtualRandom(Arc::new(Mutex::new(StdRng::from_seed([0; 32]))))
    }
    pub fn reseed(&self, seed_digest: &[u8; 32], seq: u64) {
        let mut h = Sha256::new();
        h.update(seed_digest);
        h.update(seq.to_le_bytes());
        *self.0.lock().unwrap() = StdRng::from_seed(h.finalize().into());
    }
}

impl rand::TryRng for VirtualRandom {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(rand::Rng::next_u32(&mut *self.0.lock().unwrap()))
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(rand::Rng::next_u64(&mut *self.0.lock().unwrap()))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        rand::Rng::fill_bytes(&mut *self.0.lock().unwrap(), dst);
        Ok(())
    }
}

/// What a twin store carries besides the guest: WASI, limits and the per-call context.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: MemoryCap,
    pub facts: CallFacts,
    pub clock: VirtualClock,
    pub random: VirtualRandom,
    /// Epoch ticks left for the current call.
    ticks_left: u64,
    host_call_cap: usize,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl HostState {
    fn record_change(&mut self, entity: String, id: String, before: Option<String>, after: Option<String>) -> wasmtime::Result<()> {
        if !self.facts.recording {
            return Ok(());
        }
        self.charge(entity.len() + id.len() + before.as_ref().map_or(0, String::len) + after.as_ref().map_or(0, String::len))?;
        self.facts.changes.push(StateChange { entity, id, before: before.map(Into::into), after: after.map(Into::into) });
        Ok(())
    }

    fn set_action(&mut self, name: String) -> wasmtime::Result<()> {
        if self.facts.recording {
            self.charge(name.len())?;
            self.facts.action = Some(name);
        }
        Ok(())
    }

    fn mark_unsupported(&mut self) -> wasmtime::Result<()> {
        if self.facts.recording {
            self.facts.unsupported = true;
        }
        Ok(())
    }

    fn deliver(&mut self, d: OutboundRequest) -> wasmtime::Result<()> {
        if self.facts.recording {
            self.charge(d.url.len() + d.method.len() + d.body.len() + d.event.len() + d.headers.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>())?;
            self.facts.deliveries.push(d);
        }
        Ok(())
    }
}

/// The same `tape` import under each contract version.
macro_rules! tape_host {
    ($v:ident) => {
        impl $v::pome::twin::tape::Host for HostState {
            fn record_change(&mut self, entity: String, id: String, before: Option<String>, after: Option<String>) -> wasmtime::Result<()> {
                HostState::record_change(self, entity, id, before, after)
            }
            fn set_action(&mut self, name: String) -> wasmtime::Result<()> {
                HostState::set_action(self, name)
            }
            fn mark_unsupported(&mut self) -> wasmtime::Result<()> {
                HostState::mark_unsupported(self)
            }
        }
    };
}
tape_host!(v1);
tape_host!(v2);
tape_host!(v3);

/// The same `outbound` import under each contract version that has it.
macro_rules! outbound_host {
    ($v:ident) => {
        impl $v::pome::twin::outbound::Host for HostState {
            fn deliver(&mut self, d: $v::pome::twin::outbound::Delivery) -> wasmtime::Result<()> {
                HostState::deliver(self, OutboundRequest { url: d.url, method: d.method, headers: d.headers, body: d.body, event: d.event })
            }
        }
    };
}
outbound_host!(v2);
outbound_host!(v3);

impl HostState {
    /// The bytes the guest's memories have grown by, as the limiter counted them: after a
    /// replay, about what its world holds.
    pub fn memory_grown(&self) -> usize {
        self.limits.mine
    }

    fn charge(&mut self, n: usize) -> wasmtime::Result<()> {
        self.facts.bytes += n;
        if self.facts.bytes > self.host_call_cap {
            return Err(HostCallDataExceeded.into());
        }
        Ok(())
    }
}

/// One loaded twin: its compiled component, ready to instantiate, and what it says of itself.
pub struct TwinImage {
    pub name: String,
    /// What `describe()` declared.
    pub description: Description,
    /// The same, as the JSON the twin sent (served by `GET /v1/twins` as it is).
    pub description_json: serde_json::Value,
    /// SHA-256 of the component bytes; seed snapshots are keyed by it.
    pub digest: [u8; 32],
    pub pre: TwinPre,
    /// Where it came from, for messages (`embedded` or a file path).
    pub origin: String,
}

/// The process-wide runtime.
pub struct Runtime {
    engine: Engine,
    linker: Linker<HostState>,
    pub limits: Limits,
    cache: Option<Dir>,
    /// Memory held by every store and tape of this runtime.
    pub held: Arc<Held>,
    /// Where checkpoints are built off their stores' paths: half the cores, at low priority.
    pub background: crate::background::Background,
}

/// The guard behind each linear memory. With 4 GiB, every address a 32-bit guest can form
/// lands in its own memory or in the guard, so the compiler drops the bounds check from each
/// load and store and the hardware traps instead: measured side by side, a Stripe payment's
/// guest time fell by about 12 % and Linear's executed issues query by 17-20 %. Each store
/// then takes its memory cap plus 4 GiB of address space (none of it memory): about 50 TiB for
/// 12,000 stores, which fits in a 64-bit Linux process's 128 TiB (a pool of 105 TiB did not).
const GUARDED: u64 = 4 << 30;
/// Without room for that: a small guard, and an explicit check on every access.
const CHECKED: u64 = 64 << 10;

/// Every limit of the engine in one place: the pooling allocator's slots (one per store, each
/// sized to the caps), copy-on-write images, epoch interruption, and the guard size.
fn engine_config(limits: &Limits, guard: u64) -> Config {
    let mut config = Config::new();
    config.epoch_interruption(true);
    config.memory_init_cow(true);
    config.cranelift_opt_level(wasmtime::OptLevel::Speed);
    if std::env::var("POME_PERFMAP").is_ok_and(|v| v == "1") {
        // `perf record` can then name guest functions (writes /tmp/perf-<pid>.map).
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    // Linear memories live in fixed pool slots sized to the cap, so no guest can grow
    // past it and reserving address space for thousands of stores stays cheap.
    config.memory_reservation(limits.store_memory_bytes as u64);
    config.memory_guard_size(guard);
    config.memory_reservation_for_growth(0);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(limits.max_stores);
    pool.total_core_instances(limits.max_stores.saturating_mul(4));
    pool.max_core_instances_per_component(16);
    // A twin built for wasm32-wasip2 has one memory; a component with two takes two slots.
    pool.total_memories(limits.max_stores);
    pool.max_memories_per_component(2);
    pool.total_tables(limits.max_stores.saturating_mul(4));
    pool.max_tables_per_component(8);
    pool.table_elements(20_000);
    pool.max_memory_size(limits.store_memory_bytes);
    // A store keeps its fiber stack between calls, so every store needs one.
    pool.total_stacks(limits.max_stores);
    pool.max_component_instance_size(1 << 20);
    pool.max_core_instance_size(1 << 20);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}

impl Runtime {
    /// Build the engine (pooling allocator, copy-on-write images, epoch interruption) and the
    /// linker, which grants exactly WASI 0.2 (with nothing behind it) and the tape.
    /// `cache` is where compiled components are kept between runs.
    pub fn new(limits: Limits, cache: Option<Dir>) -> anyhow::Result<Arc<Runtime>> {
        // Guard pages first; where the address space cannot hold them for every store (a
        // `ulimit -v`, or a --max-stores in the tens of thousands), explicit bounds checks.
        let engine = match Engine::new(&engine_config(&limits, GUARDED)) {
            Ok(engine) => engine,
            Err(e) => {
                tracing::warn!(error = %e, max_stores = limits.max_stores, "no room in the address space for guard pages behind every store's memory; twins run with explicit bounds checks, 10-20 % slower");
                Engine::new(&engine_config(&limits, CHECKED)).map_err(anyhow::Error::from).context("starting the WebAssembly engine")?
            }
        };

        // The ticker holds only a weak reference, so dropping the runtime stops it.
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("pome-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })
            .context("starting the epoch ticker")?;

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from).context("linking WASI")?;
        v1::TwinWorld::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s).map_err(anyhow::Error::from).context("linking the 0.1.0 tape")?;
        v2::TwinWorld::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s).map_err(anyhow::Error::from).context("linking the 0.2.0 tape and outbound")?;
        v3::TwinWorld::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s).map_err(anyhow::Error::from).context("linking the 0.3.0 tape and outbound")?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let background = crate::background::Background::new(cores / 2).context("starting the background threads")?;
        Ok(Arc::new(Runtime { engine, linker, limits, cache, held: Arc::default(), background }))
    }

    /// Compile (or load from the cache) one component and check it is a pome twin.
    pub async fn load(&self, bytes: &[u8], origin: &str) -> anyhow::Result<TwinImage> {
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let component = self.compile(bytes, &digest).with_context(|| format!("{origin}: not a WebAssembly component"))?;
        let pre = self.linker.instantiate_pre(&component).map_err(|e| {
            anyhow!("{origin}: refused: it imports something pome does not grant ({e:#}); twins may import only WASI 0.2 and {CONTRACT}'s `tape` and `outbound` (or an older contract's)")
        })?;
        // The newest version first; a component exporting neither is named by what the newest lacks.
        let pre = match v3::TwinWorldPre::new(pre.clone()) {
            Ok(p) => TwinPre::V3(p),
            Err(e3) => match (v2::TwinWorldPre::new(pre.clone()), v1::TwinWorldPre::new(pre)) {
                (Ok(p), _) => TwinPre::V2(p),
                (_, Ok(p)) => TwinPre::V1(p),
                _ => anyhow::bail!("{origin}: refused: it does not export the {CONTRACT} `twin` interface ({e3:#}); build it against wit/v0.3/twin.wit"),
            },
        };
        let mut image = TwinImage {
            name: String::new(),
            description: Description::from_json(r#"{"name": "", "version": ""}"#).expect("a minimal description reads"),
            description_json: serde_json::Value::Null,
            digest,
            pre,
            origin: origin.to_string(),
        };
        let mut store = self.new_store();
        let instance = self.instantiate(&mut store, &image).await.with_context(|| format!("{origin}: instantiating"))?;
        let described = self.call(&mut store, async |s| instance.describe(s).await).await.with_context(|| format!("{origin}: describe() failed"))?;
        let description = Description::from_json(&described).map_err(|e| anyhow!("{origin}: {e}"))?;
        if !description.name_is_valid() {
            anyhow::bail!("{origin}: describe() name {:?} must be lower-case letters, digits or '-'", description.name);
        }
        image.name = description.name.clone();
        image.description_json = serde_json::from_str(&described).with_context(|| format!("{origin}: describe() did not return JSON"))?;
        image.description = description;
        Ok(image)
    }

    fn compile(&self, bytes: &[u8], digest: &[u8; 32]) -> anyhow::Result<Component> {
        let Some(cache) = &self.cache else {
            return Ok(Component::new(&self.engine, bytes)?);
        };
        let mut h = std::hash::DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        let file = format!("{}-{:016x}.cwasm", hex::encode(&digest[..16]), h.finish());
        if let Ok(compiled) = cache.read(&file) {
            // SAFETY: the file was written by `Component::serialize` of this same engine
            // configuration (its name carries the engine's compatibility hash) into a
            // directory only the host writes.
            if let Ok(c) = unsafe { Component::deserialize(&self.engine, &compiled) } {
                return Ok(c);
            }
        }
        let component = Component::new(&self.engine, bytes).map_err(anyhow::Error::from)?;
        if let Ok(serialized) = component.serialize() {
            let tmp = format!("{file}.tmp{}", std::process::id());
            if cache.write(&tmp, serialized).is_ok() {
                let _ = cache.rename(&tmp, cache, &file);
            }
        }
        Ok(component)
    }

    /// A fresh store: no filesystem, no sockets, no environment, empty stdin, discarded
    /// output, the virtual clock and PRNG, the memory cap and the CPU deadline.
    pub fn new_store(&self) -> Store<HostState> {
        let clock = VirtualClock::default();
        let random = VirtualRandom::new();
        let wasi = WasiCtxBuilder::new()
            .wall_clock(clock.clone())
            .monotonic_clock(clock.clone())
            .secure_random(random.clone())
            .insecure_random(random.clone())
            .insecure_random_seed(0)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let limits = MemoryCap { bytes: self.limits.store_memory_bytes, held: self.held.clone(), mine: 0 };
        let state = HostState {
            wasi,
            table: ResourceTable::new(),
            limits,
            facts: CallFacts::default(),
            clock,
            random,
            ticks_left: 0,
            host_call_cap: self.limits.host_call_bytes,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_callback(|mut cx| {
            let s = cx.data_mut();
            if s.ticks_left == 0 {
                return Err(DeadlineExceeded.into());
            }
            s.ticks_left -= 1;
            // Yield so a busy guest never holds a runtime thread for a whole deadline.
            Ok(UpdateDeadline::Yield(1))
        });
        store
    }

    pub async fn instantiate(&self, store: &mut Store<HostState>, image: &TwinImage) -> anyhow::Result<TwinInstance> {
        self.arm(store);
        Ok(match &image.pre {
            TwinPre::V1(pre) => TwinInstance::V1(pre.instantiate_async(store).await?),
            TwinPre::V2(pre) => TwinInstance::V2(pre.instantiate_async(store).await?),
            TwinPre::V3(pre) => TwinInstance::V3(pre.instantiate_async(store).await?),
        })
    }

    /// Decide checks on a fresh instance of `image`: checks are pure functions of their
    /// inputs, so grading needs no sandbox and a run can be regraded offline. `None` for a
    /// 0.1.0 twin, which cannot decide its own checks.
    pub async fn evaluate_checks(&self, image: &TwinImage, world: &CheckWorld, calls: &[CheckCall]) -> anyhow::Result<Option<Vec<Result<CheckOutcome, String>>>> {
        if matches!(image.pre, TwinPre::V1(_)) {
            return Ok(None);
        }
        let mut store = self.new_store();
        let instance = self.instantiate(&mut store, image).await?;
        let out = self.call(&mut store, async |s| instance.evaluate_checks(s, world, calls).await).await?;
        Ok(out)
    }

    /// Run one guest call under the deadline, mapping traps to [`GuestError`].
    pub async fn call<R>(
        &self,
        store: &mut Store<HostState>,
        f: impl AsyncFnOnce(&mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, GuestError> {
        self.arm(store);
        let result = f(store).await;
        result.map_err(|e| self.classify(e))
    }

    fn arm(&self, store: &mut Store<HostState>) {
        let ticks = (self.limits.call_deadline.as_micros() / EPOCH_TICK.as_micros()).max(1) as u64;
        store.data_mut().ticks_left = ticks;
        store.set_epoch_deadline(1);
    }

    fn classify(&self, e: wasmtime::Error) -> GuestError {
        if e.is::<DeadlineExceeded>() || e.chain().any(|c| c.is::<DeadlineExceeded>()) {
            return GuestError::Deadline(self.limits.call_deadline);
        }
        if e.is::<HostCallDataExceeded>() || e.chain().any(|c| c.is::<HostCallDataExceeded>()) {
            return GuestError::HostCallData(self.limits.host_call_bytes);
        }
        if e.is::<MemoryCapExceeded>() || e.chain().any(|c| c.is::<MemoryCapExceeded>()) {
            return GuestError::Memory(self.limits.store_memory_bytes >> 20);
        }
        // The agent reads this message (its answer, its tape): it names the kind of trap
        // and no more. The backtrace, with the guest's function names and offsets, is for
        // the operator's log only.
        tracing::warn!(error = %format!("{e:?}"), "twin trapped");
        GuestError::Trap(match e.downcast_ref::<wasmtime::Trap>() {
            Some(trap) => trap.to_string(),
            None => "the twin failed while serving the request".to_string(),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }
}

/// Start recording tape facts for one `handle` call.
pub fn begin_facts(store: &mut Store<HostState>) {
    store.data_mut().facts = CallFacts { recording: true, ..CallFacts::default() };
}

/// Take what the guest reported, and stop recording.
pub fn take_facts(store: &mut Store<HostState>) -> CallFacts {
    std::mem::take(&mut store.data_mut().facts)
}

/// A compiled twin ready to instantiate, under the contract version it was built against.
pub enum TwinPre {
    V1(v1::TwinWorldPre<HostState>),
    V2(v2::TwinWorldPre<HostState>),
    V3(v3::TwinWorldPre<HostState>),
}

/// One instantiated twin. Its methods are the contract's exports, in the newest version's
/// types; a 0.1.0 twin's answers are converted.
pub enum TwinInstance {
    V1(v1::TwinWorld),
    V2(v2::TwinWorld),
    V3(v3::TwinWorld),
}

/// Conversions between the newest version's types and an older version's `twin` interface
/// (`$old`), which differ in name only.
macro_rules! older {
    ($name:ident, $v:ident) => {
        mod $name {
            use super::$v::exports::pome::twin::twin as old;
            use super::{Auth, HostError, HostErrorKind, HttpRequest, HttpResponse};

            pub fn request(req: &HttpRequest) -> old::HttpRequest {
                old::HttpRequest {
                    method: req.method.clone(),
                    path: req.path.clone(),
                    query: req.query.clone(),
                    headers: req.headers.clone(),
                    body: req.body.clone(),
                    base_url: req.base_url.clone(),
                    auth: match req.auth {
                        Auth::Agent => old::Auth::Agent,
                        Auth::Missing => old::Auth::Missing,
                        Auth::Invalid => old::Auth::Invalid,
                    },
                }
            }

            pub fn response(a: old::HttpResponse) -> HttpResponse {
                HttpResponse { status: a.status, headers: a.headers, body: a.body }
            }

            pub fn host_error(err: &HostError) -> old::HostError {
                let kind = match err.kind {
                    HostErrorKind::PayloadTooLarge => old::HostErrorKind::PayloadTooLarge,
                    HostErrorKind::TapeFull => old::HostErrorKind::TapeFull,
                    HostErrorKind::TwinFailed => old::HostErrorKind::TwinFailed,
                    HostErrorKind::RateLimited => old::HostErrorKind::RateLimited,
                };
                old::HostError { kind, message: err.message.clone() }
            }
        }
    };
}
older!(from_v1, v1);
older!(from_v2, v2);

/// 0.2.0's checks, in the newest version's types.
mod checks_v2 {
    use super::v2::exports::pome::twin::twin as old;
    use super::{CheckCall, CheckOutcome, CheckWorld, Evidence};

    pub fn world(w: &CheckWorld) -> old::CheckWorld {
        old::CheckWorld { seed: w.seed.clone(), state: w.state.clone(), tape: w.tape.clone() }
    }

    pub fn calls(calls: &[CheckCall]) -> Vec<old::CheckCall> {
        calls.iter().map(|c| old::CheckCall { id: c.id.clone(), params: c.params.clone() }).collect()
    }

    pub fn outcomes(out: Vec<Result<old::CheckOutcome, String>>) -> Vec<Result<CheckOutcome, String>> {
        out.into_iter()
            .map(|o| {
                o.map(|o| CheckOutcome {
                    holds: o.holds,
                    reason: o.reason,
                    evidence: match o.evidence {
                        old::Evidence::None => Evidence::None,
                        old::Evidence::State(p) => Evidence::State(p),
                        old::Evidence::Tape(seq) => Evidence::Tape(seq),
                    },
                })
            })
            .collect()
    }
}

/// Call the same export on whichever version's instance this is.
macro_rules! each {
    ($self:expr, $i:ident => $call:expr) => {
        match $self {
            TwinInstance::V1($i) => $call,
            TwinInstance::V2($i) => $call,
            TwinInstance::V3($i) => $call,
        }
    };
}

impl TwinInstance {
    pub async fn describe(&self, s: &mut Store<HostState>) -> wasmtime::Result<String> {
        each!(self, i => i.pome_twin_twin().call_describe(s).await)
    }

    pub async fn init(&self, s: &mut Store<HostState>, seed: &str) -> wasmtime::Result<Result<(), String>> {
        each!(self, i => i.pome_twin_twin().call_init(s, seed).await)
    }

    pub async fn handle(&self, s: &mut Store<HostState>, req: &HttpRequest) -> wasmtime::Result<HttpResponse> {
        match self {
            TwinInstance::V1(i) => i.pome_twin_twin().call_handle(s, &from_v1::request(req)).await.map(from_v1::response),
            TwinInstance::V2(i) => i.pome_twin_twin().call_handle(s, &from_v2::request(req)).await.map(from_v2::response),
            TwinInstance::V3(i) => i.pome_twin_twin().call_handle(s, req).await,
        }
    }

    pub async fn render_error(&self, s: &mut Store<HostState>, err: &HostError) -> wasmtime::Result<HttpResponse> {
        match self {
            TwinInstance::V1(i) => i.pome_twin_twin().call_render_error(s, &from_v1::host_error(err)).await.map(from_v1::response),
            TwinInstance::V2(i) => i.pome_twin_twin().call_render_error(s, &from_v2::host_error(err)).await.map(from_v2::response),
            TwinInstance::V3(i) => i.pome_twin_twin().call_render_error(s, err).await,
        }
    }

    pub async fn state(&self, s: &mut Store<HostState>) -> wasmtime::Result<String> {
        each!(self, i => i.pome_twin_twin().call_state(s).await)
    }

    pub async fn snapshot(&self, s: &mut Store<HostState>) -> wasmtime::Result<Vec<u8>> {
        each!(self, i => i.pome_twin_twin().call_snapshot(s).await)
    }

    pub async fn restore(&self, s: &mut Store<HostState>, snapshot: &[u8]) -> wasmtime::Result<Result<(), String>> {
        each!(self, i => i.pome_twin_twin().call_restore(s, snapshot).await)
    }

    /// `Ok(None)` for a 0.1.0 twin: it decides nothing itself.
    pub async fn evaluate_checks(&self, s: &mut Store<HostState>, world: &CheckWorld, calls: &[CheckCall]) -> wasmtime::Result<Option<Vec<Result<CheckOutcome, String>>>> {
        match self {
            TwinInstance::V1(_) => Ok(None),
            TwinInstance::V2(i) => i.pome_twin_twin().call_evaluate_checks(s, &checks_v2::world(world), &checks_v2::calls(calls)).await.map(|o| Some(checks_v2::outcomes(o))),
            TwinInstance::V3(i) => i.pome_twin_twin().call_evaluate_checks(s, world, calls).await.map(Some),
        }
    }

    /// The world as a seed document (`Ok(Err(why))` when the twin cannot write it); `Ok(None)`
    /// for a twin built before 0.3.0, which cannot write one.
    pub async fn export_seed(&self, s: &mut Store<HostState>) -> wasmtime::Result<Option<Result<String, String>>> {
        match self {
            TwinInstance::V1(_) | TwinInstance::V2(_) => Ok(None),
            TwinInstance::V3(i) => i.pome_twin_twin().call_export_seed(s).await.map(Some),
        }
    }
}

/// The set of twins this host serves, by name.
pub type TwinSet = BTreeMap<String, Arc<TwinImage>>;
