//! The guest SDK every Rust twin is built on.
//!
//! A twin crate is mostly its domain: a world type (`Serialize + Deserialize`), a seed
//! parser, and a [`Router`] of named actions. This crate supplies the rest: HTTP request and
//! response types, path routing with parameters, JSON/form bodies, query strings, pagination
//! helpers, change recording for the tape, snapshot/restore through postcard, and the glue
//! that exports it all as the `pome:twin` WIT world (see `wit/v0.3/twin.wit`).
//!
//! ```ignore
//! pome_twin_sdk::export_twin!(MyWorld);
//! ```
//!
//! Handlers take `(&mut World, &mut Call) -> Response`. They are plain Rust, so twin crates
//! test them natively with [`Call::new`] and no WebAssembly at all.

pub mod call;
pub mod checks;
pub mod describe;
pub mod generation;
pub mod http;
pub mod mcp;
pub mod page;
pub mod router;
pub mod seed;
pub mod time;
pub mod world_seed;

#[doc(hidden)]
pub mod alloc;
#[doc(hidden)]
pub mod glue;
#[doc(hidden)]
pub mod mem;

pub use call::{Call, Change, Delivery};
pub use describe::{ActionDecl, CheckDecl, Credential, Description, Fidelity, ParamKind, RouteDecl, ToolBody, ToolDecl};
pub use pome_contract::{CheckWorld, Evidence, Outcome, Params, StateChange, TapeRow};
pub use http::{Auth, HostError, HostErrorKind, Method, Request, Response};
pub use router::Router;
pub use serde_json::{Value, json};

/// A twin's world: the whole state of one replica, owned by the SDK between calls.
///
/// The same seed and the same requests must give the same bytes, so nothing a twin answers,
/// records or snapshots may follow a hashed collection's iteration order. Keep collections
/// ordered (`BTreeMap`, `Vec`); a hashed one is for lookups only, with a hasher that has no
/// random seed, and written out sorted (as Stripe's object map is).
pub trait Twin: serde::Serialize + serde::de::DeserializeOwned + Sized + 'static {
    /// The URL segment the twin is served under, e.g. `github`.
    const NAME: &'static str;
    /// The twin's own version, reported by `describe`.
    const VERSION: &'static str;
    /// What a client appends to the twin's base URL to get its API root, when the real API
    /// lives under a prefix (Slack: `/api/`, Linear: `/graphql`). Reported by `describe`
    /// and used by the host for the sandbox's `api_url`.
    const CLIENT_BASE_PATH: &'static str = "";

    /// Build the world from a seed; `None` means the default world. Errors name the offending
    /// path in the seed (`repositories[0].issues[2].state: expected "open" or "closed"`).
    fn init(seed: Option<Value>) -> Result<Self, String>;

    /// The router holding every action this twin serves. Built once.
    fn router() -> &'static Router<Self>;

    /// Answer a request whose route no action matches, in the API's own error shape. The
    /// SDK has already marked the call unsupported.
    fn unsupported(call: &Call) -> Response;

    /// Answer a request the host refused (no or wrong credential) or an error the host raises,
    /// in the API's own error shape.
    fn auth_error(call: &Call) -> Response;
    fn host_error(err: &HostError) -> Response;

    /// Whether a request that carries no valid credential may still reach the router. For
    /// routes that are their own proof, like the pre-signed upload URL Slack hands out
    /// (`files.getUploadURLExternal`), which clients call without the token. Default: none.
    fn serves_without_auth(_req: &Request) -> bool {
        false
    }

    /// The world as canonical JSON for grading. Defaults to the serde form of the world.
    fn state(&self) -> Value {
        serde_json::to_value(self).expect("a twin world serialises to JSON")
    }

    /// The world as a seed document that [`Twin::init`]'s caller boots back into this same
    /// world (contract 0.3.0's `export-seed`). By default the world's own serde form under
    /// `_world` (see [`world_seed`]), which every twin can write and read exactly.
    fn export_seed(&self) -> Result<String, String> {
        world_seed::write(self)
    }

    /// Tool names agents and tasks use for this twin's actions (`create_issue` →
    /// `issues.create`), so a criterion like `` `create_issue` was called `` can name either.
    /// Reported by `describe`; empty by default.
    fn tool_aliases() -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }

    /// Checks this twin declares for graders (see the grading docs). Empty by default.
    /// Tape-level checks (a tool was or was never called, no unsupported endpoint) are the
    /// host's, for every twin: do not declare them.
    fn checks() -> Vec<CheckDecl> {
        Vec::new()
    }

    /// Decide one declared check over a world (seed state, state, tape), saying why and
    /// pointing at the evidence. An error means it could not be decided (a parameter that
    /// names nothing), which grading reports as `errored`, never as a pass.
    fn evaluate_check(id: &str, _params: &Params, _world: &CheckWorld<'_>) -> Result<Outcome, String> {
        Err(format!("the {} twin declares no predicate for check `{id}`", Self::NAME))
    }

    /// The forms of the agent token the host accepts for this twin: the ones its API's
    /// official clients send. Default: `Authorization: Bearer`.
    fn credentials() -> Vec<Credential> {
        vec![Credential::Bearer]
    }

    /// Environment variables a run exports to the agent for this twin, besides the host's own
    /// `POME_<TWIN>_REST_URL` and `POME_AUTH_TOKEN`. Values are templates: `{api_url}`,
    /// `{base_url}`, `{token}`, `{sandbox_id}`.
    fn agent_env() -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }

    /// The actions this twin serves, with summaries and input schemas (for tools generated
    /// from them). Defaults to one per routed action, its path parameters as input.
    fn actions() -> Vec<ActionDecl> {
        describe::actions_from_surface(&Self::router().surface())
    }

    /// MCP tools named as the vendor's own MCP server names them, each mapped onto one of
    /// this twin's routes. Every action no declared tool reaches is offered as a tool too,
    /// named after the action. Empty by default.
    fn tools() -> Vec<ToolDecl> {
        Vec::new()
    }

    /// How tools generated from actions send their fields: JSON by default; `Form` for an
    /// API that reads urlencoded bodies only.
    fn tool_body() -> ToolBody {
        ToolBody::Json
    }
}

