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
}

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

impl SeedCache {
    pub fn new(cap: usize) -> SeedCache {
        SeedCache { cap: cap.max(1), inner: Mutex::new(CacheInner::default()) }
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
        if result.is_err() {
            let mut inner = self.inner.lock().unwrap();
            inner.map.remove(&key);
            inner.order.retain(|k| *k != key);
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
    let seed = seed.to_string();
    rt.call(&mut store, async |s| twin.init(s, &seed).await).await?.map_err(SeedError::Rejected)?;
    let snapshot = rt.call(&mut store, async |s| twin.snapshot(s).await).await?;
    let state = rt.call(&mut store, async |s| twin.state(s).await).await?;
    Ok(Arc::new(SeedImage { digest, snapshot, state }))
}
