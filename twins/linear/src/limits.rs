//! What the Linear twin takes from an agent, bounded. Linear's own limits (depth,
//! complexity) answer Linear's `QUERY_TOO_COMPLEX`; the twin's own bounds keep one hostile
//! document from trapping the twin, spending the host's CPU deadline or filling its memory.
//! (The answer cache and the memo of rendered objects keep their budgets beside their code:
//! [`crate::cache`], [`crate::memo`].)

/// Linear's depth limit for a document's selections.
pub const MAX_DEPTH: usize = 24;

/// Linear's complexity ceiling: points per query.
pub const MAX_COMPLEXITY: f64 = 10_000.0;

// The engine's own bounds on documents (nesting, the document cache, document size).
pub use pome_graphql::limits::{DOC_CACHE_BYTES, DOC_CACHE_ENTRIES, MAX_DOCUMENT_BYTES, MAX_NESTING};

/// Results `semanticSearch` answers at most, whatever `maxResults` asks: Linear's schema
/// gives the default (50) and no ceiling, so the twin takes Linear's largest page (250).
pub const MAX_SEMANTIC_RESULTS: i64 = 250;

/// Results `semanticSearch` answers when `maxResults` is not given (Linear's schema: 50).
pub const DEFAULT_SEMANTIC_RESULTS: i64 = 50;
