//! Mutations with rules of their own, by family (issue #35): each module lists the root
//! mutations it serves and runs them on the world through [`crate::mutate::Mut`], checking
//! what they refer to, doing what Linear does and recording every change.

mod accounts;
mod apps;
mod integrations;
pub(crate) mod rules;
pub(crate) mod work;

use apollo_compiler::resolvers::FieldError;
use serde_json::{Value, json};

use crate::model::{Entity, Inner};
use crate::mutate::{Done, Mut};

pub fn served(name: &str) -> bool {
    integrations::served(name)
        || accounts::MUTATIONS.contains(&name)
        || apps::MUTATIONS.contains(&name)
        || work::MUTATIONS.contains(&name)
}

/// Run `name` if a family serves it.
pub(crate) fn dispatch(
    m: &mut Mut<'_, '_, '_>,
    name: &str,
    args: &Value,
) -> Option<Result<Done, FieldError>> {
    Some(if integrations::served(name) {
        integrations::run(m, name, args)
    } else if accounts::MUTATIONS.contains(&name) {
        accounts::run(m, name, args)
    } else if apps::MUTATIONS.contains(&name) {
        apps::run(m, name, args)
    } else if work::MUTATIONS.contains(&name) {
        work::run(m, name, args)
    } else {
        return None;
    })
}

/// Linear's answer to a member doing what only admins may.
pub(crate) fn admin_only(m: &Mut<'_, '_, '_>, what: &str) -> Result<(), FieldError> {
    let admin =
        m.w.get("User", &m.w.viewer)
            .and_then(|u| u.get("admin"))
            .and_then(Value::as_bool)
            == Some(true);
    if admin {
        return Ok(());
    }
    let message = format!("Only admins can {what}.");
    Err(m.ctx.error(message.clone(), json!({"type": "forbidden", "code": "FORBIDDEN", "statusCode": 403, "userError": true, "userPresentableMessage": message})))
}

/// A user's settings record, made on first use (Linear has one per user).
pub(crate) fn settings_of(w: &mut Inner, user: &str, now: &str) -> String {
    if let Some((id, _)) = w
        .all("UserSettings")
        .find(|(_, s)| s.get("userId").and_then(Value::as_str) == Some(user))
    {
        return id.clone();
    }
    if user == w.viewer {
        return crate::mutate::user_settings(w, now);
    }
    let id = format!("settings_{user}");
    let e: Entity = [
        ("id", json!(id)),
        ("userId", json!(user)),
        ("createdAt", json!(now)),
        ("updatedAt", json!(now)),
        ("notificationDeliveryPreferences", json!({})),
        ("unsubscribedFrom", json!([])),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    w.insert("UserSettings", &id, e);
    id
}

/// A new workspace domain: unverified and unclaimed, with the code Linear emails to its
/// verification address and the DNS record a claim asks for.
pub(crate) fn domain_created(w: &mut Inner, e: &mut Entity) {
    let code: String = w
        .new_id()
        .chars()
        .filter(char::is_ascii_digit)
        .chain("000000".chars())
        .take(6)
        .collect();
    let record = format!("linear-domain-verification={}", w.new_id().replace('-', ""));
    e.entry("verified").or_insert(json!(false));
    e.entry("claimed").or_insert(json!(false));
    e.insert("verificationCode".into(), json!(code));
    e.insert("verificationString".into(), json!(record));
}

/// A new address at Linear's intake domain: the team's key (or the workspace's URL key) and a
/// random part, so a rotated address shares nothing with the one it replaces.
pub(crate) fn intake_address(w: &mut Inner, e: &Entity) -> String {
    let team = e
        .get("teamId")
        .and_then(Value::as_str)
        .and_then(|t| w.str_field("Team", t, "key"))
        .map(str::to_ascii_lowercase);
    let head = team.unwrap_or_else(|| w.org_url_key().to_ascii_lowercase());
    let random: String = w.new_id().replace('-', "").chars().take(10).collect();
    format!("{head}-{random}@intake.linear.app")
}
