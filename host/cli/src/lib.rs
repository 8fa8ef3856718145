//! pome: a WebAssembly-isolated host for digital twins of SaaS APIs. This crate is the `pome`
//! command: the CLI ([`cli`]), the control-plane client ([`client`]), `pome doctor`
//! ([`doctor`]), `pome run/eval/replay` ([`run`]) and local twins ([`local`]).
//!
//! The host itself is a set of crates with one job each, and its pipeline reads from their
//! names, in the order a request meets them:
//! `pome-server` (HTTP routes → sandboxes → finalize → storage) → `pome-runtime` (twin store →
//! engine) → `pome-tape` (what each request did) → `pome-grade` (tasks, criteria, verdicts),
//! all speaking the twin contract of `pome-contract` (`wit/`). Dependencies point one way:
//! contract ← tape ← runtime ← server ← pome, and grade ← server.
//!
//! The layers are re-exported here under their roles, for tests and embedders.

pub mod cli;
pub mod client;
pub mod compare;
pub mod doctor;
pub mod local;
pub mod report;
pub mod run;
pub mod suite;
pub mod table;

pub use pome_grade as grade;
pub use pome_grade::task;
pub use pome_runtime::{engine as runtime, limits, metrics, outbound, seeds, store};
pub use pome_server::{api, auth, error, proxy, sandbox, server, storage, task_api, twins};
pub use pome_tape as tape;
