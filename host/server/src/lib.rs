//! The hosted API, in the order a request meets it: [`server`] (start-up, shutdown) →
//! [`listener`] (connections: cap, header timeout, graceful close) → [`api`] (control
//! plane's REST door, over the operations of [`ops`]) / [`proxy`] (twin traffic) →
//! [`sandbox`] (lifetimes, quota, tokens) → the runtime's twin stores; at the end of a
//! sandbox, `ops::finalize` (collect → grade → persist → close) → [`storage`] (SQLite). Beside them: [`app`] (the state every handler shares),
//! [`auth`] (keys and tokens), [`cluster`] (several hosts on one PostgreSQL: forwarding to a
//! sandbox's owner, claiming a dead host's sandboxes), [`error`] (the one error envelope), [`task_api`] (tasks and
//! grading at finalize) and [`twins`] (the twins this server has, and how they decide their
//! checks).

pub mod api;
pub mod app;
pub mod auth;
pub mod cluster;
pub mod error;
pub mod listener;
pub mod limits;
pub mod live;
pub mod mcp;
pub mod openapi;
pub mod ops;
pub mod proxy;
pub mod sandbox;
pub mod server;
pub mod storage;
pub mod task_api;
pub mod twins;
pub mod ui;
