//! The twin contract's Rust side, shared by the host and the twin SDK so that neither keeps a
//! copy of the other's types.
//!
//! The WIT files beside this crate (`v0.1/twin.wit`, `v0.2/twin.wit`, `v0.3/twin.wit`) are the contract a
//! component is checked against. Much of what a twin says about itself travels as JSON
//! (`describe()`) or is read back as JSON (the tape rows checks see); this crate is the schema
//! of that JSON:
//! - [`describe`]: what `describe()` returns — surface, checks, credentials, the agent's
//!   environment, actions.
//! - [`tools`]: the MCP tools a twin declares and how a tool call becomes a request.
//! - [`template`]: the one matcher that binds a criterion sentence to a check template.
//! - [`check`]: what a check reads (a [`check::CheckWorld`]) and answers (an [`check::Outcome`]).
//! - [`tape`]: a tape row as twins and graders read it.

pub mod check;
pub mod describe;
pub mod tape;
pub mod template;
pub mod tools;

pub use check::{CheckWorld, Evidence, Outcome, Params};
pub use describe::{ActionDecl, CheckDecl, Credential, Description, EnvVar, Fidelity, ParamKind, RouteDecl};
pub use tape::{Delivery, StateChange, TapeRow};
pub use tools::{ToolBody, ToolDecl, ToolRequest};

/// The contract versions this crate describes. A published version never changes.
pub const CONTRACT_V1: &str = "pome:twin@0.1.0";
pub const CONTRACT_V2: &str = "pome:twin@0.2.0";
pub const CONTRACT_V3: &str = "pome:twin@0.3.0";

/// Twins per sandbox: fixed by the platform, on every plan.
pub const MAX_TWINS_PER_SANDBOX: usize = 3;
