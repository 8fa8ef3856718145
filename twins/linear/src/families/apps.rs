//! OAuth applications (issue #35): the workspace's own apps, as Linear's developer settings
//! make them. An app gets a client id at creation; its client secret is answered once, by
//! the create or a rotation, and kept only as the twin's (never read back); a webhook secret
//! exists while the app has a webhook URL. Archived apps leave `oauthApplications`.

use apollo_compiler::resolvers::FieldError;
use serde_json::{Map, Value, json};

use crate::mutate::{Done, Mut, s};

pub const MUTATIONS: &[&str] = &[
    "oauthApplicationCreate",
    "oauthApplicationUpdate",
    "oauthApplicationArchive",
    "oauthApplicationRotateSecret",
    "oauthApplicationRotateWebhookSecret",
];

fn hex(m: &mut Mut<'_, '_, '_>) -> String {
    m.w.new_id().replace('-', "")
}

/// What Linear refuses in an app's input that the schema's types allow.
fn check(m: &Mut<'_, '_, '_>, input: &Value, creating: bool) -> Result<(), FieldError> {
    for key in ["name", "developer"] {
        if (creating || input.get(key).is_some())
            && s(input, key).is_none_or(|v| v.trim().is_empty())
        {
            return Err(m.ctx.invalid_input(
                format!("Argument Validation Error - {key} should not be empty"),
                &format!("The application needs a {key}."),
            ));
        }
    }
    let uris: Vec<&str> = input
        .get("redirectUris")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if creating && uris.is_empty() {
        return Err(m.ctx.invalid_input(
            "Argument Validation Error - redirectUris should not be empty".into(),
            "Add at least one callback URL.",
        ));
    }
    for u in uris
        .iter()
        .copied()
        .chain(s(input, "webhookUrl"))
        .chain(s(input, "developerUrl"))
    {
        let ok = u
            .strip_prefix("https://")
            .or_else(|| u.strip_prefix("http://"))
            .and_then(|r| r.split('/').next())
            .is_some_and(|h| !h.is_empty() && !h.contains(' '));
        if !ok {
            return Err(m.ctx.invalid_input(
                format!("Argument Validation Error - {u:?} is not a URL"),
                "Each URL must be a valid http(s) URL.",
            ));
        }
    }
    Ok(())
}

pub(crate) fn run(m: &mut Mut<'_, '_, '_>, name: &str, args: &Value) -> Result<Done, FieldError> {
    let mut extra = Map::new();
    let id = match name {
        "oauthApplicationCreate" => {
            let mut input = args.get("input").cloned().unwrap_or_default();
            check(m, &input, true)?;
            // A retried create with the same idempotency key is the app it made.
            if let Some(key) = s(&input, "idempotencyKey").map(String::from) {
                if let Some((id, _)) = m.w.all("OAuthApplication").find(|(_, a)| {
                    a.get("idempotencyKey").and_then(Value::as_str) == Some(key.as_str())
                }) {
                    return Ok(Done::one("OAuthApplication", &id.clone()));
                }
            }
            let (client_id, client_secret) = (hex(m), hex(m));
            let webhook = s(&input, "webhookUrl").is_some();
            let o = input.as_object_mut().ok_or_else(|| {
                m.ctx
                    .invalid_input("input must be an object".into(), "Invalid input.")
            })?;
            o.insert("clientId".into(), json!(client_id));
            o.insert("_clientSecret".into(), json!(client_secret));
            o.entry("grantTypes")
                .or_insert(json!(["authorization_code"]));
            o.entry("webhookResourceTypes").or_insert(json!([]));
            o.insert("webhookEnabled".into(), json!(webhook));
            // Apps a workspace makes are its own until submitted to Linear's directory.
            o.insert("distribution".into(), json!("private"));
            o.insert("organizationId".into(), json!(m.w.org.clone()));
            if webhook {
                let secret = format!("lin_wh_{}", hex(m));
                o.insert("_webhookSecret".into(), json!(secret));
                extra.insert("webhookSecret".into(), json!(secret));
            } else {
                extra.insert("webhookSecret".into(), Value::Null);
            }
            extra.insert("clientSecret".into(), json!(client_secret));
            m.create("OAuthApplication", input)?
        }
        "oauthApplicationUpdate" => {
            let id = m.id_arg("OAuthApplication", args)?;
            let input = args.get("input").cloned().unwrap_or_default();
            check(m, &input, false)?;
            let mut patch = input.as_object().cloned().unwrap_or_default();
            patch.retain(|_, v| !v.is_null());
            let secret = format!("lin_wh_{}", hex(m));
            let has_secret =
                m.w.get("OAuthApplication", &id)
                    .is_some_and(|a| a.contains_key("_webhookSecret"));
            m.update_with("OAuthApplication", &id, |a| {
                a.extend(patch);
                // A webhook needs a URL: enabling one without it leaves it off.
                let url = a
                    .get("webhookUrl")
                    .is_some_and(|u| u.as_str().is_some_and(|u| !u.is_empty()));
                if !url {
                    a.insert("webhookEnabled".into(), json!(false));
                } else if !has_secret {
                    a.insert("_webhookSecret".into(), json!(secret));
                }
            })?;
            id
        }
        "oauthApplicationArchive" => {
            let id = m.id_arg("OAuthApplication", args)?;
            let now = m.now();
            m.update_with("OAuthApplication", &id, |a| {
                a.insert("archivedAt".into(), json!(now));
            })?;
            id
        }
        "oauthApplicationRotateSecret" => {
            let id = m.id_arg("OAuthApplication", args)?;
            let secret = hex(m);
            let kept = secret.clone();
            m.update_with("OAuthApplication", &id, |a| {
                a.insert("_clientSecret".into(), json!(kept));
            })?;
            extra.insert("clientSecret".into(), json!(secret));
            id
        }
        _ => {
            let id = m.id_arg("OAuthApplication", args)?;
            if m.w
                .get("OAuthApplication", &id)
                .and_then(|a| a.get("webhookUrl"))
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - the application has no webhook URL".into(),
                    "Set a webhook URL before rotating its secret.",
                ));
            }
            let secret = format!("lin_wh_{}", hex(m));
            let kept = secret.clone();
            m.update_with("OAuthApplication", &id, |a| {
                a.insert("_webhookSecret".into(), json!(kept));
            })?;
            extra.insert("webhookSecret".into(), json!(secret));
            id
        }
    };
    let mut d = Done::one("OAuthApplication", &id);
    d.extra = extra;
    Ok(d)
}
