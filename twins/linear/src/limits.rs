//! What the Linear twin takes from an agent, bounded. Linear's own limits (depth,
//! complexity) answer Linear's `QUERY_TOO_COMPLEX`; the twin's own bounds keep one hostile
//! document from trapping the twin, spending the host's CPU deadline or filling its memory.
//! (The answer cache and the memo of rendered objects keep their budgets beside their code:
//! [`crate::cache`], [`crate::memo`].)

/// Linear's depth limit for a document's selections.
pub const MAX_DEPTH: usize = 24;

/// Linear's complexity ceiling: points per query.
pub const MAX_COMPLEXITY: f64 = 10_000.0;

/// Selection sets the cost walk may nest, counting fragments and inline fragments as well as
/// fields. Linear's depth limit allows 24 levels of fields; wrapping each in a few inline
/// fragments stays far below 128, and the walk recurses once per set, so a bound keeps it off
/// the guest's stack limit whatever the parser accepted.
pub const MAX_NESTING: usize = 128;

/// Documents kept prepared per instance (each with its small schema); clients send a handful.
pub const DOC_CACHE_ENTRIES: usize = 64;

/// Bytes of document text the cache of prepared documents holds in all. A prepared document
/// costs several times its text (syntax tree, validated document, reachable schema), and one
/// instance may grow to the store's memory cap; 2 MiB of text keeps the cache to a small
/// part of it while real clients' documents (a few KiB each) all fit.
pub const DOC_CACHE_BYTES: usize = 2 << 20;

/// Largest document text prepared at all. The SDK's largest documents are a few KiB and
/// content travels in variables; parsing costs memory several times the text, so a bound
/// keeps one request from filling the instance's memory before validation can refuse it.
pub const MAX_DOCUMENT_BYTES: usize = 512 << 10;
