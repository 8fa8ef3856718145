//! The Linear twin: Linear's GraphQL API (`POST /graphql`) on Linear's own schema
//! (`schema.graphql` of @linear/sdk 88.3.0), faithful enough that @linear/sdk cannot tell it
//! from api.linear.app.
//!
//! Every document is parsed, validated and executed by the GraphQL engine pome's GraphQL
//! twins share ([`pome_graphql`]: apollo-compiler's parser and validator, the engine's
//! executor) with this twin's resolvers ([`exec`], [`root`], [`mutate`]), so fragments,
//! inline fragments, aliases, variables, directives and introspection behave as GraphQL
//! specifies. Modules by role: [`model`] (the world), [`seed`] (strict seeds), [`tables`] and
//! [`gql`] (Linear's schema), [`filter`] (Linear's filters), [`limits`] (Linear's bounds),
//! [`checks`].

pub mod cache;
pub mod checks;
pub mod created;
pub mod dates;
pub mod exec;
pub mod families;
pub mod filter;
pub mod gql;
pub mod limits;
pub mod lookups;
pub mod mcp;
pub mod model;
pub mod mutate;
pub mod rate;
pub mod root;
pub mod seed;
pub mod tables;
pub mod tools;

// The engine's cost walk, memo of rendered objects and SDL helpers, under the names this
// crate (and its tests) have always used.
pub use pome_graphql::{cost, memo, sdl};

use std::cell::RefCell;
use std::sync::OnceLock;

use pome_graphql::request::{Executed, Request, RequestError};
use pome_twin_sdk::{Auth, Call, CheckDecl, CheckWorld, Credential, Fidelity, HostError, HostErrorKind, Method, Outcome, Params, Response, Router, Twin, Value, json};

pub use model::World;

pub use limits::{MAX_COMPLEXITY, MAX_DEPTH};
pub use cost::complexity;

fn errors(status: u16, list: Vec<Value>) -> Response {
    Response::json(status, &json!({"errors": list}))
}

fn gql_error(message: &str, code: &str) -> Value {
    json!({"message": message, "extensions": {"type": "graphql error", "code": code, "statusCode": 400, "userError": true, "userPresentableMessage": message}})
}

/// The header a host sends with the SHA-256 (hex) of a credential it did not recognise, so
/// a twin can accept keys from its seed without the key itself reaching the twin or the tape
/// (the host redacts `Authorization`).
pub const CREDENTIAL_DIGEST_HEADER: &str = "x-pome-credential-sha256";

/// The user a seeded API key (`tokens` in the seed) acts as, if the request carries one: by
/// its digest ([`CREDENTIAL_DIGEST_HEADER`]), or raw in `Authorization` (as @linear/sdk sends
/// a key) or as `Bearer` where no host redacted it; with the credential its limits are kept
/// under (a token whose `type` is `oauth` has an OAuth app's limits, any other an API key's).
fn seeded_token_user(w: &World, call: &Call) -> Option<(String, rate::Credential)> {
    use sha2::Digest;
    let digest = call.req.header(CREDENTIAL_DIGEST_HEADER).map(str::to_ascii_lowercase);
    let given = call.req.header("authorization").map(|g| g.trim()).map(|g| g.strip_prefix("Bearer ").unwrap_or(g).trim());
    let (at, t) = w.tokens.iter().enumerate().find(|(_, t)| {
        let Some(token) = t.get("token").and_then(Value::as_str) else { return false };
        given == Some(token) || digest.as_deref() == Some(hex::encode(sha2::Sha256::digest(token.as_bytes())).as_str())
    })?;
    let user = t.get("user").and_then(Value::as_str)?;
    let kind = if t.get("type").and_then(Value::as_str).is_some_and(|k| k.eq_ignore_ascii_case("oauth")) { rate::Kind::OAuth } else { rate::Kind::ApiKey };
    let user = w
        .all("User")
        .find(|(id, u)| id.as_str() == user || u.get("email").and_then(Value::as_str).is_some_and(|e| e.eq_ignore_ascii_case(user)))
        .map(|(id, _)| id.clone())?;
    Some((user, rate::Credential::new(format!("tokens[{at}]"), kind, w.rate_limits)))
}

