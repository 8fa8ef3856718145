//! Sandboxes: one id, one bearer token, one lifetime, one to three twin stores. The registry
//! holds handles (never stores) behind a std mutex that is never held across an `.await`.
//!
//! A sandbox is open until the first of: its lifetime ends, it sits idle past the idle
//! timeout, it is finalized, or it is stopped. Then it is closed for good: its stores are
//! dropped (ending their tasks), its concurrency slot is freed, and a small tombstone stays
//! so later calls answer 410 `session_expired` rather than 404.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use pome_runtime::limits::Lifetimes;
use pome_runtime::metrics::Metrics;
use pome_runtime::seeds::SeedImage;
use pome_runtime::store::TwinStore;

use crate::live::LiveStore;

/// Why a sandbox closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    Finalized,
    Discarded,
    LifetimeExpired,
    IdleExpired,
    ServerShutdown,
}

impl CloseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::Finalized => "finalized",
            CloseReason::Discarded => "discarded",
            CloseReason::LifetimeExpired => "lifetime_expired",
            CloseReason::IdleExpired => "idle_expired",
            CloseReason::ServerShutdown => "server_shutdown",
        }
    }

    pub fn parse(s: &str) -> Option<CloseReason> {
        use CloseReason::*;
        [Finalized, Discarded, LifetimeExpired, IdleExpired, ServerShutdown].into_iter().find(|r| r.as_str() == s)
    }
}

/// What the creator said about the sandbox; carried onto its run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SandboxMeta {
    pub task_id: Option<String>,
    /// The version of the task the sandbox booted from; finalize grades with exactly it.
    pub task_version: Option<String>,
    pub group_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_version: Option<String>,
    /// The sandbox or run this one was forked from, and where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<pome_grade::run::ForkedFrom>,
}

/// One twin in a sandbox: its running store and the seed it booted from.
pub struct SandboxTwin {
    pub name: String,
    pub store: TwinStore,
    pub seed: Arc<SeedImage>,
}

pub struct Sandbox {
    pub id: String,
    pub team_id: String,
    /// The agent's bearer token; valid only while the sandbox is open. Known only by its
    /// hash after a restart, until the agent presents it.
    pub token: crate::auth::AgentToken,
    /// Primary twin first.
    pub twins: Vec<SandboxTwin>,
    pub meta: SandboxMeta,
    pub created_at: SystemTime,
    /// `DELETE` of an ungraded sandbox needs this back as `confirm_discard`.
    pub discard_token: String,
    lifetime_deadline: Instant,
    idle: Duration,
    idle_deadline: Mutex<Instant>,
    /// Set once, when the sandbox closes or starts finalizing.
    closing: Mutex<Option<CloseReason>>,
    /// Twin calls let in while the sandbox was open and not yet answered (see [`Admission`]):
    /// finalize closes the door, then waits for these to drain before it reads the tapes.
    in_flight: AtomicUsize,
    /// Woken when `in_flight` falls to zero.
    drained: tokio::sync::Notify,
    /// Where the sandbox's record lives on disk (`None` in memory-only mode), and the idle
    /// deadline last written there (Unix ms).
    live: Option<Arc<dyn LiveStore>>,
    idle_written_ms: AtomicU64,
}

/// Who a sandbox is and its clocks: chosen before its twins start (their tape rows carry
/// the id), or read back from disk on restart.
pub struct Identity {
    pub id: String,
    pub token: crate::auth::AgentToken,
    pub discard_token: String,
    pub created_at: SystemTime,
    pub expires_at: SystemTime,
    pub idle_deadline: SystemTime,
}

impl Identity {
    pub fn new(lifetimes: Lifetimes) -> Identity {
        let now = SystemTime::now();
        Identity {
            id: crate::auth::new_sandbox_id(),
            token: crate::auth::AgentToken::new(crate::auth::new_agent_token()),
            discard_token: crate::auth::new_id("dsc"),
            created_at: now,
            expires_at: now + lifetimes.lifetime,
            idle_deadline: now + lifetimes.idle,
        }
    }
}

