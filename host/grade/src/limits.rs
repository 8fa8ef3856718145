//! The bounds on deciding one criterion, in one place. They are fixed numbers, never scaled by
//! the run being graded: a bound that grew with the tape would let the agent under test move
//! its own grade by padding the tape.
//!
//! The rule when a bound is reached (issue #32): whose doing was it?
//!
//! - Reached over the **seed world alone** (the seed state, an empty tape): the task author
//!   wrote a criterion too costly for the world they gave, before any agent acted. The
//!   criterion is `errored` — a fault of the task, which makes the verdict `incomplete`.
//! - Reached only over the **world the agent left** (its tape, the state it grew): the
//!   agent's own calls reached the bound. The criterion is `failed`, with a reason naming the
//!   bound. Nothing the agent does can turn a `fail` into `incomplete` or `pass` this way; an
//!   agent that floods the twin only loses criteria.
//!
//! A seed has no tape, so every byte of tape is the agent's: a tape over [`CRITERION_TAPE_BYTES`]
//! fails every criterion that would read it.

/// Steps one CEL criterion (an `expr:` or a 0.1.0 twin's declared predicate) may take,
/// estimated before it runs, since the interpreter has no step counter to stop it midway:
/// about a second of evaluation on the 2-core development machine, so a finalize grading a
/// handful of criteria answers in seconds.
pub const CRITERION_STEPS: u64 = 20_000_000;

/// Bytes of tape (its rows' [`weight`](pome_tape::TapeRow::weight), an upper bound of their
/// JSON) one criterion may read: what a twin's `evaluate-checks` is handed, or what a CEL
/// expression that names `tape` converts. A twin decides its checks in a fresh guest capped
/// like its store (128 MiB by default); the tape arrives there as text and is parsed beside
/// it, and the seed and final states come too, so 16 MiB of tape (about 32 MiB in the
/// guest) leaves room for the worlds. A normal run's tape is a few hundred calls, well under
/// a MiB.
pub const CRITERION_TAPE_BYTES: usize = 16 << 20;

/// Bytes of one request or response body the judge of a `[model]` criterion is shown per
/// call: enough for a comment or a message, not a whole listing.
pub const JUDGE_BODY_BYTES: usize = 600;

/// Bytes of the record of calls the judge is shown in all: the calls after it are counted,
/// not shown. About 15,000 tokens, within every current judge model's context.
pub const JUDGE_RECORD_BYTES: usize = 60_000;

/// The bytes of tape a criterion would read: the sum of its rows' weights.
pub fn tape_bytes(tape: &[pome_tape::TapeRow]) -> usize {
    tape.iter().map(pome_tape::TapeRow::weight).sum()
}

/// The reason of a criterion failed because the agent's tape outgrew what a criterion reads.
pub fn tape_too_large(rows: usize, bytes: usize) -> String {
    format!(
        "the tape is larger than this criterion may read ({rows} rows, {bytes} bytes; at most {CRITERION_TAPE_BYTES}); the agent's own calls reached the bound"
    )
}