/// The clock a request runs at: the host's virtual clock, or, when the seed sets `clock`, that
/// time advanced by the virtual time passed since the world's first request (recorded in the
/// world, so a replay computes the same times).
fn request_time(w: &mut World) -> chrono::DateTime<chrono::Utc> {
    let host = pome_twin_sdk::time::now();
    let Some(start) = w.clock.as_deref().and_then(pome_twin_sdk::time::parse_iso) else { return host };
    let host_us = host.timestamp_micros();
    let anchor = *w.clock_anchor_us.get_or_insert(host_us);
    start + chrono::Duration::microseconds(host_us.saturating_sub(anchor).max(0))
}

/// `PUT /uploads/…`: the signed upload target `fileUpload` answers (`uploadUrl`). The bytes
/// are taken and not kept (the twin models attachments, not file storage); what an agent does
/// with the file shows as `attachmentCreate` on the asset URL.
fn upload(_w: &mut World, call: &mut Call) -> Response {
    call.action = Some("fileUpload.put".into());
    Response::empty(200)
}

/// `GET /calendar/{team}/cycles.ics`: the team's cycles as an iCalendar feed, at the URL
/// `Team.cycleCalenderUrl` answers. Like Linear's calendar feed, the URL is the credential.
fn cycle_calendar(w: &mut World, call: &mut Call) -> Response {
    call.action = Some("cycleCalendar".into());
    let team = call.params.iter().find(|(k, _)| k == "team").map(|(_, v)| v.clone()).unwrap_or_default();
    let Some(name) = w.str_field("Team", &team, "name").map(String::from) else { return World::unsupported(call) };
    // Text values escape `\`, `;`, `,` and newlines (RFC 5545 §3.3.11).
    let text = |s: &str| s.replace('\\', "\\\\").replace(';', "\\;").replace(',', "\\,").replace('\n', "\\n");
    let day = |v: Option<&Value>| v.and_then(Value::as_str).map(|d| d.get(..10).unwrap_or(d).replace('-', "")).unwrap_or_default();
    let mut out = format!("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//pome//Linear twin cycles//EN\r\nX-WR-CALNAME:{} cycles\r\n", text(&name));
    for (id, c) in w.all("Cycle").filter(|(_, c)| c.get("teamId").and_then(Value::as_str) == Some(team.as_str()) && c.get("archivedAt").is_none_or(Value::is_null)) {
        let number = c.get("number").and_then(Value::as_f64).unwrap_or(0.0);
        let summary = c.get("name").and_then(Value::as_str).map(String::from).unwrap_or_else(|| format!("Cycle {number}"));
        out.push_str(&format!("BEGIN:VEVENT\r\nUID:{id}\r\nDTSTART;VALUE=DATE:{}\r\nDTEND;VALUE=DATE:{}\r\nSUMMARY:{}\r\nEND:VEVENT\r\n", day(c.get("startsAt")), day(c.get("endsAt")), text(&summary)));
    }
    out.push_str("END:VCALENDAR\r\n");
    Response { status: 200, headers: vec![("content-type".into(), "text/calendar; charset=utf-8".into())], body: out.into_bytes() }
}

/// Serve one GraphQL request.
pub fn graphql(w: &mut World, call: &mut Call) -> Response {
    // The host knows only the sandbox's agent token (a personal API key); a key from the seed
    // is the twin's to accept, and the request then acts as that key's user.
    let (acting, cred) = match call.req.auth {
        Auth::Agent => (None, rate::Credential::new("agent".into(), rate::Kind::ApiKey, w.rate_limits)),
        _ => match seeded_token_user(w, call) {
            Some((user, cred)) => (Some(user), cred),
            None => return World::auth_error(call),
        },
    };
    let saved = acting.map(|u| std::mem::replace(&mut w.viewer, u));
    let resp = graphql_as(w, call, &cred);
    if let Some(v) = saved {
        w.viewer = v;
    }
    resp
}

