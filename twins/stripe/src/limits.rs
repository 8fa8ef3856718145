//! What the Stripe twin parses from an agent, bounded: every parser that could otherwise
//! recurse or loop as deep or as long as the input says stops at one of these, with a 400 in
//! Stripe's shape, so no input can trap the twin or spend the host's CPU deadline.

/// Brackets one form parameter may nest (`a[b][c]` is 2). Stripe's deepest real parameters
/// (`line_items[0][price_data][product_data][metadata][k]`) nest 5; 32 is the default of
/// Rack's query parser, which answers anything deeper as a bad request. Nesting drives the
/// recursion of [`crate::core::nest`] and of every walk over the parameters after it.
pub const MAX_PARAM_DEPTH: usize = 32;

/// Distinct `expand[]` paths one request may ask for. Each path is at most 4 levels
/// (Stripe's own limit), and expanding walks every item of a list: the count is what bounds
/// the work. No object has anywhere near this many expandable properties.
pub const MAX_EXPAND_PATHS: usize = 64;

/// How much of a refused parameter's name an error message repeats: enough to recognise it,
/// never the whole hostile key.
pub const SHOWN_NAME_CHARS: usize = 80;
