//! The Slack twin: Slack's Web API (`/api/<method>`), faithful enough that slack_sdk cannot
//! tell it from slack.com.
//!
//! Every method is RPC: any HTTP method, arguments from the query string, a form body or a
//! JSON body (see [`args::Args`]). Answers are HTTP 200 `{"ok": true, ...}` or
//! `{"ok": false, "error": "<code>"}` with Slack's own codes. The agent acts as one user of the
//! workspace (a bot by default, see [`seed`]); membership, archiving and private-channel
//! visibility are enforced from that user's point of view.
//!
//! Modules by role: [`model`] (the world), [`seed`] (seed validation and the default world),
//! [`render`] (Slack's JSON shapes), then one module per method family.

pub mod args;
pub mod canvases;
pub mod chat;
pub mod checks;
pub mod conversations;
pub mod files;
pub mod items;
pub mod mcp_tools;
pub mod misc;
pub mod model;
pub mod render;
pub mod search;
pub mod seed;
pub mod tools;
pub mod users;

use std::sync::OnceLock;

use pome_twin_sdk::{Call, CheckWorld, Credential, Fidelity, HostError, HostErrorKind, Method, Outcome, Params, Request, Response, Router, Twin, Value, json};
use serde_json::Map;

pub use args::Args;
pub use model::World;

/// A Slack error: the `error` code plus any extra fields Slack sends beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlackError {
    pub code: String,
    pub extra: Map<String, Value>,
}

impl SlackError {
    pub fn with(mut self, key: &str, v: Value) -> SlackError {
        self.extra.insert(key.to_string(), v);
        self
    }
}

pub fn fail(code: &str) -> SlackError {
    SlackError { code: code.to_string(), extra: Map::new() }
}

/// What a method returns: the fields beside `"ok": true`, or an error.
pub type Res = Result<Map<String, Value>, SlackError>;