impl Sandbox {
    pub fn twin(&self, name: &str) -> Option<&SandboxTwin> {
        self.twins.iter().find(|t| t.name == name)
    }

    pub fn twin_names(&self) -> Vec<String> {
        self.twins.iter().map(|t| t.name.clone()).collect()
    }

    /// Wall-clock time the lifetime ends.
    pub fn expires_at(&self) -> SystemTime {
        wall(self.lifetime_deadline)
    }

    /// Wall-clock time the idle timer runs out.
    pub fn idle_expires_at(&self) -> SystemTime {
        wall(*self.idle_deadline.lock().unwrap()).min(self.expires_at())
    }

    /// The reason this sandbox should be closed by its clocks now, if any.
    fn expired(&self, now: Instant) -> Option<CloseReason> {
        if now >= self.lifetime_deadline {
            Some(CloseReason::LifetimeExpired)
        } else if now >= *self.idle_deadline.lock().unwrap() {
            Some(CloseReason::IdleExpired)
        } else {
            None
        }
    }

    /// Reset the idle timer (any twin call, or a heartbeat). The deadline on disk runs ahead
    /// of the true one by up to a tenth of the idle time (a second to a minute), and moves
    /// only once the true one passes it: a sandbox called every second writes once a
    /// minute, not every second, and after a restart it lives at most that much past its
    /// idle time, never less.
    pub fn touch(&self) {
        let deadline = Instant::now() + self.idle;
        *self.idle_deadline.lock().unwrap() = deadline;
        if let Some(live) = &self.live {
            let ms = unix_ms(wall(deadline));
            let written = self.idle_written_ms.load(Ordering::Relaxed);
            let ahead = (self.idle / 10).clamp(Duration::from_secs(1), Duration::from_secs(60)).as_millis() as u64;
            if ms > written && self.idle_written_ms.compare_exchange(written, ms + ahead, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                live.touch(&self.id, ms + ahead);
            }
        }
    }

    pub fn closing(&self) -> Option<CloseReason> {
        *self.closing.lock().unwrap()
    }

    /// Let one twin call in, unless the sandbox is closing: the door finalize shuts (issue
    /// #32). Between a call's `lookup` and its store call, finalize may start and read the
    /// tapes; a call let in here is counted until its answer is built, and finalize waits for
    /// the count to drain, so every call answered is on the tapes it reads. The count moves
    /// under the `closing` lock, so no call slips in after [`Registry::begin_close`].
    pub fn admit(self: &Arc<Self>) -> Option<Admission> {
        let closing = self.closing.lock().unwrap();
        if closing.is_some() {
            return None;
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Some(Admission(self.clone()))
    }

    /// Wait until no admitted twin call is in flight. After `begin_close` none can start, so
    /// once this returns the tapes hold every call the agent will ever be answered.
    pub async fn drained(&self) {
        loop {
            let woken = self.drained.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            woken.await;
        }
    }
}

fn wall(deadline: Instant) -> SystemTime {
    let now = Instant::now();
    if deadline >= now { SystemTime::now() + (deadline - now) } else { SystemTime::now() - (now - deadline) }
}

/// The monotonic instant of a wall-clock time (clamped to now when it has passed).
fn instant(t: SystemTime) -> Instant {
    let now = Instant::now();
    match t.duration_since(SystemTime::now()) {
        Ok(ahead) => now + ahead,
        Err(_) => now,
    }
}

pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

pub fn from_unix_ms(ms: u64) -> SystemTime {
    std::time::UNIX_EPOCH + Duration::from_millis(ms)
}

/// A twin call let in by [`Sandbox::admit`]; hold it until the answer is built.
pub struct Admission(Arc<Sandbox>);

impl Drop for Admission {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.drained.notify_waiters();
        }
    }
}

/// What a closed sandbox leaves behind.
#[derive(Debug, Clone)]
pub struct Tombstone {
    pub team_id: String,
    /// The SHA-256 of the sandbox's agent token (hex): a closed sandbox tells the caller it
    /// closed only when the caller proves it was the agent.
    pub token_hash: String,
    pub reason: CloseReason,
    pub run_id: Option<String>,
}

