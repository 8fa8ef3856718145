//! The WebAssembly runtime, the part of pome that runs twins.
//!
//! In the order a request meets it: [`store`] (one task per (sandbox, twin) store, calls are
//! messages, the tape is written here) → [`engine`] (one wasmtime engine, components compiled
//! once, the one builder every store goes through) → the guest. Beside them: [`seeds`] (seed
//! snapshots, one `init` per (twin, seed)), [`twins`] (loading components), [`outbound`]
//! (delivering the webhooks twins ask for), [`background`] (low-priority threads that build
//! checkpoints), [`limits`] (every limit, in one place) and [`metrics`].

pub mod background;
pub mod engine;
pub mod limits;
pub mod metrics;
pub mod outbound;
pub mod seeds;
pub mod store;
pub mod twins;

pub use engine::{Runtime, TwinImage, TwinSet};
pub use limits::{Lifetimes, Limits};