/// Wrap a JSON object (built with `json!`) as a success.
pub fn ok(v: Value) -> Res {
    match v {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

pub type MethodFn = fn(&mut World, &mut Call, &Args) -> Res;

/// The surface: every Web API method the twin serves, its fidelity tier and its handler.
/// `Semantic` methods keep Slack's state rules and errors; `Shape` ones answer with the right
/// shapes over simplified behaviour (noted beside each).
pub const METHODS: &[(&str, Fidelity, MethodFn)] = {
    use Fidelity::{Semantic as S, Shape as H};
    &[
        ("api.test", S, misc::api_test),
        ("auth.test", S, misc::auth_test),
        ("bots.info", S, misc::bots_info),
        ("chat.postMessage", S, chat::post_message),
        ("chat.update", S, chat::update),
        ("chat.delete", S, chat::delete),
        ("chat.postEphemeral", S, chat::post_ephemeral),
        ("chat.meMessage", S, chat::me_message),
        ("chat.getPermalink", S, chat::get_permalink),
        ("chat.scheduleMessage", S, chat::schedule_message),
        ("chat.scheduledMessages.list", S, chat::scheduled_list),
        ("chat.deleteScheduledMessage", S, chat::delete_scheduled),
        ("conversations.list", S, conversations::list),
        ("conversations.info", S, conversations::info),
        ("conversations.create", S, conversations::create),
        ("conversations.history", S, conversations::history),
        ("conversations.replies", S, conversations::replies),
        ("conversations.invite", S, conversations::invite),
        ("conversations.join", S, conversations::join),
        ("conversations.leave", S, conversations::leave),
        ("conversations.kick", S, conversations::kick),
        ("conversations.archive", S, conversations::archive),
        ("conversations.unarchive", S, conversations::unarchive),
        ("conversations.rename", S, conversations::rename),
        ("conversations.members", S, conversations::members),
        ("conversations.open", S, conversations::open),
        ("conversations.close", S, conversations::close),
        ("conversations.setTopic", S, conversations::set_topic),
        ("conversations.setPurpose", S, conversations::set_purpose),
        ("conversations.mark", S, conversations::mark),
        ("conversations.canvases.create", S, canvases::conversations_create),
        ("canvases.create", S, canvases::create),
        ("canvases.edit", S, canvases::edit),
        ("canvases.delete", S, canvases::delete),
        ("canvases.sections.lookup", S, canvases::sections_lookup),
        ("reactions.add", S, items::reactions_add),
        ("reactions.remove", S, items::reactions_remove),
        ("reactions.get", S, items::reactions_get),
        ("reactions.list", S, items::reactions_list),
        ("pins.add", S, items::pins_add),
        ("pins.remove", S, items::pins_remove),
        ("pins.list", S, items::pins_list),
        ("bookmarks.add", S, items::bookmarks_add),
        ("bookmarks.edit", S, items::bookmarks_edit),
        ("bookmarks.remove", S, items::bookmarks_remove),
        ("bookmarks.list", S, items::bookmarks_list),
        ("users.list", S, users::list),
        ("users.info", S, users::info),
        ("users.lookupByEmail", S, users::lookup_by_email),
        ("users.conversations", S, users::conversations),
        ("users.getPresence", S, users::get_presence),
        ("users.setPresence", S, users::set_presence),
        ("users.profile.get", S, users::profile_get),
        ("users.profile.set", S, users::profile_set),
        ("usergroups.list", S, users::usergroups_list),
        ("usergroups.create", S, users::usergroups_create),
        ("usergroups.update", S, users::usergroups_update),
        ("usergroups.disable", S, users::usergroups_disable),
        ("usergroups.enable", S, users::usergroups_enable),
        ("usergroups.users.list", S, users::usergroups_users_list),
        ("usergroups.users.update", S, users::usergroups_users_update),
        // Search ranks by time, not Slack's relevance score (`sort=score` is accepted).
        ("search.messages", H, search::messages),
        ("search.files", H, search::files),
        ("search.all", H, search::all),
        ("files.getUploadURLExternal", S, files::get_upload_url),
        ("files.completeUploadExternal", S, files::complete_upload),
        ("files.info", S, files::info),
        ("files.list", S, files::list),
        ("files.delete", S, files::delete),
        ("files.sharedPublicURL", S, files::shared_public_url),
        ("files.revokePublicURL", S, files::revoke_public_url),
        ("reminders.add", S, misc::reminders_add),
        ("reminders.list", S, misc::reminders_list),
        ("reminders.info", S, misc::reminders_info),
        ("reminders.complete", S, misc::reminders_complete),
        ("reminders.delete", S, misc::reminders_delete),
        ("team.info", S, misc::team_info),
        ("team.profile.get", S, misc::team_profile_get),
        ("emoji.list", S, misc::emoji_list),
        // Do-not-disturb is a per-user snooze timer; scheduled DND hours are not modelled.
        ("dnd.info", H, misc::dnd_info),
        ("dnd.setSnooze", H, misc::dnd_set_snooze),
        ("dnd.endSnooze", H, misc::dnd_end_snooze),
        ("dnd.endDnd", H, misc::dnd_end_dnd),
        ("dnd.teamInfo", H, misc::dnd_team_info),
    ]
};

/// The route every method shares: the router has already set `call.action` to the method.
fn method_route(w: &mut World, call: &mut Call) -> Response {
    let name = call.action.clone().unwrap_or_default();
    let Some((_, _, f)) = METHODS.iter().find(|(n, _, _)| *n == name) else {
        return World::unsupported(call);
    };
    run(w, call, &name, *f)
}

/// The route of each tool of Slack's MCP server served by the twin itself
/// ([`mcp_tools`]): the router has set `call.action` to `mcp.<tool>`.
fn tool_route(w: &mut World, call: &mut Call) -> Response {
    let action = call.action.clone().unwrap_or_default();
    let name = action.strip_prefix("mcp.").unwrap_or(&action);
    let Some((_, f)) = mcp_tools::TOOLS.iter().find(|(n, _)| *n == name) else {
        return World::unsupported(call);
    };
    run(w, call, &action, *f)
}

/// Serve one method: post any scheduled messages that fell due, apply seeded rate limits,
/// read the arguments, run the handler, and render Slack's envelope.
pub fn run(w: &mut World, call: &mut Call, name: &str, f: MethodFn) -> Response {
    chat::deliver_due(w, call);
    if let Some(resp) = rate_limited(w, name) {
        return resp;
    }
    let multipart = args::multipart_fields(call.req.content_type(), &call.req.body);
    let parsed = match multipart {
        Some(fields) => {
            let mut m: Map<String, Value> =
                call.req.query_pairs().into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            m.extend(fields);
            Ok(m)
        }
        None => call.req.args(),
    };
    let args = match parsed {
        Ok(m) => Args(m),
        Err(_) => {
            let code = if call.req.is_json() {
                if call.req.json_value().is_ok() { "json_not_object" } else { "invalid_json" }
            } else {
                "invalid_form_data"
            };
            return error_response(200, &fail(code));
        }
    };
    match f(w, call, &args) {
        Ok(fields) => {
            let mut out = Map::new();
            out.insert("ok".into(), Value::Bool(true));
            out.extend(fields);
            if let Some(w) = charset_warning(&call.req) {
                add_warning(&mut out, w);
            }
            Response::json(200, &Value::Object(out))
        }
        Err(e) => error_response(200, &e),
    }
}

/// Slack's warnings about the body's `Content-Type`: JSON should name its charset, forms
/// should not.
fn charset_warning(req: &Request) -> Option<&'static str> {
    if req.body.is_empty() {
        return None;
    }
    let ct = req.content_type().to_ascii_lowercase();
    let has_charset = ct.contains("charset=");
    if ct.starts_with("application/json") && !has_charset {
        Some("missing_charset")
    } else if ct.starts_with("application/x-www-form-urlencoded") && has_charset {
        Some("superfluous_charset")
    } else {
        None
    }
}

/// Add a warning the way Slack reports them: `warning` (comma-joined) and
/// `response_metadata.warnings`.
pub fn add_warning(out: &mut Map<String, Value>, warning: &str) {
    let joined = match out.get("warning").and_then(Value::as_str) {
        Some(w) if !w.is_empty() => format!("{w},{warning}"),
        _ => warning.to_string(),
    };
    out.insert("warning".into(), Value::String(joined));
    let meta = out.entry("response_metadata").or_insert_with(|| json!({}));
    if let Some(m) = meta.as_object_mut() {
        let list = m.entry("warnings").or_insert_with(|| json!([]));
        if let Some(a) = list.as_array_mut() {
            a.push(Value::String(warning.to_string()));
        }
    }
}

pub fn error_response(status: u16, e: &SlackError) -> Response {
    let mut out = Map::new();
    out.insert("ok".into(), Value::Bool(false));
    out.insert("error".into(), Value::String(e.code.clone()));
    out.extend(e.extra.clone());
    Response::json(status, &Value::Object(out))
}

fn rate_limited(w: &mut World, name: &str) -> Option<Response> {
    let rule = w.rate_limits.iter_mut().find(|r| r.method == name || r.method == "*")?;
    rule.seen = rule.seen.saturating_add(1);
    let limited = rule.seen > rule.after && (rule.count == 0 || rule.seen <= rule.after.saturating_add(rule.count));
    limited.then(|| {
        error_response(429, &fail("ratelimited")).with_header("retry-after", rule.retry_after.to_string())
    })
}

impl Twin for World {
    const NAME: &'static str = "slack";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const CLIENT_BASE_PATH: &'static str = "/api/";

    fn init(seed: Option<Value>) -> Result<Self, String> {
        match seed {
            None => seed::from_seed(&seed::default_seed()),
            Some(v) => seed::from_seed(&v),
        }
    }

    fn tools() -> Vec<pome_twin_sdk::ToolDecl> {
        tools::tools()
    }

    /// Slack's Web API reads forms everywhere; tools generated from its methods send forms.
    fn tool_body() -> pome_twin_sdk::ToolBody {
        pome_twin_sdk::ToolBody::Form
    }

    fn router() -> &'static Router<Self> {
        static R: OnceLock<Router<World>> = OnceLock::new();
        R.get_or_init(|| {
            let mut r = Router::new();
            for (name, fidelity, _) in METHODS {
                r = r.route(None, &format!("/api/{name}"), name, *fidelity, method_route);
            }
            for (name, _) in mcp_tools::TOOLS {
                r = r.route(Some(Method::Post), &format!("/mcp-tools/{name}"), &format!("mcp.{name}"), Fidelity::Semantic, tool_route);
            }
            r.route(Some(Method::Post), "/upload/v1/{file}", "files.upload_bytes", Fidelity::Semantic, files::upload_bytes)
                .route(Some(Method::Get), "/files-pri/{team_file}/{name}", "files.download", Fidelity::Semantic, files::download)
                .route(Some(Method::Get), "/files-pub/{key}/{name}", "files.download_public", Fidelity::Semantic, files::download_public)
                .route(
                    Some(Method::Get),
                    "/files-pri/{team_file}/download/{name}",
                    "files.download",
                    Fidelity::Semantic,
                    files::download,
                )
        })
    }

    fn unsupported(call: &Call) -> Response {
        let method = call.req.path.strip_prefix("/api/").unwrap_or(&call.req.path).to_string();
        Response::json(
            501,
            &json!({"ok": false, "error": "unknown_method", "req_method": method, "fidelity": "unsupported"}),
        )
    }

    fn auth_error(call: &Call) -> Response {
        let code = match call.req.auth {
            pome_twin_sdk::Auth::Missing => "not_authed",
            _ => "invalid_auth",
        };
        error_response(200, &fail(code))
    }

    fn host_error(err: &HostError) -> Response {
        let (code, retry) = match err.kind {
            HostErrorKind::PayloadTooLarge => ("request_too_large", None),
            HostErrorKind::TapeFull => ("ratelimited", Some("60")),
            HostErrorKind::TwinFailed => ("fatal_error", None),
            HostErrorKind::RateLimited => ("ratelimited", Some("1")),
        };
        let e = fail(code).with("response_metadata", json!({"messages": [format!("[ERROR] {}", err.message)]}));
        let resp = error_response(err.kind.status(), &e);
        match retry {
            Some(s) => resp.with_header("retry-after", s),
            None => resp,
        }
    }

    /// The world for graders and diffs, without the bookkeeping only the twin needs (the id
    /// counter, each channel's last handed-out `ts`), so a diff shows what the agent changed.
    fn state(&self) -> Value {
        let mut v = serde_json::to_value(self).expect("the world serialises");
        if let Some(m) = v.as_object_mut() {
            m.remove("id_seq");
        }
        if let Some(chans) = v.get_mut("channels").and_then(Value::as_array_mut) {
            for c in chans {
                if let Some(m) = c.as_object_mut() {
                    m.remove("last_ts");
                }
            }
        }
        v
    }

    fn checks() -> Vec<pome_twin_sdk::CheckDecl> {
        checks::declared()
    }

    fn evaluate_check(id: &str, params: &Params, world: &CheckWorld<'_>) -> Result<Outcome, String> {
        checks::evaluate(id, params, world)
    }

    /// slack_sdk sends `Authorization: Bearer`; older clients and curl examples put the token
    /// in the form body or the query string, which Slack still accepts.
    fn credentials() -> Vec<Credential> {
        vec![Credential::Bearer, Credential::FormField("token".into()), Credential::Query("token".into())]
    }

    fn agent_env() -> Vec<(&'static str, &'static str)> {
        vec![("POME_SLACK_TOKEN", "{token}")]
    }

    /// The upload URL `files.getUploadURLExternal` hands out is pre-signed, like Slack's:
    /// slack_sdk posts the bytes there without the token.
    /// So is a publicly shared file's `permalink_public`, which is for people without a token.
    fn serves_without_auth(req: &Request) -> bool {
        (req.method == Method::Post && req.path.starts_with("/upload/v1/"))
            || (matches!(req.method, Method::Get | Method::Head) && req.path.starts_with("/files-pub/"))
    }
}

#[cfg(target_arch = "wasm32")]
pome_twin_sdk::export_twin!(World);

#[cfg(test)]
mod tests;