/// The answer to "which sandbox is this id?"
pub enum Lookup {
    Open(Arc<Sandbox>),
    Closed(Tombstone),
    Unknown,
}

/// What claiming an idempotency key found.
pub enum KeyClaim {
    Claimed,
    Busy,
    Existing(Arc<Sandbox>),
}

#[derive(Debug, thiserror::Error)]
pub enum ReserveError {
    #[error("your team has {used} of {quota} concurrent sandboxes open")]
    Quota { used: usize, quota: usize },
}

/// A claimed concurrency slot; released on drop unless turned into an open sandbox.
pub struct Slot {
    registry: Arc<Registry>,
    team_id: String,
    armed: bool,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if self.armed {
            self.registry.release(&self.team_id);
        }
    }
}

const MAX_TOMBSTONES: usize = 200_000;

#[derive(Default)]
struct Inner {
    open: HashMap<String, Arc<Sandbox>>,
    closed: HashMap<String, Tombstone>,
    closed_order: std::collections::VecDeque<String>,
    /// Open plus being-created sandboxes per team: the concurrency count.
    used: HashMap<String, usize>,
    /// (team, idempotency key) → sandbox id; `None` while the first create with the key is
    /// still booting its twins.
    idempotency: HashMap<(String, String), Option<String>>,
}

impl Inner {
    /// Take `id` out of the open sandboxes, freeing its team's slot and its idempotency
    /// key; `None` when it was not open.
    fn take_open(&mut self, id: &str) -> Option<Arc<Sandbox>> {
        let sandbox = self.open.remove(id)?;
        if let Some(n) = self.used.get_mut(&sandbox.team_id) {
            *n = n.saturating_sub(1);
        }
        self.idempotency.retain(|_, s| s.as_deref() != Some(id));
        Some(sandbox)
    }
}

pub struct Registry {
    inner: Mutex<Inner>,
    pub quota: usize,
    pub lifetimes: Lifetimes,
    metrics: Arc<Metrics>,
    /// Where open sandboxes are kept durable; unset in memory-only mode.
    live: OnceLock<Arc<dyn LiveStore>>,
    /// Woken whenever a sandbox closes or a close is called off: a second finalize waits on
    /// it for the first one's run instead of polling.
    pub changes: tokio::sync::Notify,
}

impl Registry {
    pub fn new(quota: usize, lifetimes: Lifetimes, metrics: Arc<Metrics>) -> Arc<Registry> {
        Arc::new(Registry { inner: Mutex::new(Inner::default()), quota, lifetimes, metrics, live: OnceLock::new(), changes: tokio::sync::Notify::new() })
    }

    /// Claim one of the team's concurrency slots before building anything.
    pub fn reserve(self: &Arc<Self>, team_id: &str) -> Result<Slot, ReserveError> {
        let mut inner = self.inner.lock().unwrap();
        let used = inner.used.entry(team_id.to_string()).or_default();
        if *used >= self.quota {
            return Err(ReserveError::Quota { used: *used, quota: self.quota });
        }
        *used += 1;
        Ok(Slot { registry: self.clone(), team_id: team_id.to_string(), armed: true })
    }

    fn release(&self, team_id: &str) {
        let mut inner = self.inner.lock().unwrap();
        if let Some(n) = inner.used.get_mut(team_id) {
            *n = n.saturating_sub(1);
        }
    }

    /// Keep open sandboxes durable in `live` (set once, at start).
    pub fn set_live(&self, live: Arc<dyn LiveStore>) {
        let _ = self.live.set(live);
    }

    pub fn live(&self) -> Option<&Arc<dyn LiveStore>> {
        self.live.get()
    }

    /// A slot for a sandbox coming back after a restart: taken whatever the quota (it was
    /// granted before the restart).
    pub fn readmit(self: &Arc<Self>, team_id: &str) -> Slot {
        *self.inner.lock().unwrap().used.entry(team_id.to_string()).or_default() += 1;
        Slot { registry: self.clone(), team_id: team_id.to_string(), armed: true }
    }

