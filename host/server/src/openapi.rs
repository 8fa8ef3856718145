//! The OpenAPI 3.1 description of `/v1`, served at `GET /v1/openapi.json`. It is produced
//! by `aide` from the routes themselves (`api::routes()` builds an `aide` router, so a route
//! is mounted and described in one step): the request types the operations take (the same
//! `schemars` derives the control MCP's tool schemas come from), the extractors (the key a
//! route needs, its path and query parameters, its body), and the answer types below.
//!
//! The operations build their answers as JSON (`ops::*`, shared with the MCP door); each
//! REST route says what its answer keeps to with [`Answer`], naming one of the types here.
//! The end-to-end suite validates every `/v1` answer it receives against this document
//! (`tests/harness.rs`), so a type here that drifted from its operation fails the test that
//! made the call. Where a body is genuinely open (a twin's world, a whole run, a criterion's
//! evidence), the type says so and constrains only what the host itself adds.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::OnceLock;

use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response, SchemaObject, StatusCode};
use aide::operation::{OperationInput, OperationOutput, ParamLocation, add_parameters, parameters_from_schema};
use axum::response::IntoResponse;
use indexmap::IndexMap;
use schemars::JsonSchema;
use serde_json::Value;

use crate::app::{ApiBody, ApiQuery, Caller, Team};
use crate::error::ApiError;

/// The names of the two ways to present a team key, in `components.securitySchemes`.
pub const API_KEY_SCHEME: &str = "ApiKey";
pub const BEARER_SCHEME: &str = "Bearer";

/// The document as served: generated once, the first time it is asked for.
pub fn document() -> &'static bytes::Bytes {
    static DOCUMENT: OnceLock<bytes::Bytes> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        let (_, api) = crate::api::described();
        bytes::Bytes::from(serde_json::to_vec(&api).expect("an OpenAPI document serializes"))
    })
}

/// `GET /v1/openapi.json`: public, like the API's shape it describes (no key is needed to
/// learn what the routes are; every route it describes still needs one).
pub async fn serve() -> Passed<OpenApiDocument> {
    Passed::new(([("content-type", "application/json")], document().clone()).into_response())
}

/// Document-level facts: title, version, the security schemes, and where errors are described.
pub fn describe_api(api: aide::transform::TransformOpenApi<'_>) -> aide::transform::TransformOpenApi<'_> {
    use aide::openapi::{ApiKeyLocation, SecurityScheme};
    api.title("pome control plane")
        .version(env!("CARGO_PKG_VERSION"))
        .description(
            "The `/v1` control plane of a pome server: sandboxes of twins (also spelled sessions), \
             their forks, worlds and seeds, runs, tasks, keys and usage. Every route but this \
             document needs a team key, as `X-API-KEY: pme_…` or `Authorization: Bearer pme_…`. \
             Every error is `{\"error\": {\"type\", \"message\", \"details\"?, \"request_id\"}}` \
             (the `Error` schema); its status follows `error.type`.",
        )
        .security_scheme(
            API_KEY_SCHEME,
            SecurityScheme::ApiKey {
                location: ApiKeyLocation::Header,
                name: "X-API-KEY".into(),
                description: Some("A team key, `pme_…` (`pome serve` prints the first; `POST /v1/keys` makes more).".into()),
                extensions: Default::default(),
            },
        )
        .security_scheme(
            BEARER_SCHEME,
            SecurityScheme::Http {
                scheme: "bearer".into(),
                bearer_format: Some("pme_…".into()),
                description: Some("The same team key as `Authorization: Bearer pme_…`.".into()),
                extensions: Default::default(),
            },
        )
}

// --- answers ---------------------------------------------------------------------------------

/// A JSON answer with status `S`, documented as `T`. The operations build `Value`s (the MCP
/// door renders the same ones); `T` is the shape the REST door promises for them.
pub struct Answer<T, const S: u16 = 200>(pub Value, PhantomData<T>);

impl<T, const S: u16> Answer<T, S> {
    pub fn new(body: Value) -> Answer<T, S> {
        Answer(body, PhantomData)
    }
}

impl<T, const S: u16> IntoResponse for Answer<T, S> {
    fn into_response(self) -> axum::response::Response {
        let status = axum::http::StatusCode::from_u16(S).expect("a valid status");
        (status, axum::Json(self.0)).into_response()
    }
}

impl<T: JsonSchema, const S: u16> OperationOutput for Answer<T, S> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<Response> {
        axum::Json::<T>::operation_response(ctx, operation)
    }

    fn inferred_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
        Self::operation_response(ctx, operation).map(|r| (Some(StatusCode::Code(S)), r)).into_iter().collect()
    }
}

