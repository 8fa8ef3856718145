//! Rendered answers to queries, kept while the world does not change, so a client asking the
//! same question again (a dashboard polling `issues(filter: …)`) is answered without executing
//! the document again.
//!
//! An answer is a pure function of the world, the request and (for a few defaulted fields) the
//! clock, so the cache never changes what a client sees and replays stay byte-identical:
//! entries are keyed by the world's identity and generation (every mutation, and every query
//! that wrote to the world, starts a new generation; a world built by `init` or `restore` or
//! cloned is a new identity), answers that read the clock are not kept, and the key is the
//! whole request (body, query string, base URL) and the user it acts as. The cache lives outside the
//! world, bounded in entries and bytes.

use std::cell::RefCell;
use std::collections::VecDeque;

use pome_twin_sdk::{Call, Response};

pub use pome_twin_sdk::generation::Generation;

const MAX_ENTRIES: usize = 16;
const MAX_BYTES: usize = 512 * 1024;

/// What a kept answer recorded on the tape besides its bytes.
#[derive(Clone)]
pub struct Kept {
    pub response: Response,
    pub action: Option<String>,
    pub unsupported: bool,
    /// Its complexity points: a kept answer spends them again.
    pub points: f64,
}

struct Entry {
    at: (u64, u64),
    key: Vec<u8>,
    kept: Kept,
}

/// The request as the answer depends on it: who acts (`user`, the id of the user the
/// request's credential resolved to) and what it asks. Not the `Authorization` header: the host
/// redacts it for every caller, so the agent token and a seeded API key would look alike.
pub fn key(call: &Call, user: &str) -> Vec<u8> {
    let r = &call.req;
    let mut k = Vec::with_capacity(r.body.len() + r.query.len() + r.base_url.len() + user.len() + 8);
    for part in [r.method.as_str().as_bytes(), r.base_url.as_bytes(), r.query.as_bytes(), user.as_bytes(), &r.body] {
        k.extend_from_slice(&(part.len() as u32).to_le_bytes());
        k.extend_from_slice(part);
    }
    k
}

thread_local! {
    static CACHE: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

pub fn get(g: &Generation, key: &[u8]) -> Option<Kept> {
    CACHE.with(|c| c.borrow().iter().find(|e| e.at == g.key() && e.key == key).map(|e| e.kept.clone()))
}

pub fn put(g: &Generation, key: Vec<u8>, kept: Kept) {
    if kept.response.status != 200 || kept.response.body.len() > MAX_BYTES {
        return;
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        // Entries of older generations or other worlds can never be hit again.
        c.retain(|e| e.at == g.key());
        c.push_back(Entry { at: g.key(), key, kept });
        let mut total: usize = c.iter().map(|e| e.kept.response.body.len() + e.key.len()).sum();
        while c.len() > MAX_ENTRIES || total > MAX_BYTES {
            let Some(e) = c.pop_front() else { break };
            total -= e.kept.response.body.len() + e.key.len();
        }
    });
}