    /// Remember a sandbox closed before a restart.
    pub fn restore_tombstone(&self, id: String, tombstone: Tombstone) {
        let mut inner = self.inner.lock().unwrap();
        inner.closed.insert(id.clone(), tombstone);
        inner.closed_order.push_back(id);
        while inner.closed_order.len() > MAX_TOMBSTONES {
            if let Some(old) = inner.closed_order.pop_front() {
                inner.closed.remove(&old);
            }
        }
    }

    /// Sandboxes the team has open (or being created) now.
    pub fn used(&self, team_id: &str) -> usize {
        self.inner.lock().unwrap().used.get(team_id).copied().unwrap_or(0)
    }

    /// Open a sandbox on a claimed slot.
    pub fn open(
        &self,
        mut slot: Slot,
        identity: Identity,
        twins: Vec<SandboxTwin>,
        meta: SandboxMeta,
        idempotency_key: Option<String>,
    ) -> Arc<Sandbox> {
        slot.armed = false;
        let sandbox = Arc::new(Sandbox {
            id: identity.id,
            team_id: slot.team_id.clone(),
            token: identity.token,
            twins,
            meta,
            created_at: identity.created_at,
            discard_token: identity.discard_token,
            lifetime_deadline: instant(identity.expires_at),
            idle: self.lifetimes.idle,
            idle_deadline: Mutex::new(instant(identity.idle_deadline)),
            closing: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            drained: tokio::sync::Notify::new(),
            live: self.live.get().cloned(),
            idle_written_ms: AtomicU64::new(unix_ms(identity.idle_deadline)),
        });
        let mut inner = self.inner.lock().unwrap();
        if let Some(key) = idempotency_key {
            inner.idempotency.insert((sandbox.team_id.clone(), key), Some(sandbox.id.clone()));
        }
        inner.open.insert(sandbox.id.clone(), sandbox.clone());
        self.metrics.sandbox_created();
        sandbox
    }

    /// Claim an idempotency key for a create, atomically: two creates with one key make one
    /// sandbox. The winner gets `Claimed` (and must `open` with the key, or `release_key`);
    /// others get the sandbox it made, or `Busy` while it is still booting.
    pub fn claim_key(&self, team_id: &str, key: &str) -> KeyClaim {
        let mut inner = self.inner.lock().unwrap();
        let k = (team_id.to_string(), key.to_string());
        match inner.idempotency.get(&k) {
            Some(None) => return KeyClaim::Busy,
            Some(Some(id)) => {
                if let Some(s) = inner.open.get(id) {
                    return KeyClaim::Existing(s.clone());
                }
            }
            None => {}
        }
        inner.idempotency.insert(k, None);
        KeyClaim::Claimed
    }

    /// Give up a claimed key whose create failed, so a retry may use it.
    pub fn release_key(&self, team_id: &str, key: &str) {
        let mut inner = self.inner.lock().unwrap();
        let k = (team_id.to_string(), key.to_string());
        if matches!(inner.idempotency.get(&k), Some(None)) {
            inner.idempotency.remove(&k);
        }
    }

    /// Find a sandbox, closing it first if its clocks ran out.
    pub fn lookup(&self, id: &str) -> Lookup {
        let sandbox = {
            let inner = self.inner.lock().unwrap();
            if let Some(t) = inner.closed.get(id) {
                return Lookup::Closed(t.clone());
            }
            match inner.open.get(id) {
                Some(s) => s.clone(),
                None => return Lookup::Unknown,
            }
        };
        if let Some(reason) = sandbox.closing() {
            return Lookup::Closed(Tombstone { team_id: sandbox.team_id.clone(), token_hash: sandbox.token.hash().to_string(), reason, run_id: None });
        }
        if let Some(reason) = sandbox.expired(Instant::now()) {
            self.close(&sandbox, reason, None);
            return self.lookup(id);
        }
        Lookup::Open(sandbox)
    }

    /// Mark a sandbox as closing so no further twin call is served (finalize reads its tapes
    /// after this). Returns false when it was already closing.
    pub fn begin_close(&self, sandbox: &Sandbox, reason: CloseReason) -> bool {
        let mut c = sandbox.closing.lock().unwrap();
        if c.is_some() {
            return false;
        }
        *c = Some(reason);
        true
    }

