//! Seed snapshots: the first sandbox on a (twin, seed) pair runs the twin's `init` in a
//! throwaway store and keeps `snapshot()` and `state()`; every sandbox on that pair, the
//! first included, starts from a fresh store restored from those bytes. So two sandboxes on
//! one seed start from the same world, and creating one costs a restore, not an init.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::engine::{GuestError, Runtime, TwinImage};

/// The virtual time `init` runs at: 2026-01-01T00:00:00Z. Fixed, so a seed's snapshot is
/// the same bytes on every machine and every day.
pub const SEED_EPOCH_MICROS: u64 = 1_767_225_600_000_000;

/// One twin's world right after `init(seed)`.
pub struct SeedImage {
    /// SHA-256 over the twin's component digest and the seed text; also seeds the PRNG.
    pub digest: [u8; 32],
    pub snapshot: Vec<u8>,
    /// `state()` right after init: the run's initial state.
    pub state: String,
    /// The seed text `init` was given ("" = the twin's default world): what a run records
    /// and a fork of it boots from again.
    pub text: String,
    /// Its bytes, counted in the memory budget for as long as anything holds the image (the
    /// cache, or the sandboxes that may rebuild from it).
    _held: crate::engine::HeldBytes,
}

impl SeedImage {
    /// Bytes it holds: what the cache's byte bound counts.
    pub fn bytes(&self) -> usize {
        self.snapshot.len() + self.state.len() + self.text.len()
    }
}

/// Seed images the cache keeps, by their bytes, besides its count of entries: a tenant that
/// sends large distinct seeds cannot make the cache hold more than this (sandboxes still
/// booting from an evicted image hold it until they close, counted in the budget).
pub const SEED_CACHE_BYTES: usize = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The twin refused the seed; the message is the twin's own.
    #[error("{0}")]
    Rejected(String),
    #[error(transparent)]
    Guest(#[from] GuestError),
    #[error("{0}")]
    Host(String),
}

type Key = ([u8; 32], [u8; 32]);

pub struct SeedCache {
    cap: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Default)]
struct CacheInner {
    map: BTreeMap<Key, Arc<OnceCell<Arc<SeedImage>>>>,
    order: VecDeque<Key>,
}

impl CacheInner {
    /// Drop the oldest images (never `keep`, just made) while the cache holds over `bytes`.
    fn evict_past(&mut self, bytes: usize, keep: Key) {
        let size = |m: &BTreeMap<Key, Arc<OnceCell<Arc<SeedImage>>>>| m.values().filter_map(|c| c.get()).map(|i| i.bytes()).sum::<usize>();
        let mut total = size(&self.map);
        while total > bytes {
            let Some(pos) = self.order.iter().position(|k| *k != keep) else { break };
            let old = self.order.remove(pos).expect("a position found in it");
            total -= self.map.remove(&old).and_then(|c| c.get().map(|i| i.bytes())).unwrap_or(0);
        }
    }
}

impl SeedCache {
    pub fn new(cap: usize) -> SeedCache {
        SeedCache { cap: cap.max(1), inner: Mutex::new(CacheInner::default()) }
    }

    /// Forget every cached image: memory to give back when the budget is reached. Images
    /// that open sandboxes still hold stay until they close.
    pub fn clear(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.map.clear();
        inner.order.clear();
    }

    /// The snapshot for `seed` on `image`, running `init` once per pair. Concurrent creates
    /// on a new pair wait for one init; a refused seed is not cached.
    pub async fn get(&self, rt: &Runtime, image: &TwinImage, seed: &str) -> Result<Arc<SeedImage>, SeedError> {
        let seed_digest: [u8; 32] = Sha256::digest(seed.as_bytes()).into();
        let key = (image.digest, seed_digest);
        let cell = {
            let mut inner = self.inner.lock().unwrap();
            if let Some(cell) = inner.map.get(&key) {
                cell.clone()
            } else {
                let cell = Arc::new(OnceCell::new());
                inner.map.insert(key, cell.clone());
                inner.order.push_back(key);
                while inner.order.len() > self.cap {
                    if let Some(old) = inner.order.pop_front() {
                        inner.map.remove(&old);
                    }
                }
                cell
            }
        };
        let result = cell.get_or_try_init(|| init_seed(rt, image, seed, key)).await.cloned();
        let mut inner = self.inner.lock().unwrap();
        match &result {
            Err(_) => {
                inner.map.remove(&key);
                inner.order.retain(|k| *k != key);
            }
            Ok(_) => inner.evict_past(SEED_CACHE_BYTES, key),
        }
        result
    }
}

async fn init_seed(rt: &Runtime, image: &TwinImage, seed: &str, key: Key) -> Result<Arc<SeedImage>, SeedError> {
    let mut h = Sha256::new();
    h.update(key.0);
    h.update(key.1);
    let digest: [u8; 32] = h.finalize().into();

    let mut store = rt.new_store();
    store.data().clock.set_micros(SEED_EPOCH_MICROS);
    store.data().random.reseed(&digest, 0);
    let instance = rt.instantiate(&mut store, image).await.map_err(|e| SeedError::Host(format!("{e:#}")))?;
    let twin = &instance;
    let text = seed.to_string();
    rt.call(&mut store, async |s| twin.init(s, &text).await).await?.map_err(SeedError::Rejected)?;
    let snapshot = rt.call(&mut store, async |s| twin.snapshot(s).await).await?;
    let state = rt.call(&mut store, async |s| twin.state(s).await).await?;
    let _held = rt.held.hold(snapshot.len() + state.len() + text.len());
    Ok(Arc::new(SeedImage { digest, snapshot, state, text, _held }))
}
