//! pome: a WebAssembly-isolated host for digital twins of SaaS APIs.
//!
//! The pipeline, in the order a request meets it:
//! `server` (listener, shutdown) → `api` (control plane) / `proxy` (twin traffic) →
//! `sandbox` (lifetimes, quota, tokens) → `store` (one task per twin store) → `runtime`
//! (wasmtime) → `tape` (what each request did) → `storage` (runs, teams, keys in SQLite).
//! Beside it: `task` (task files) → `grade` (criteria → checks → verdict), and `run` (the
//! `pome run/eval/replay` orchestration).

pub mod api;
pub mod auth;
pub mod cli;
pub mod client;
pub mod error;
pub mod grade;
pub mod limits;
pub mod local;
pub mod metrics;
pub mod proxy;
pub mod run;
pub mod runtime;
pub mod sandbox;
pub mod seeds;
pub mod server;
pub mod storage;
pub mod store;
pub mod tape;
pub mod task;
pub mod task_api;
pub mod twins;
