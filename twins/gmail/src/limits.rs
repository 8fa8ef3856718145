//! What the Gmail twin parses from an agent or a seed, bounded: MIME trees, search queries,
//! `fields` selections and batch bodies each stop at one of these with Google's 400
//! `INVALID_ARGUMENT`, so no input can trap the twin or spend the host's CPU deadline, and a
//! message it accepted is always one it can read back. What a mailbox keeps over time
//! (history, a watch) is bounded here too.

/// Multipart levels a message may nest. Mail clients write 3 or 4 (mixed › related ›
/// alternative); a forwarded message adds a few. Rendering the payload tree recurses once per
/// level, so a bound far above real mail and far below the guest's stack.
pub const MAX_MIME_DEPTH: usize = 32;

/// MIME parts one message may have in all. Gmail caps attachments by size (25 MB), not count;
/// a thousand parts is far past any real message, and each part is a node of the payload
/// answered on every `messages.get`.
pub const MAX_MIME_PARTS: usize = 1_000;

/// Levels of grouping a search query may nest: parentheses, braces and negations. Real
/// queries nest two or three; the parser recurses once per level.
pub const MAX_QUERY_DEPTH: usize = 32;

/// Levels a `fields` selection may nest (`a(b(c))` or `a/b/c`). Gmail's resources are at most
/// six levels deep (a payload's parts' parts' headers), so deeper selections select nothing
/// real; the parser and the cut recurse once per level.
pub const MAX_FIELDS_DEPTH: usize = 32;

/// Requests one batch may hold: Gmail's documented limit.
pub const MAX_BATCH_PARTS: usize = 100;

/// Characters of a multipart boundary: RFC 2046 allows 70. Finding the parts compares the
/// boundary at every line start, so its length bounds that work.
pub const MAX_BOUNDARY_CHARS: usize = 70;

/// How long a mailbox keeps history, in milliseconds of the sandbox clock: Gmail documents a
/// `startHistoryId` as "typically valid for at least a week", so a week is kept whatever the
/// traffic, and an older start id answers 404 as Gmail's does.
pub const HISTORY_KEPT_MS: i64 = 7 * 24 * 3600 * 1000;

/// The bytes of history one mailbox may hold (estimated per record as it is stored). A week
/// of an agent's traffic is a few thousand records of ~150 bytes; 8 MiB is about 50,000 and
/// a sixteenth of a store's memory cap, so only a flood far past real use trims sooner.
pub const HISTORY_MAX_BYTES: usize = 8 << 20;

/// How long a `users.watch` lasts, in milliseconds of the sandbox clock: Gmail's watch
/// answers an `expiration` a week ahead and asks clients to call `watch` again before then.
pub const WATCH_LIFETIME_MS: i64 = 7 * 24 * 3600 * 1000;