/// A create that may repeat an earlier one: `201` with a new `T`, or `200` with the one an
/// earlier create with the same idempotency key made.
pub struct Created<T>(pub axum::http::StatusCode, pub Value, PhantomData<T>);

impl<T> Created<T> {
    pub fn new(status: axum::http::StatusCode, body: Value) -> Created<T> {
        Created(status, body, PhantomData)
    }
}

impl<T> IntoResponse for Created<T> {
    fn into_response(self) -> axum::response::Response {
        (self.0, axum::Json(self.1)).into_response()
    }
}

impl<T: JsonSchema> OperationOutput for Created<T> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<Response> {
        axum::Json::<T>::operation_response(ctx, operation)
    }

    fn inferred_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
        let Some(r) = Self::operation_response(ctx, operation) else { return Vec::new() };
        let mut repeated = r.clone();
        repeated.description = "The object an earlier request with the same idempotency key created.".into();
        vec![(Some(StatusCode::Code(201)), r), (Some(StatusCode::Code(200)), repeated)]
    }
}

/// A body the server streams or passes through as it is (a run, a twin's world, a report),
/// documented as `T` with media type `M` ([`JsonMedia`] or [`Markdown`]).
pub struct Passed<T, M = JsonMedia>(pub axum::response::Response, PhantomData<(T, M)>);

impl<T, M> Passed<T, M> {
    pub fn new(response: axum::response::Response) -> Passed<T, M> {
        Passed(response, PhantomData)
    }
}

impl<T, M> IntoResponse for Passed<T, M> {
    fn into_response(self) -> axum::response::Response {
        self.0
    }
}

/// The media type of a [`Passed`] body.
pub trait Media {
    const TYPE: &'static str;
}
pub struct JsonMedia;
impl Media for JsonMedia {
    const TYPE: &'static str = "application/json";
}
pub struct Markdown;
impl Media for Markdown {
    const TYPE: &'static str = "text/markdown";
}

impl<T: JsonSchema, M: Media> OperationOutput for Passed<T, M> {
    type Inner = T;

    fn operation_response(ctx: &mut GenContext, _operation: &mut Operation) -> Option<Response> {
        let json_schema = ctx.schema.subschema_for::<T>();
        let description = ctx.resolve_schema(&json_schema).get("description").and_then(Value::as_str).unwrap_or_default().to_string();
        let media = MediaType { schema: Some(SchemaObject { json_schema, example: None, external_docs: None }), ..Default::default() };
        Some(Response { description, content: IndexMap::from_iter([(M::TYPE.to_string(), media)]), ..Default::default() })
    }

    fn inferred_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
        Self::operation_response(ctx, operation).map(|r| (Some(StatusCode::Code(200)), r)).into_iter().collect()
    }
}

/// Every error, as the `default` response of every operation: one envelope, whose status
/// follows its `type`.
impl OperationOutput for ApiError {
    type Inner = ErrorEnvelope;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<Response> {
        let mut r = axum::Json::<ErrorEnvelope>::operation_response(ctx, operation)?;
        r.description = "An error, in the one envelope every error of the API has; the status follows `error.type`.".into();
        Some(r)
    }

