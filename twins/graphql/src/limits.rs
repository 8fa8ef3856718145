//! The engine's own bounds on what a client sends: they keep one hostile document from
//! trapping a twin, spending the host's CPU deadline or filling its memory. A vendor's own
//! limits (depth, complexity, node counts) are the twin's, answered in its vendor's shape.

/// Selection sets the cost walk may nest, counting fragments and inline fragments as well as
/// fields. Vendors allow a few dozen levels of fields; wrapping each in a few inline
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

/// Largest document text prepared at all. SDKs' largest documents are a few KiB and content
/// travels in variables; parsing costs memory several times the text, so a bound keeps one
/// request from filling the instance's memory before validation can refuse it.
pub const MAX_DOCUMENT_BYTES: usize = 512 << 10;
