//! The Gmail twin: the Gmail API (`/gmail/v1/users/{userId}/…`) over real RFC 5322 messages,
//! with threads, labels, drafts, history, search and settings, faithful enough that
//! google-api-python-client and `@googleapis/gmail` cannot tell it from Google.
//!
//! Modules: [`model`] (the world and its index), [`seed`] (strict seeds, default world),
//! [`mime`] (parsing and building messages), [`search`] (the `q` language), [`api`] (messages,
//! threads, labels, drafts, history), [`settings`], [`transport`] (uploads, batch, discovery),
//! [`push`] (`users.watch` notifications through Pub/Sub push envelopes),
//! [`checks`] (the vocabulary graders bind criteria to).

pub mod api;
pub mod checks;
pub mod fields;
pub mod limits;
pub mod mcp;
pub mod mime;
pub mod model;
pub mod push;
pub mod search;
pub mod seed;
pub mod settings;
pub mod tools;
pub mod transport;

use std::sync::OnceLock;

use pome_twin_sdk::{
    Call, CheckDecl, CheckWorld, Fidelity, HostError, HostErrorKind, Method, Outcome, Params, Request, Response, Router, Twin, Value, json,
};

pub use model::World;

/// An error in Google's shape: `{"error": {code, message, status, errors: [{domain, reason, message}]}}`.
pub fn gerr(code: u16, reason: &str, message: &str) -> Response {
    let status = match (code, reason) {
        (400, "failedPrecondition") => "FAILED_PRECONDITION",
        (400, _) => "INVALID_ARGUMENT",
        (401, _) => "UNAUTHENTICATED",
        (403, _) => "PERMISSION_DENIED",
        (404, _) => "NOT_FOUND",
        (409, "alreadyExists") => "ALREADY_EXISTS",
        (409, _) => "ABORTED",
        (413, _) => "INVALID_ARGUMENT",
        (429, _) => "RESOURCE_EXHAUSTED",
        (501, _) => "UNIMPLEMENTED",
        _ => "INTERNAL",
    };
    Response::json(
        code,
        &json!({"error": {"code": code, "message": message, "errors": [{"message": message, "domain": "global", "reason": reason}], "status": status}}),
    )
}

/// A successful answer, cut down to the request's `fields` selection when it has one.
pub fn ok(v: &Value) -> Response {
    match fields::apply_current(v) {
        Some(cut) => Response::json(200, &cut),
        None => Response::json(200, v),
    }
}

pub fn ok_empty() -> Response {
    Response::empty(204)
}

/// A seeded rate-limit fault, when one applies to this call.
pub fn fault(w: &mut World, call: &Call) -> Option<Response> {
    let action = call.action.as_deref().unwrap_or("");
    let f = w.faults.iter_mut().find(|f| f.method == "*" || f.method == action)?;
    f.seen += 1;
    let hit = f.seen > f.after && f.seen <= f.after.saturating_add(f.count);
    hit.then(|| {
        gerr(429, "rateLimitExceeded", "User-rate limit exceeded. Retry after a moment.").with_header("retry-after", f.retry_after.to_string())
    })
}

/// A route's handler, followed by the push notifications its changes call for (see [`push`]).
macro_rules! h {
    ($f:path) => {
        |w: &mut World, c: &mut Call| push::after($f(w, c), w, c)
    };
}