    fn inferred_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
        Self::operation_response(ctx, operation).map(|r| (None, r)).into_iter().collect()
    }
}

fn error_response(ctx: &mut GenContext, operation: &mut Operation, status: u16, why: &str) -> (Option<StatusCode>, Response) {
    let mut r = ApiError::operation_response(ctx, operation).expect("the error envelope is described");
    r.description = why.into();
    (Some(StatusCode::Code(status)), r)
}

// --- inputs ----------------------------------------------------------------------------------

/// A route that takes a team key: either header, refused before the body is read.
fn keyed(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
    for scheme in [API_KEY_SCHEME, BEARER_SCHEME] {
        let requirement = IndexMap::from_iter([(scheme.to_string(), Vec::new())]);
        if !operation.security.contains(&requirement) {
            operation.security.push(requirement);
        }
    }
    vec![
        error_response(ctx, operation, 401, "No team key, or one that is not live (`invalid_auth`)."),
        error_response(ctx, operation, 429, "Too many failed authentications from this address, or a per-team limit reached (`rate_limited`, with `Retry-After`)."),
    ]
}

impl OperationInput for Team {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        keyed(ctx, operation);
    }
    fn inferred_early_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
        keyed(ctx, operation)
    }
}

impl OperationInput for Caller {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        keyed(ctx, operation);
    }
    fn inferred_early_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
        keyed(ctx, operation)
    }
}

impl<T: JsonSchema> OperationInput for ApiQuery<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        let schema = ctx.schema.subschema_for::<T>();
        let params = parameters_from_schema(ctx, schema, ParamLocation::Query);
        add_parameters(ctx, operation, params);
    }
}

/// A raw body: the route's transform names what it holds (`api::routes`).
impl OperationInput for ApiBody {}

impl<T: JsonSchema> OperationInput for crate::api::ApiJson<T> {
    fn operation_input(ctx: &mut GenContext, operation: &mut Operation) {
        <axum::Json<T> as OperationInput>::operation_input(ctx, operation);
    }
    fn inferred_early_responses(ctx: &mut GenContext, operation: &mut Operation) -> Vec<(Option<StatusCode>, Response)> {
        vec![
            error_response(ctx, operation, 400, "The body is not JSON (`validation_failed`)."),
            error_response(ctx, operation, 413, "The body is over the server's seed limit, `--seed-mib` (`validation_failed`)."),
            error_response(ctx, operation, 422, "The body does not fit this route, or the operation refused it (`validation_failed`, naming the field)."),
        ]
    }
}

/// The id in a route's path: a sandbox's (`ses_…`), a run's (`run_…`), a key's or a task's.
#[derive(serde::Deserialize, JsonSchema)]
pub struct IdPath {
    /// The object's id.
    pub id: String,
}

// --- the answers' shapes ---------------------------------------------------------------------