/// Linear's rate-limit headers for the levels a request left (`x-complexity`: its points).
fn with_limits(resp: Response, s: &rate::Status) -> Response {
    resp.with_header("x-complexity", s.points.to_string())
        .with_header("x-ratelimit-requests-limit", s.requests.limit.to_string())
        .with_header("x-ratelimit-requests-remaining", s.requests.remaining.to_string())
        .with_header("x-ratelimit-requests-reset", s.requests.reset_ms.to_string())
        .with_header("x-ratelimit-complexity-limit", s.complexity.limit.to_string())
        .with_header("x-ratelimit-complexity-remaining", s.complexity.remaining.to_string())
        .with_header("x-ratelimit-complexity-reset", s.complexity.reset_ms.to_string())
}

/// Linear's answer past a rate limit: `RATELIMITED`, HTTP 400, with the levels that refused it.
fn rate_limited(s: &rate::Status, what: &str) -> Response {
    let msg = format!("Rate limit exceeded: this request needs more {what} than the {} limit of {} an hour leaves", s.kind.name(), if what == "requests" { s.requests.limit } else { s.complexity.limit });
    let body = errors(400, vec![json!({"message": "Rate limit exceeded", "extensions": {"type": "ratelimited", "code": "RATELIMITED", "statusCode": 400, "userError": true, "userPresentableMessage": msg}})]);
    with_limits(body, s)
}

fn graphql_as(w: &mut World, call: &mut Call, cred: &rate::Credential) -> Response {
    w.requests += 1;
    let now_us = pome_twin_sdk::time::now().timestamp_micros();
    let (left, status) = w.rate.peek(cred, now_us);
    if !left {
        call.action = Some("graphql".into());
        return rate_limited(&status, "requests");
    }
    let key = cache::key(call, &w.viewer);
    if let Some(kept) = cache::get(&w.generation, &key) {
        return match w.rate.spend(cred, now_us, kept.points) {
            Ok(s) => {
                call.action = kept.action;
                call.unsupported = kept.unsupported;
                with_limits(kept.response, &s)
            }
            Err(s) => {
                call.action = Some("graphql".into());
                rate_limited(&s, "complexity points")
            }
        };
    }
    let mut spent = None;
    let (resp, keep) = serve(w, call, &mut |w: &mut World, points: f64| {
        let r = w.rate.spend(cred, now_us, points);
        spent = Some(*r.as_ref().unwrap_or_else(|s| s));
        w.0.rate_status = spent;
        r.is_ok()
    });
    w.0.rate_status = None;
    // A request refused before its complexity was known (a document that does not parse)
    // costs a request and no points.
    let status = match spent {
        Some(s) => s,
        None => w.rate.spend(cred, now_us, 0.0).unwrap_or_else(|s| s),
    };
    if keep {
        cache::put(&w.generation, key, cache::Kept { response: resp.clone(), action: call.action.clone(), unsupported: call.unsupported, points: status.points as f64 });
    }
    with_limits(resp, &status)
}

/// The answer, and whether it may be kept for the same request on the same world.
/// `spend` is asked once the request's complexity is known, before anything runs: `false`
/// refuses it (`RATELIMITED`, with the levels it left in [`model::Inner::rate_status`]).
fn serve(w: &mut World, call: &mut Call, spend: &mut dyn FnMut(&mut World, f64) -> bool) -> (Response, bool) {
    match execute(w, call, spend) {
        Ok((resp, keep)) => (resp, keep),
        Err(resp) => (resp, false),
    }
}

