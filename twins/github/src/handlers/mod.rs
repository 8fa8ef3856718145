//! Route handlers, one module per API area. Each public `fn(&mut World, &mut Call) ->
//! ApiResult` is one named action (GitHub's operationId with `/` → `.` and `-` → `_`).

pub mod actions;
pub mod checks;
pub mod gists;
pub mod git;
pub mod hooks;
pub mod issues;
pub mod mcp_actions;
pub mod mcp_tools;
pub mod mcp_vendor;
pub mod misc;
pub mod protection;
pub mod pulls;
pub mod releases;
pub mod repos;
pub mod search;
pub mod teams;
pub mod users;