    /// Undo `begin_close` (finalize could not persist its run; the sandbox stays usable, and
    /// its door opens again to twin calls).
    pub fn abort_close(&self, sandbox: &Sandbox) {
        *sandbox.closing.lock().unwrap() = None;
        self.changes.notify_waiters();
    }

    /// Close for good: drop the stores, free the slot, leave a tombstone.
    pub fn close(&self, sandbox: &Sandbox, reason: CloseReason, run_id: Option<String>) {
        {
            let mut c = sandbox.closing.lock().unwrap();
            if c.is_none() {
                *c = Some(reason);
            }
        }
        let mut inner = self.inner.lock().unwrap();
        if inner.take_open(&sandbox.id).is_none() {
            return;
        }
        let tombstone = Tombstone { team_id: sandbox.team_id.clone(), token_hash: sandbox.token.hash().to_string(), reason, run_id };
        // A shutdown is not an end: the sandbox comes back on the next start.
        if reason != CloseReason::ServerShutdown
            && let Some(live) = self.live.get()
        {
            // Its stores hear first, so a checkpoint built meanwhile does not warn that the
            // tape it was reading went away.
            sandbox.twins.iter().for_each(|t| t.store.close());
            live.close(&sandbox.id, &tombstone);
        }
        inner.closed.insert(sandbox.id.clone(), tombstone);
        inner.closed_order.push_back(sandbox.id.clone());
        while inner.closed_order.len() > MAX_TOMBSTONES {
            if let Some(old) = inner.closed_order.pop_front() {
                inner.closed.remove(&old);
            }
        }
        drop(inner);
        self.changes.notify_waiters();
        self.metrics.sandbox_closed();
        tracing::info!(sandbox = %sandbox.id, reason = reason.as_str(), "sandbox closed");
    }

    /// Wait until every close so far is committed where open sandboxes are kept durable, so
    /// a close answered survives a crash (nothing to wait for in memory-only mode).
    pub async fn durable(&self) -> Result<(), String> {
        match self.live.get() {
            Some(live) => crate::live::wait(|done| live.flush(done)).await,
            None => Ok(()),
        }
    }

    /// The team's open sandboxes, oldest first.
    pub fn list(&self, team_id: &str) -> Vec<Arc<Sandbox>> {
        let now = Instant::now();
        let mut out: Vec<Arc<Sandbox>> = {
            let inner = self.inner.lock().unwrap();
            inner.open.values().filter(|s| s.team_id == team_id).cloned().collect()
        };
        out.retain(|s| match s.expired(now) {
            Some(reason) => {
                self.close(s, reason, None);
                false
            }
            None => s.closing().is_none(),
        });
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        out
    }

    /// Close every sandbox whose clocks ran out. Run periodically by the server, so expired
    /// sandboxes free their memory and slots even when nobody calls them again.
    pub fn sweep(&self) -> usize {
        let now = Instant::now();
        let expired: Vec<(Arc<Sandbox>, CloseReason)> = {
            let inner = self.inner.lock().unwrap();
            inner.open.values().filter_map(|s| s.expired(now).map(|r| (s.clone(), r))).collect()
        };
        for (s, reason) in &expired {
            if s.closing().is_none() {
                self.close(s, *reason, None);
            }
        }
        expired.len()
    }

    /// Let go of a sandbox another host now serves: its stores are dropped and its slot
    /// freed, with no tombstone (it is open, elsewhere) and nothing written.
    pub fn forget(&self, id: &str) {
        let Some(sandbox) = self.inner.lock().unwrap().take_open(id) else { return };
        *sandbox.closing.lock().unwrap() = Some(CloseReason::ServerShutdown);
        self.changes.notify_waiters();
        self.metrics.sandbox_closed();
        tracing::info!(sandbox = %id, "sandbox moved to another host");
    }

    /// Close everything (server shutdown).
    pub fn close_all(&self) {
        let all: Vec<Arc<Sandbox>> = self.inner.lock().unwrap().open.values().cloned().collect();
        for s in all {
            self.close(&s, CloseReason::ServerShutdown, None);
        }
    }
}