/// Every method this twin serves: (method, path under `/gmail/v1/users/{userId}`, action).
pub const ROUTES: &[(Method, &str, &str, pome_twin_sdk::router::Handler<World>)] = {
    use Method::{Delete as D, Get as G, Patch as P, Post as O, Put as U};
    use api as a;
    use settings as s;
    &[
        (G, "/profile", "getProfile", h!(a::get_profile)),
        (O, "/watch", "watch", h!(a::watch)),
        (O, "/stop", "stop", h!(a::stop)),
        (G, "/messages", "messages.list", h!(a::messages_list)),
        (G, "/messages/{id}", "messages.get", h!(a::messages_get)),
        (O, "/messages/send", "messages.send", h!(a::messages_send)),
        (O, "/messages", "messages.insert", h!(a::messages_insert)),
        (O, "/messages/import", "messages.import", h!(a::messages_import)),
        (O, "/messages/{id}/modify", "messages.modify", h!(a::messages_modify)),
        (O, "/messages/batchModify", "messages.batchModify", h!(a::messages_batch_modify)),
        (O, "/messages/batchDelete", "messages.batchDelete", h!(a::messages_batch_delete)),
        (O, "/messages/{id}/trash", "messages.trash", h!(a::messages_trash)),
        (O, "/messages/{id}/untrash", "messages.untrash", h!(a::messages_untrash)),
        (D, "/messages/{id}", "messages.delete", h!(a::messages_delete)),
        (G, "/messages/{messageId}/attachments/{id}", "messages.attachments.get", h!(a::attachments_get)),
        (G, "/threads", "threads.list", h!(a::threads_list)),
        (G, "/threads/{id}", "threads.get", h!(a::threads_get)),
        (O, "/threads/{id}/modify", "threads.modify", h!(a::threads_modify)),
        (O, "/threads/{id}/trash", "threads.trash", h!(a::threads_trash)),
        (O, "/threads/{id}/untrash", "threads.untrash", h!(a::threads_untrash)),
        (D, "/threads/{id}", "threads.delete", h!(a::threads_delete)),
        (G, "/labels", "labels.list", h!(a::labels_list)),
        (G, "/labels/{id}", "labels.get", h!(a::labels_get)),
        (O, "/labels", "labels.create", h!(a::labels_create)),
        (U, "/labels/{id}", "labels.update", h!(a::labels_update)),
        (P, "/labels/{id}", "labels.patch", h!(a::labels_patch)),
        (D, "/labels/{id}", "labels.delete", h!(a::labels_delete)),
        (G, "/drafts", "drafts.list", h!(a::drafts_list)),
        (G, "/drafts/{id}", "drafts.get", h!(a::drafts_get)),
        (O, "/drafts", "drafts.create", h!(a::drafts_create)),
        (U, "/drafts/{id}", "drafts.update", h!(a::drafts_update)),
        (O, "/drafts/send", "drafts.send", h!(a::drafts_send)),
        (D, "/drafts/{id}", "drafts.delete", h!(a::drafts_delete)),
        (G, "/history", "history.list", h!(a::history_list)),
        (G, "/settings/autoForwarding", "settings.getAutoForwarding", h!(s::get_auto_forwarding)),
        (U, "/settings/autoForwarding", "settings.updateAutoForwarding", h!(s::update_auto_forwarding)),
        (G, "/settings/imap", "settings.getImap", h!(s::get_imap)),
        (U, "/settings/imap", "settings.updateImap", h!(s::update_imap)),
        (G, "/settings/pop", "settings.getPop", h!(s::get_pop)),
        (U, "/settings/pop", "settings.updatePop", h!(s::update_pop)),
        (G, "/settings/language", "settings.getLanguage", h!(s::get_language)),
        (U, "/settings/language", "settings.updateLanguage", h!(s::update_language)),
        (G, "/settings/vacation", "settings.getVacation", h!(s::get_vacation)),
        (U, "/settings/vacation", "settings.updateVacation", h!(s::update_vacation)),
        (G, "/settings/filters", "settings.filters.list", h!(s::filters_list)),
        (G, "/settings/filters/{id}", "settings.filters.get", h!(s::filters_get)),
        (O, "/settings/filters", "settings.filters.create", h!(s::filters_create)),
        (D, "/settings/filters/{id}", "settings.filters.delete", h!(s::filters_delete)),
        (G, "/settings/forwardingAddresses", "settings.forwardingAddresses.list", h!(s::forwarding_list)),
        (G, "/settings/forwardingAddresses/{forwardingEmail}", "settings.forwardingAddresses.get", h!(s::forwarding_get)),
        (O, "/settings/forwardingAddresses", "settings.forwardingAddresses.create", h!(s::forwarding_create)),
        (D, "/settings/forwardingAddresses/{forwardingEmail}", "settings.forwardingAddresses.delete", h!(s::forwarding_delete)),
        (G, "/settings/sendAs", "settings.sendAs.list", h!(s::send_as_list)),
        (G, "/settings/sendAs/{sendAsEmail}", "settings.sendAs.get", h!(s::send_as_get)),
        (O, "/settings/sendAs", "settings.sendAs.create", h!(s::send_as_create)),
        (U, "/settings/sendAs/{sendAsEmail}", "settings.sendAs.update", h!(s::send_as_update)),
        (P, "/settings/sendAs/{sendAsEmail}", "settings.sendAs.patch", h!(s::send_as_patch)),
        (D, "/settings/sendAs/{sendAsEmail}", "settings.sendAs.delete", h!(s::send_as_delete)),
        (O, "/settings/sendAs/{sendAsEmail}/verify", "settings.sendAs.verify", h!(s::send_as_verify)),
        (G, "/settings/delegates", "settings.delegates.list", h!(s::delegates_list)),
        (G, "/settings/delegates/{delegateEmail}", "settings.delegates.get", h!(s::delegates_get)),
        (O, "/settings/delegates", "settings.delegates.create", h!(s::delegates_create)),
        (D, "/settings/delegates/{delegateEmail}", "settings.delegates.delete", h!(s::delegates_delete)),
        (G, "/settings/sendAs/{sendAsEmail}/smimeInfo", "settings.sendAs.smimeInfo.list", h!(s::smime_list)),
        (G, "/settings/sendAs/{sendAsEmail}/smimeInfo/{id}", "settings.sendAs.smimeInfo.get", h!(s::smime_get)),
        (O, "/settings/sendAs/{sendAsEmail}/smimeInfo", "settings.sendAs.smimeInfo.insert", h!(s::smime_insert)),
        (D, "/settings/sendAs/{sendAsEmail}/smimeInfo/{id}", "settings.sendAs.smimeInfo.delete", h!(s::smime_delete)),
        (O, "/settings/sendAs/{sendAsEmail}/smimeInfo/{id}/setDefault", "settings.sendAs.smimeInfo.setDefault", h!(s::smime_set_default)),
        (G, "/settings/cse/keypairs", "settings.cse.keypairs.list", h!(s::cse_keypairs_list)),
        (G, "/settings/cse/keypairs/{keyPairId}", "settings.cse.keypairs.get", h!(s::cse_keypairs_get)),
        (O, "/settings/cse/keypairs", "settings.cse.keypairs.create", h!(s::cse_keypairs_create)),
        (O, "/settings/cse/keypairs/{keyPairIdVerb}", "settings.cse.keypairs.verb", h!(s::cse_keypairs_verb)),
        (G, "/settings/cse/identities", "settings.cse.identities.list", h!(s::cse_identities_list)),
        (G, "/settings/cse/identities/{cseEmailAddress}", "settings.cse.identities.get", h!(s::cse_identities_get)),
        (O, "/settings/cse/identities", "settings.cse.identities.create", h!(s::cse_identities_create)),
        (P, "/settings/cse/identities/{emailAddress}", "settings.cse.identities.patch", h!(s::cse_identities_patch)),
        (D, "/settings/cse/identities/{cseEmailAddress}", "settings.cse.identities.delete", h!(s::cse_identities_delete)),
    ]
};