/// A schema written out, for the bodies that are not a Rust type of the server's: this
/// document itself, a twin's world, a markdown report.
macro_rules! open_schema {
    ($name:ident, $schema:tt) => {
        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

pub struct OpenApiDocument;
open_schema!(OpenApiDocument, {
    "description": "This document: an OpenAPI 3.1 description of `/v1`.",
    "type": "object",
    "required": ["openapi", "info", "paths"],
    "properties": {"openapi": {"type": "string", "pattern": "^3\\.1\\."}}
});

/// Every error of the API: `{"error": {…}}`.
#[derive(JsonSchema)]
#[schemars(rename = "Error")]
#[allow(dead_code)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

/// What went wrong.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ErrorBody {
    /// The kind of error; the HTTP status follows it (`invalid_auth` 401, `forbidden` 403,
    /// `quota_exceeded` 402, `validation_failed` 422 (400 for a body that is not JSON, 413 for
    /// one too large), `not_found` 404, `session_expired` 410, `conflict` 409,
    /// `rate_limited` 429, `server_busy` 503, `internal_error` 500).
    #[serde(rename = "type")]
    pub kind: crate::error::ErrorType,
    /// What happened and what to do about it, for a person.
    pub message: String,
    /// Machine-readable facts about the error (the field, the twin, a limit…); its shape
    /// depends on the error.
    pub details: Option<Value>,
    /// The request's id, as in the server's log (absent only on the listener's own refusal
    /// at its connection cap, before a request exists).
    pub request_id: Option<String>,
}

/// A list of objects.
#[derive(JsonSchema)]
#[schemars(rename = "{T}List")]
#[allow(dead_code)]
pub struct List<T> {
    #[schemars(extend("const" = "list"))]
    pub object: String,
    pub data: Vec<T>,
}

/// A page of a longer list: `next_cursor` is the `starting_after` of the next page.
#[derive(JsonSchema)]
#[schemars(rename = "{T}Page")]
#[allow(dead_code)]
pub struct Page<T> {
    #[schemars(extend("const" = "list"))]
    pub object: String,
    pub data: Vec<T>,
    /// Whether another page follows.
    pub has_more: bool,
    /// The id to pass as `starting_after` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A sandbox: one to three twins, their URLs, and (to its team, on create, show and fork)
/// the agent's token and environment.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Sandbox {
    /// `ses_…`.
    pub id: String,
    /// The same id, by its older name.
    pub session_id: String,
    #[schemars(extend("const" = "sandbox"))]
    pub object: String,
    #[schemars(extend("const" = "open"))]
    pub state: String,
    /// Its twins, primary first.
    pub twins: Vec<String>,
    pub primary_twin: Option<String>,
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// When its lifetime ends.
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: String,
    /// When it ends unless a twin call or a heartbeat comes first.
    #[schemars(extend("format" = "date-time"))]
    pub idle_expires_at: String,
    /// Each twin's URLs, by twin name.
    pub per_twin: BTreeMap<String, TwinUrls>,
    pub task_id: Option<String>,
    pub task_version: Option<String>,
    pub group_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent_version: Option<String>,
    /// Where a fork began; null for a sandbox that is not one.
    pub forked_from: Option<ForkedFrom>,
    /// The agent's bearer token for the twins (create, show and fork; never in a listing,
    /// nor for a sandbox restored after a restart until its agent presents it).
    pub agent_token: Option<String>,
    /// The environment an agent gets for this sandbox (`POME_*` and what each twin declares).
    pub agent_env: Option<BTreeMap<String, String>>,
}

/// Where a twin of a sandbox is reached.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct TwinUrls {
    /// The URL to give the vendor's client library.
    pub api_url: String,
    /// `…/s/<sandbox>/<twin>`.
    pub base_url: String,
    /// The tape.
    pub events_url: String,
    /// The world now.
    pub state_url: String,
    pub health_url: String,
    /// The twin's MCP door.
    pub mcp_url: String,
    /// The twin at the root of a host name of its own (with `--public-host`).
    pub host_url: Option<String>,
    /// The agent token in the vendor's key shape, for twins whose clients expect one.
    pub api_key: Option<String>,
}

/// The sandbox or run a fork began from, and the tape position per twin.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct ForkedFrom {
    pub sandbox_id: Option<String>,
    pub run_id: Option<String>,
    /// The world after that many rows of each twin's tape.
    pub at: BTreeMap<String, u64>,
}

/// A heartbeat's answer: the sandbox's clocks after it.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Heartbeat {
    pub id: String,
    pub session_id: String,
    #[schemars(extend("const" = "open"))]
    pub state: String,
    #[schemars(extend("format" = "date-time"))]
    pub idle_expires_at: String,
    #[schemars(extend("format" = "date-time"))]
    pub expires_at: String,
}