/// Export `$world` (a [`Twin`]) as the `pome:twin` component world.
#[macro_export]
macro_rules! export_twin {
    ($world:ty) => {
        #[allow(dead_code)]
        struct __PomeTwinExport;
        impl $crate::glue::bindings::exports::pome::twin::twin::Guest for __PomeTwinExport {
            fn describe() -> String {
                $crate::glue::describe::<$world>()
            }
            fn init(seed: String) -> Result<(), String> {
                $crate::glue::init::<$world>(seed)
            }
            fn handle(
                req: $crate::glue::bindings::exports::pome::twin::twin::HttpRequest,
            ) -> $crate::glue::bindings::exports::pome::twin::twin::HttpResponse {
                $crate::glue::handle::<$world>(req)
            }
            fn render_error(
                err: $crate::glue::bindings::exports::pome::twin::twin::HostError,
            ) -> $crate::glue::bindings::exports::pome::twin::twin::HttpResponse {
                $crate::glue::render_error::<$world>(err)
            }
            fn state() -> String {
                $crate::glue::state::<$world>()
            }
            fn snapshot() -> Vec<u8> {
                $crate::glue::snapshot::<$world>()
            }
            fn restore(bytes: Vec<u8>) -> Result<(), String> {
                $crate::glue::restore::<$world>(bytes)
            }
            fn export_seed() -> Result<String, String> {
                $crate::glue::export_seed::<$world>()
            }
            fn evaluate_checks(
                world: $crate::glue::bindings::exports::pome::twin::twin::CheckWorld,
                calls: ::std::vec::Vec<$crate::glue::bindings::exports::pome::twin::twin::CheckCall>,
            ) -> ::std::vec::Vec<Result<$crate::glue::bindings::exports::pome::twin::twin::CheckOutcome, String>> {
                $crate::glue::evaluate_checks::<$world>(world, calls)
            }
        }
        // Only the WebAssembly build exports the world: the export names (`pome:twin/…`)
        // are not valid symbols for a native linker, and native builds are for tests.
        #[cfg(target_arch = "wasm32")]
        $crate::glue::bindings::__export_guest!(__PomeTwinExport with_types_in $crate::glue::bindings);
    };
}