/// Routes that store what they are sent and answer in Gmail's shape without doing what Gmail
/// does, declared `shape` so `pome checks` and the dashboard say so: S/MIME configs (no
/// certificate is parsed or verified), client-side encryption key pairs and identities (no key
/// material is checked, no key service is called), and send-as verification (no mail is
/// sent). Seventeen of Gmail's methods: the key-pair verbs `enable`, `disable` and `obliterate`
/// share one route.
pub const SHAPE_ONLY: &[&str] = &[
    "settings.sendAs.verify",
    "settings.sendAs.smimeInfo.list",
    "settings.sendAs.smimeInfo.get",
    "settings.sendAs.smimeInfo.insert",
    "settings.sendAs.smimeInfo.delete",
    "settings.sendAs.smimeInfo.setDefault",
    "settings.cse.keypairs.list",
    "settings.cse.keypairs.get",
    "settings.cse.keypairs.create",
    "settings.cse.keypairs.verb",
    "settings.cse.identities.list",
    "settings.cse.identities.get",
    "settings.cse.identities.create",
    "settings.cse.identities.patch",
    "settings.cse.identities.delete",
];

/// Upload paths: (path under `/upload/gmail/v1/users/{userId}`, action).
const UPLOADS: &[(&str, &str)] = &[
    ("/messages/send", "messages.send"),
    ("/messages", "messages.insert"),
    ("/messages/import", "messages.import"),
    ("/drafts", "drafts.create"),
    ("/drafts/{id}", "drafts.update"),
    ("/drafts/send", "drafts.send"),
];