fn execute(w: &mut World, call: &mut Call, spend: &mut dyn FnMut(&mut World, f64) -> bool) -> Result<(Response, bool), Response> {
    call.action = Some("graphql".into());
    let request = match Request::read(call.req.method == Method::Get, call.req.query_pairs(), &call.req.body) {
        Ok(r) => r,
        Err(RequestError::NotAnObject) => return Err(errors(400, vec![gql_error("POST body must be a JSON object with a `query` string", "BAD_REQUEST")])),
        Err(RequestError::NoQuery { persisted: true }) => {
            return Err(errors(200, vec![json!({"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND", "type": "graphql error", "userError": true}})]));
        }
        Err(RequestError::NoQuery { persisted: false }) => return Err(errors(400, vec![gql_error("Must provide query string.", "BAD_REQUEST")])),
        Err(RequestError::VariablesNotObject) => return Err(errors(400, vec![gql_error("Variables must be an object.", "BAD_REQUEST")])),
    };
    let query = request.query();
    let vars = &request.vars;
    let op_name = request.operation_name();
    if query.len() > limits::MAX_DOCUMENT_BYTES {
        let msg = format!("Query too large - the document is {} bytes, more than the maximum of {}", query.len(), limits::MAX_DOCUMENT_BYTES);
        return Err(errors(400, vec![json!({"message": msg, "extensions": {"type": "graphql error", "code": "QUERY_TOO_COMPLEX", "statusCode": 400, "userError": true, "userPresentableMessage": "The query is too large."}})]));
    }
    let prepared = match gql::document(query) {
        Ok(d) => d,
        Err(errs) => {
            let code = if errs.iter().any(|e| e.message.starts_with("Syntax Error") || e.message.contains("syntax error") || e.message.contains("expected")) { "GRAPHQL_PARSE_FAILED" } else { "GRAPHQL_VALIDATION_FAILED" };
            let list = errs
                .iter()
                .map(|e| {
                    let mut v = serde_json::to_value(e).unwrap_or(json!({}));
                    v["extensions"] = json!({"type": "graphql error", "code": code, "statusCode": 400, "userError": true, "userPresentableMessage": e.message});
                    v
                })
                .collect();
            return Err(errors(400, list));
        }
    };
    let doc = &prepared.doc;
    let operation = match doc.operations.get(op_name) {
        Ok(op) => op,
        Err(e) => return Err(errors(400, vec![gql_error(&e.message().to_string(), "GRAPHQL_VALIDATION_FAILED")])),
    };
    let cost = prepared.cost(operation);
    if cost.depth > MAX_DEPTH {
        return Err(errors(400, vec![json!({"message": format!("Query has depth greater than the allowed maximum of {MAX_DEPTH}"), "extensions": {"type": "graphql error", "code": "QUERY_TOO_COMPLEX", "statusCode": 400, "userError": true, "userPresentableMessage": "The query is too deep."}})]));
    }
    let plain_vars = request.plain_vars();
    let points = match cost.complexity {
        Some(points) => points,
        None => complexity(&operation.selection_set, doc, plain_vars),
    };
    if points > MAX_COMPLEXITY {
        let msg = format!("Query too complex - complexity of {} exceeds the maximum of {}", points.round(), MAX_COMPLEXITY);
        return Err(errors(400, vec![json!({"message": msg, "extensions": {"type": "graphql error", "code": "QUERY_TOO_COMPLEX", "statusCode": 400, "userError": true, "userPresentableMessage": "The query is too complex; request fewer items or fields."}})]));
    }
    if !spend(w, points) {
        let s = w.0.rate_status.expect("a refused spend records its levels");
        return Err(rate_limited(&s, "complexity points"));
    }
    let is_mutation = operation.operation_type == apollo_compiler::executable::OperationType::Mutation;
    let now = request_time(w).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    w.0.request_clock.start(&now);
    let base = call.req.base_url.clone();
    if !is_mutation {
        prepared.memo.borrow_mut().enter(w.generation.key(), &w.viewer, &base);
    }
    let ctx = exec::Ctx { w: RefCell::new(&mut w.0), base_url: base, now, fx: RefCell::new(exec::Effects::default()), volatile: std::cell::Cell::new(false) };
    let root = root::Root { ctx: &ctx, ty: if is_mutation { "Mutation" } else { "Query" } };
    let introspection = gql::introspects(query);
    let p = prepared.prepared();
    let coerced = match apollo_compiler::request::coerce_variable_values(&p.schema, operation, vars) {
        Ok(v) => v,
        Err(e) => {
            let msg = e.message().to_string();
            return Err(errors(400, vec![json!({"message": msg, "extensions": {"type": "graphql error", "code": "BAD_USER_INPUT", "statusCode": 400, "userError": true, "userPresentableMessage": msg}})]));
        }
    };
    let unchanged = || ctx.fx.borrow().changes.is_empty() && !ctx.volatile.get();
    let memo = (!is_mutation && !introspection).then_some(&prepared.memo);
    let Executed { data, errors: raw_errors, fresh } = pome_graphql::request::execute(&prepared, operation, &coerced, &root, introspection, memo, &unchanged);
    let volatile = ctx.volatile.get() || ctx.w.borrow().request_clock.was_read();
    let fx = ctx.fx.into_inner();
    if is_mutation || volatile || !fx.changes.is_empty() {
        w.generation.bump();
    }
    let keep = !is_mutation && !volatile && fx.changes.is_empty() && fx.deliveries.is_empty();
    if keep && raw_errors.is_empty() {
        prepared.memo.borrow_mut().keep(&data, fresh);
    }
    if let Some(a) = fx.actions.first() {
        call.action = Some(a.clone());
    } else if let Some(u) = fx.unsupported.first() {
        call.action = Some(u.rsplit('.').next().unwrap_or(u).to_string());
    }
    call.changes = fx.changes;
    call.deliveries = fx.deliveries;
    // A required field the world holds no value for marks the call unsupported too.
    let mut held_back = false;
    let list: Vec<Value> = raw_errors
        .into_iter()
        .map(|mut v| {
            let msg = v.get("message").and_then(Value::as_str).unwrap_or("").to_string();
            let ext = match fx.error_ext.iter().find(|(m, _)| *m == msg) {
                Some((_, x)) => x.clone(),
                None if msg.ends_with(exec::NOT_HELD) => {
                    held_back = true;
                    json!({"type": "other", "code": "UNSUPPORTED", "userError": false, "fidelity": "unsupported", "userPresentableMessage": msg})
                }
                None => json!({"type": "internal error", "code": "INTERNAL_SERVER_ERROR", "userError": false}),
            };
            v["extensions"] = ext;
            v
        })
        .collect();
    call.unsupported = !fx.unsupported.is_empty() || held_back;
    let status = if data == b"null" && !list.is_empty() { 400 } else { 200 };
    let body = pome_graphql::request::body(&data, &list);
    Ok((Response { status, headers: vec![("content-type".into(), "application/json; charset=utf-8".into())], body }, keep))
}