/// A stopped sandbox (its run discarded).
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Stopped {
    pub id: String,
    pub session_id: String,
    #[schemars(extend("const" = "closed"))]
    pub state: String,
    #[schemars(extend("const" = true))]
    pub discarded: bool,
}

/// A finalized sandbox: its run, and the verdict when it had a task.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Finalized {
    /// The run it became (`run_…`).
    pub run_id: String,
    /// The sandbox's id.
    pub id: String,
    pub session_id: String,
    #[schemars(extend("const" = "closed"))]
    pub state: String,
    /// `pass`, `fail`, `incomplete`; null when there was no task to grade against.
    pub verdict: Option<String>,
    pub score: Option<u32>,
    pub pass_threshold: Option<u32>,
    /// Each criterion's result with its evidence (shaped by the criterion's kind).
    pub criteria_results: Vec<Value>,
    /// Rows on all its tapes.
    pub tape_rows: u64,
}

/// The team's concurrency use.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Usage {
    /// Open sandboxes.
    pub sessions_used: u64,
    /// How many may be open at once.
    pub sessions_quota: u64,
    pub sessions_remaining: u64,
}

/// A new key: the key itself is in this answer and nowhere else.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct NewKey {
    pub id: String,
    /// `pme_…`.
    pub key: String,
    /// Its first characters, to recognise it by in listings.
    pub prefix: String,
    #[schemars(extend("const" = "api_key"))]
    pub object: String,
}

/// A revoked key.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Revoked {
    pub id: String,
    #[schemars(extend("const" = true))]
    pub revoked: bool,
}

/// A run as listed, and a key as listed: the storage types themselves, so the description
/// cannot drift from what is served.
pub use crate::storage::{KeyInfo as Key, RunSummary};

/// A whole run as stored: its twins' tapes, seed and final worlds, deliveries and grading.
/// Its twins' worlds and tape rows are each twin's own JSON, so only the run's frame is
/// constrained here.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
#[allow(dead_code)]
pub struct Run {
    pub id: String,
    #[schemars(extend("const" = "run"))]
    pub object: String,
    pub session_id: String,
    pub twins: Vec<String>,
    pub verdict: Option<String>,
    /// Per twin: its tape, initial and final state, diff, deliveries and seed.
    pub per_twin: BTreeMap<String, Value>,
}

pub struct World;
open_schema!(World, {
    "description": "A twin's world as its state export wrote it: the twin's own JSON, any shape."
});

/// What changed in a twin's world between two positions of its tape.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Diff {
    #[schemars(extend("const" = "diff"))]
    pub object: String,
    pub twin: String,
    pub from: u64,
    pub to: u64,
    /// The changes, in the shape of a run's `per_twin.<twin>.diff`.
    pub diff: Vec<Value>,
}

/// A twin's world as a seed document that boots exactly that world: the twin's own format
/// (SDK twins write `{"_meta": {…}, "_world": …}`), with `_meta.saved_from` added by the host.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
#[allow(dead_code)]
pub struct SeedDocument {
    #[serde(rename = "_meta")]
    pub meta: SeedMeta,
}

/// The seed's `_meta`: whatever the twin wrote, and where it was saved from.
#[derive(JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
#[allow(dead_code)]
pub struct SeedMeta {
    pub saved_from: SavedFrom,
}

/// The sandbox or run, twin and row a seed was written from.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct SavedFrom {
    pub sandbox_id: Option<String>,
    pub run_id: Option<String>,
    pub twin: String,
    /// The world after this many rows.
    pub at: u64,
}

/// A named seed, stored.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct SeedSaved {
    pub name: String,
    pub twin: String,
    /// Its size as stored.
    pub bytes: u64,
}

/// A named seed as listed.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct SeedListed {
    pub name: String,
    pub twin: String,
}

/// A twin this server hosts.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Twin {
    pub name: String,
    /// Where it was loaded from (`embedded` or a file path).
    pub origin: String,
    /// What the twin's `describe()` declared, as the twin sent it.
    pub description: Value,
}