impl World {
    /// The twin's 501 for a route whose pattern matched but whose verb it does not serve.
    pub fn unsupported_route(call: &mut Call) -> Response {
        call.unsupported = true;
        <World as Twin>::unsupported(call)
    }
}

impl Twin for World {
    const NAME: &'static str = "gmail";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const CLIENT_BASE_PATH: &'static str = "/";

    fn init(seed: Option<Value>) -> Result<Self, String> {
        match seed {
            None => seed::from_seed(&seed::default_seed()),
            Some(v) => seed::from_seed(&v),
        }
    }

    fn tools() -> Vec<pome_twin_sdk::ToolDecl> {
        tools::tools()
    }

    fn router() -> &'static Router<Self> {
        static R: OnceLock<Router<World>> = OnceLock::new();
        R.get_or_init(|| {
            let mut r = Router::new();
            for (m, path, action, h) in ROUTES {
                let fidelity = if SHAPE_ONLY.contains(action) { Fidelity::Shape } else { Fidelity::Semantic };
                r = r.route(Some(*m), &format!("/gmail/v1/users/{{userId}}{path}"), action, fidelity, *h);
            }
            for (path, action) in UPLOADS {
                let full = format!("/upload/gmail/v1/users/{{userId}}{path}");
                r = r.route(Some(Method::Post), &full, action, Fidelity::Semantic, h!(transport::upload));
                r = r.route(Some(Method::Put), &full, action, Fidelity::Semantic, h!(transport::upload));
            }
            r.route(Some(Method::Post), "/batch/gmail/v1", "batch", Fidelity::Semantic, transport::batch)
                .route(Some(Method::Post), "/batch", "batch", Fidelity::Semantic, transport::batch)
                .route(Some(Method::Get), "/discovery/v1/apis/gmail/v1/rest", "discovery", Fidelity::Semantic, transport::discovery)
                .route(Some(Method::Get), "/$discovery/rest", "discovery", Fidelity::Semantic, transport::discovery)
                .route(None, "/mcp/v1", "mcp", Fidelity::Shape, mcp::endpoint)
        })
    }

    fn unsupported(call: &Call) -> Response {
        let mut r = gerr(
            501,
            "notImplemented",
            &format!("The Pome Gmail twin does not serve {} {} (fidelity: unsupported)", call.req.method.as_str(), call.req.path),
        );
        r.headers.push(("x-pome-fidelity".into(), "unsupported".into()));
        r
    }

    fn auth_error(_call: &Call) -> Response {
        gerr(
            401,
            "authError",
            "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        )
        .with_header("www-authenticate", "Bearer realm=\"https://accounts.google.com/\", error=\"invalid_token\"")
    }

    fn host_error(err: &HostError) -> Response {
        match err.kind {
            HostErrorKind::PayloadTooLarge => gerr(413, "uploadTooLarge", &err.message),
            HostErrorKind::TapeFull | HostErrorKind::RateLimited => {
                gerr(429, "rateLimitExceeded", &err.message).with_header("retry-after", "1")
            }
            HostErrorKind::TwinFailed => gerr(500, "backendError", &err.message),
        }
    }

    fn serves_without_auth(req: &Request) -> bool {
        req.method == Method::Get && (req.path == "/discovery/v1/apis/gmail/v1/rest" || req.path == "/$discovery/rest")
    }

    fn state(&self) -> Value {
        checks::state_json(self)
    }

    fn tool_aliases() -> Vec<(&'static str, &'static str)> {
        checks::TOOL_ALIASES.to_vec()
    }

    fn checks() -> Vec<CheckDecl> {
        checks::declared()
    }

    fn evaluate_check(id: &str, params: &Params, world: &CheckWorld<'_>) -> Result<Outcome, String> {
        checks::evaluate(id, params, world)
    }

    fn credentials() -> Vec<pome_twin_sdk::Credential> {
        vec![pome_twin_sdk::Credential::Bearer]
    }

    fn agent_env() -> Vec<(&'static str, &'static str)> {
        vec![("POME_GMAIL_TOKEN", "{token}"), ("POME_GMAIL_API_URL", "{api_url}"), ("POME_GMAIL_DISCOVERY_URL", "{base_url}/discovery/v1/apis/gmail/v1/rest")]
    }
}

#[cfg(target_arch = "wasm32")]
pome_twin_sdk::export_twin!(World);

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_input;
#[cfg(test)]
mod tests_round_two;