impl Twin for World {
    const NAME: &'static str = "linear";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const CLIENT_BASE_PATH: &'static str = "/graphql";

    fn init(seed: Option<Value>) -> Result<Self, String> {
        match seed {
            None => seed::from_seed(&seed::default_seed()),
            Some(v) => seed::from_seed(&v),
        }
    }

    fn router() -> &'static Router<Self> {
        static R: OnceLock<Router<World>> = OnceLock::new();
        R.get_or_init(|| {
            Router::new()
                .route(Some(Method::Post), "/graphql", "graphql", Fidelity::Semantic, graphql)
                .route(Some(Method::Get), "/graphql", "graphql", Fidelity::Semantic, graphql)
                .route(Some(Method::Post), mcp::PATH, "mcp", Fidelity::Semantic, mcp::endpoint)
                .route(Some(Method::Put), "/uploads/{org}/{id}/{name}", "fileUpload.put", Fidelity::Shape, upload)
                .route(Some(Method::Get), "/calendar/{team}/cycles.ics", "cycleCalendar", Fidelity::Semantic, cycle_calendar)
        })
    }

    fn unsupported(call: &Call) -> Response {
        errors(404, vec![json!({"message": format!("Cannot {} {}", call.req.method.as_str(), call.req.path), "extensions": {"type": "other", "code": "NOT_FOUND", "fidelity": "unsupported", "userError": true}})])
    }

    /// A request with a credential the host does not know may carry an API key from the
    /// seed: the GraphQL route decides ([`graphql`]), answering Linear's authentication error
    /// for anything else. An upload's PUT carries no credential: its URL is its signature, as
    /// with the signed URL Linear answers.
    fn serves_without_auth(req: &pome_twin_sdk::Request) -> bool {
        (req.auth == Auth::Invalid && req.path == "/graphql") || (req.method == Method::Put && req.path.starts_with("/uploads/")) || (req.method == Method::Get && req.path.starts_with("/calendar/"))
    }

    fn auth_error(_call: &Call) -> Response {
        errors(
            400,
            vec![json!({"message": "Authentication required, not authenticated", "extensions": {"type": "authentication error", "code": "AUTHENTICATION_ERROR", "statusCode": 401, "userError": true, "userPresentableMessage": "You need to authenticate to access this operation."}})],
        )
    }

    fn host_error(err: &HostError) -> Response {
        let (kind, code) = match err.kind {
            HostErrorKind::RateLimited | HostErrorKind::TapeFull => ("ratelimited", "RATELIMITED"),
            HostErrorKind::PayloadTooLarge => ("invalid input", "PAYLOAD_TOO_LARGE"),
            HostErrorKind::TwinFailed => ("internal error", "INTERNAL_SERVER_ERROR"),
        };
        errors(err.kind.status(), vec![json!({"message": err.message, "extensions": {"type": kind, "code": code, "userError": false, "userPresentableMessage": err.message}})])
    }

    fn state(&self) -> Value {
        self.0.export()
    }

    fn checks() -> Vec<CheckDecl> {
        checks::declared()
    }

    fn evaluate_check(id: &str, params: &Params, world: &CheckWorld<'_>) -> Result<Outcome, String> {
        checks::evaluate(id, params, world)
    }

    fn credentials() -> Vec<Credential> {
        vec![Credential::RawAuthorization, Credential::Bearer]
    }

    fn agent_env() -> Vec<(&'static str, &'static str)> {
        vec![("POME_LINEAR_TOKEN", "{token}"), ("POME_LINEAR_API_URL", "{api_url}")]
    }

    /// The routes' actions, but the upload target and the calendar feed: raw file bytes are no
    /// MCP tool's argument, and a feed is for calendar apps.
    fn actions() -> Vec<pome_twin_sdk::ActionDecl> {
        pome_twin_sdk::describe::actions_from_surface(&Self::router().surface()).into_iter().filter(|a| a.name != "fileUpload.put" && a.name != "cycleCalendar").collect()
    }

    fn tools() -> Vec<pome_twin_sdk::ToolDecl> {
        tools::declared()
    }

    fn tool_aliases() -> Vec<(&'static str, &'static str)> {
        vec![
            ("list_issues", "issues"),
            ("get_issue", "issue"),
            ("search_issues", "searchIssues"),
            ("create_issue", "issueCreate"),
            ("update_issue", "issueUpdate"),
            ("save_issue", "issueUpdate"),
            ("create_comment", "commentCreate"),
            ("save_comment", "commentCreate"),
            ("list_comments", "comments"),
            ("list_teams", "teams"),
            ("get_team", "team"),
            ("list_users", "users"),
            ("list_issue_labels", "issueLabels"),
            ("create_issue_label", "issueLabelCreate"),
            ("list_issue_statuses", "workflowStates"),
            ("list_projects", "projects"),
            ("create_project", "projectCreate"),
            ("list_cycles", "cycles"),
            ("list_documents", "documents"),
        ]
    }
}

#[cfg(target_arch = "wasm32")]
pome_twin_sdk::export_twin!(World);

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_mcp;
#[cfg(test)]
mod tests_input;
#[cfg(test)]
mod tests_round_two;
#[cfg(test)]
mod tests_families;
