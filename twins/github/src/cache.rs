//! A small cache of rendered GET answers, so a client paging through a large, unchanged
//! repository does not pay for re-rendering GitHub's (large) JSON shapes on every call.
//!
//! An answer is a pure function of the world and the request, so caching cannot change what
//! a client sees, and replays stay byte-identical. Entries are keyed by the world's identity
//! and generation: every non-GET request starts a new generation, and a world built by
//! `init` or `restore` is a new identity. The cache lives outside the world (it is neither
//! snapshotted nor part of the state) and is bounded in entries and bytes.

use std::cell::RefCell;
use std::collections::VecDeque;

use pome_twin_sdk::{Call, Method, Response};

pub use pome_twin_sdk::generation::Generation;

/// Most answers kept, and most bytes kept in total (a page of 100 issues is ≈ 500 KB).
const MAX_ENTRIES: usize = 16;
const MAX_BYTES: usize = 768 * 1024;

struct Entry {
    at: (u64, u64),
    key: Key,
    response: Response,
}

/// What an answer depends on besides the world: the request's address and its `Accept`.
struct Key {
    base_url: String,
    path: String,
    query: String,
    accept: String,
}

impl Key {
    fn of(call: &Call) -> Key {
        Key {
            base_url: call.req.base_url.clone(),
            path: call.req.path.clone(),
            query: call.req.query.clone(),
            accept: call.req.header("accept").unwrap_or("").to_string(),
        }
    }

    /// Compared in place: a lookup allocates nothing.
    fn matches(&self, call: &Call) -> bool {
        self.path == call.req.path
            && self.query == call.req.query
            && self.base_url == call.req.base_url
            && self.accept == call.req.header("accept").unwrap_or("")
    }
}

thread_local! {
    static CACHE: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

/// Whether a request may be answered from the cache: reads whose answer does not depend
/// on the clock.
pub fn cacheable(call: &Call) -> bool {
    // Actions answers follow the virtual clock (a run progresses while the world stands still),
    // and so do the MCP tools that read them; a release asset's download counts itself in the
    // world.
    call.req.method == Method::Get
        && !matches!(call.action.as_deref(), Some("rate_limit.get" | "repos.download_release_asset_file" | "mcp.actions_list" | "mcp.actions_get" | "mcp.get_job_logs" | "mcp.list_workflow_jobs"))
        && !call.action.as_deref().is_some_and(|a| a.starts_with("actions."))
}

pub fn get(g: &Generation, call: &Call) -> Option<Response> {
    CACHE.with(|c| {
        c.borrow()
            .iter()
            .find(|e| e.at == g.key() && e.key.matches(call))
            .map(|e| e.response.clone())
    })
}

pub fn put(g: &Generation, call: &Call, response: &Response) {
    if response.status != 200 || response.body.len() > MAX_BYTES {
        return;
    }
    let key = Key::of(call);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        // Entries of older generations or other worlds can never be hit again.
        c.retain(|e| e.at == g.key());
        c.push_back(Entry { at: g.key(), key, response: response.clone() });
        let mut total: usize = c.iter().map(|e| e.response.body.len()).sum();
        while c.len() > MAX_ENTRIES || total > MAX_BYTES {
            let Some(e) = c.pop_front() else { break };
            total -= e.response.body.len();
        }
    });
}
