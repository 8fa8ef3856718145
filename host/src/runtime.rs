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
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::limits::{EPOCH_TICK, Limits};
use crate::tape::StateChange;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "twin-world",
    imports: { default: trappable },
    exports: { default: async },
});

pub use exports::pome::twin::twin::{Auth, HostError, HostErrorKind, HttpRequest, HttpResponse};

/// The twin contract this host speaks.
pub const CONTRACT: &str = "pome:twin@0.1.0";

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

/// Per-request facts the guest reports through the `tape` import. Set before each `handle`
/// and taken right after it, so one request's facts never leak into the next.
#[derive(Debug, Default)]
pub struct CallFacts {
    pub action: Option<String>,
    pub unsupported: bool,
    pub changes: Vec<StateChange>,
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
    limits: StoreLimits,
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

impl pome::twin::tape::Host for HostState {
    fn record_change(
        &mut self,
        entity: String,
        id: String,
        before: Option<String>,
        after: Option<String>,
    ) -> wasmtime::Result<()> {
        if !self.facts.recording {
            return Ok(());
        }
        self.charge(entity.len() + id.len() + before.as_ref().map_or(0, String::len) + after.as_ref().map_or(0, String::len))?;
        let json = StateChange::entity_json;
        self.facts.changes.push(StateChange { entity, id, before: before.map(json), after: after.map(json) });
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
}

impl HostState {
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
    /// The `describe()` JSON.
    pub description: serde_json::Value,
    /// SHA-256 of the component bytes; seed snapshots are keyed by it.
    pub digest: [u8; 32],
    pub pre: TwinWorldPre<HostState>,
    /// Where it came from, for messages (`embedded` or a file path).
    pub origin: String,
}

/// The process-wide runtime.
pub struct Runtime {
    engine: Engine,
    linker: Linker<HostState>,
    pub limits: Limits,
    cache: Option<Dir>,
}

impl Runtime {
    /// Build the engine (pooling allocator, copy-on-write images, epoch interruption) and the
    /// linker, which grants exactly WASI 0.2 (with nothing behind it) and the tape.
    /// `cache` is where compiled components are kept between runs.
    pub fn new(limits: Limits, cache: Option<Dir>) -> anyhow::Result<Arc<Runtime>> {
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
        config.memory_guard_size(64 << 10);
        config.memory_reservation_for_growth(0);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(limits.max_stores);
        pool.total_core_instances(limits.max_stores.saturating_mul(4));
        pool.max_core_instances_per_component(16);
        pool.total_memories(limits.max_stores.saturating_mul(2));
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
        let engine = Engine::new(&config).map_err(anyhow::Error::from).context("starting the WebAssembly engine")?;

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
        TwinWorld::add_to_linker::<_, HasSelf<HostState>>(&mut linker, |s| s).map_err(anyhow::Error::from).context("linking the tape")?;
        Ok(Arc::new(Runtime { engine, linker, limits, cache }))
    }

    /// Compile (or load from the cache) one component and check it is a pome twin.
    pub async fn load(&self, bytes: &[u8], origin: &str) -> anyhow::Result<TwinImage> {
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let component = self.compile(bytes, &digest).with_context(|| format!("{origin}: not a WebAssembly component"))?;
        let pre = self.linker.instantiate_pre(&component).map_err(|e| {
            anyhow!("{origin}: refused: it imports something pome does not grant ({e:#}); twins may import only WASI 0.2 and {CONTRACT}/tape")
        })?;
        let pre = TwinWorldPre::new(pre).map_err(|e| {
            anyhow!("{origin}: refused: it does not export the {CONTRACT} `twin` interface ({e:#}); build it against wit/twin.wit")
        })?;
        let mut image = TwinImage { name: String::new(), description: serde_json::Value::Null, digest, pre, origin: origin.to_string() };
        let mut store = self.new_store();
        let instance = self.instantiate(&mut store, &image).await.with_context(|| format!("{origin}: instantiating"))?;
        let described = self.call(&mut store, async |s| instance.pome_twin_twin().call_describe(s).await).await.with_context(|| format!("{origin}: describe() failed"))?;
        let description: serde_json::Value = serde_json::from_str(&described).with_context(|| format!("{origin}: describe() did not return JSON"))?;
        let name = description.get("name").and_then(|v| v.as_str()).unwrap_or_default().to_string();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
            anyhow::bail!("{origin}: describe() name {name:?} must be lower-case letters, digits or '-'");
        }
        image.name = name;
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
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.store_memory_bytes)
            .trap_on_grow_failure(true)
            .build();
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

    pub async fn instantiate(&self, store: &mut Store<HostState>, image: &TwinImage) -> anyhow::Result<TwinWorld> {
        self.arm(store);
        Ok(image.pre.instantiate_async(store).await?)
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
        let text = format!("{e:#}");
        if text.contains("forcing trap when growing memory") || text.contains("memory") && text.contains("limit") {
            return GuestError::Memory(self.limits.store_memory_bytes >> 20);
        }
        GuestError::Trap(text)
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

/// The set of twins this host serves, by name.
pub type TwinSet = BTreeMap<String, Arc<TwinImage>>;