/// A task file (`POST /v1/tasks`, `POST /v1/tasks/validate`): its markdown, and its sidecar
/// seed when it has one.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct TaskSource {
    /// The id to store it under (1–128 letters, digits, `-`, `_`, `.`); default: derived
    /// from its markdown. (`POST /v1/tasks` only.)
    pub id: Option<String>,
    /// The markdown.
    pub source: Option<String>,
    /// The markdown, base64-encoded (instead of `source`).
    pub source_base64: Option<String>,
    /// The same, by its older name.
    pub task_source: Option<String>,
    /// The task's sidecar seed (`<task>.seed.json`).
    pub seed: Option<Value>,
    /// The file name errors are reported against (`POST /v1/tasks/validate` only).
    pub file: Option<String>,
}

/// A task, with each criterion's binding.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Task {
    pub id: String,
    #[schemars(extend("const" = "task"))]
    pub object: String,
    pub title: String,
    /// Primary first.
    pub twins: Vec<String>,
    /// Seconds the agent may run.
    pub timeout: u64,
    /// Trials per `pome run`.
    pub runs: u64,
    /// Score (0–100) at or above which the verdict is `pass`.
    pub pass_threshold: u64,
    pub class: Option<String>,
    /// Each criterion: its index, line, kind, twin, text and binding.
    pub criteria: Vec<Value>,
    /// How many `[code]` criteria bind to no declared check.
    pub unbound: u64,
    /// The stored version (`POST /v1/tasks`).
    pub version: Option<String>,
    /// Its markdown (`GET /v1/tasks/{id}`).
    pub source: Option<String>,
}

/// A task checked without being stored.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub struct Validation {
    pub valid: bool,
    /// The task as parsed (absent when it does not parse).
    pub task: Option<Task>,
    pub errors: Vec<String>,
}

pub struct Report;
open_schema!(Report, {
    "description": "A run as a markdown report: verdict, criteria with their evidence, each twin's calls and state changes.",
    "type": "string"
});

#[cfg(test)]
mod tests {
    use serde_json::Value;

    fn doc() -> Value {
        serde_json::from_slice(super::document()).unwrap()
    }

    /// The error kinds described are exactly the ones `ApiError` sends.
    #[test]
    fn error_types_are_the_servers() {
        use crate::error::ErrorType::*;
        let sent: std::collections::BTreeSet<&str> =
            [InvalidAuth, Forbidden, QuotaExceeded, ValidationFailed, NotFound, SessionExpired, Conflict, RateLimited, ServerBusy, InternalError].iter().map(|t| t.as_str()).collect();
        let schema = &doc()["components"]["schemas"]["ErrorType"];
        let mut described = std::collections::BTreeSet::new();
        for alt in schema["oneOf"].as_array().or(Some(&vec![schema.clone()])).unwrap() {
            described.extend(alt["enum"].as_array().into_iter().flatten().chain(alt.get("const")).filter_map(Value::as_str).map(String::from));
        }
        assert_eq!(described.iter().map(String::as_str).collect::<std::collections::BTreeSet<_>>(), sent);
    }

    /// Built from the routes: 3.1, every operation named, both spellings of the sandbox routes.
    #[test]
    fn generated_from_the_routes() {
        let doc = doc();
        assert_eq!(doc["openapi"], "3.1.0");
        let paths = doc["paths"].as_object().unwrap();
        for p in ["/v1/sandboxes/{id}/fork", "/v1/sessions/{id}/fork", "/v1/openapi.json", "/v1/tasks/{id}"] {
            assert!(paths.contains_key(p), "{p}");
        }
        let ops: Vec<&Value> = paths.values().flat_map(|i| i.as_object().unwrap().values()).collect();
        assert!(ops.iter().all(|o| o["operationId"].is_string()));
        assert_eq!(doc["paths"]["/v1/sandboxes"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/CreateRequest");
    }
}
