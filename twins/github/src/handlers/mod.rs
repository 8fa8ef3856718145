//! Route handlers, one module per API area. Each public `fn(&mut World, &mut Call) ->
//! ApiResult` is one named action (GitHub's operationId with `/` → `.` and `-` → `_`).

pub mod issues;
pub mod pulls;
pub mod repos;
pub mod users;
