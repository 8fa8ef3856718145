//! The workspace and its people (issue #35): sessions, a user's flags and notification
//! channels, the workspace's deletion, trial and domains.
//!
//! Agents call with API keys, and a sandbox holds no browser or app session
//! (`authenticationSessions` is empty): ending "other" or "all" sessions ends none and
//! succeeds, naming one is `Entity not found`. Codes Linear would email (the deletion code, a
//! domain's verification code) are kept on the entity, so a grader reads them in the state
//! export; the agent has no inbox to read them from.

use apollo_compiler::resolvers::FieldError;
use serde_json::{Map, Value, json};

use super::{admin_only, settings_of};
use crate::mutate::{Done, Mut, s};

/// Linear's trials run 14 days.
const TRIAL_DAYS: i64 = 14;

pub const MUTATIONS: &[&str] = &[
    "logoutAllSessions",
    "logoutOtherSessions",
    "logoutSession",
    "userRevokeAllSessions",
    "userRevokeSession",
    "userFlagUpdate",
    "userSettingsFlagsReset",
    "notificationCategoryChannelSubscriptionUpdate",
    "emailUnsubscribe",
    "organizationDeleteChallenge",
    "organizationDelete",
    "organizationCancelDelete",
    "organizationStartTrial",
    "organizationStartTrialForPlan",
    "organizationDomainVerify",
    "organizationDomainClaim",
];

fn nothing() -> Done {
    Done {
        entity: None,
        list: Vec::new(),
        extra: Map::new(),
    }
}

pub(crate) fn run(m: &mut Mut<'_, '_, '_>, name: &str, args: &Value) -> Result<Done, FieldError> {
    let now = m.now();
    match name {
        "logoutAllSessions" | "logoutOtherSessions" => Ok(nothing()),
        "logoutSession" => Err(m.ctx.not_found("AuthenticationSession")),
        "userRevokeAllSessions" | "userRevokeSession" => {
            admin_only(m, "revoke a user's sessions")?;
            m.id_arg("User", args)?;
            if name == "userRevokeSession" {
                return Err(m.ctx.not_found("AuthenticationSession"));
            }
            Ok(nothing())
        }
        "userFlagUpdate" => {
            let flag = s(args, "flag").unwrap_or("").to_string();
            if flag == "all" {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - flag all can only be reset".into(),
                    "Name one flag to update.",
                ));
            }
            let op = s(args, "operation").unwrap_or("").to_string();
            let viewer = m.w.viewer.clone();
            let id = settings_of(m.w, &viewer, &now);
            let flags =
                m.w.get("UserSettings", &id)
                    .and_then(|e| e.get("flags"))
                    .cloned()
                    .unwrap_or_else(|| json!({}));
            let was = flags.get(&flag).and_then(Value::as_i64).unwrap_or(0);
            let locked = flags
                .get("_locked")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|f| f.as_str() == Some(flag.as_str())));
            let mut d = Done::one("UserSettings", &id);
            d.extra.insert("flag".into(), json!(flag));
            // A locked flag keeps its value: the update did not happen.
            if locked {
                d.extra.insert("value".into(), json!(was));
                d.extra.insert("success".into(), json!(false));
                return Ok(d);
            }
            let value = match op.as_str() {
                "incr" => was.saturating_add(1),
                "decr" => was.saturating_sub(1).max(0),
                "clear" => 0,
                _ => was,
            };
            m.update_with("UserSettings", &id, |e| {
                let f = e.entry("flags").or_insert_with(|| json!({}));
                if let Some(f) = f.as_object_mut() {
                    f.insert(flag.clone(), json!(value));
                    if op == "lock" {
                        let l = f.entry("_locked").or_insert_with(|| json!([]));
                        if let Some(l) = l.as_array_mut() {
                            l.push(json!(flag));
                        }
                    }
                }
            })?;
            d.extra.insert("value".into(), json!(value));
            Ok(d)
        }
        "userSettingsFlagsReset" => {
            let viewer = m.w.viewer.clone();
            let id = settings_of(m.w, &viewer, &now);
            let named: Vec<String> = args
                .get("flags")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let all = named.is_empty() || named.iter().any(|f| f == "all");
            m.update_with("UserSettings", &id, |e| {
                if all {
                    e.insert("flags".into(), json!({}));
                } else if let Some(f) = e.get_mut("flags").and_then(Value::as_object_mut) {
                    for n in &named {
                        f.remove(n);
                    }
                    if let Some(l) = f.get_mut("_locked").and_then(Value::as_array_mut) {
                        l.retain(|x| !named.iter().any(|n| x.as_str() == Some(n.as_str())));
                    }
                }
            })?;
            Ok(Done::one("UserSettings", &id))
        }
        "notificationCategoryChannelSubscriptionUpdate" => {
            let (category, channel) = (
                s(args, "category").unwrap_or("").to_string(),
                s(args, "channel").unwrap_or("").to_string(),
            );
            let on = args
                .get("subscribe")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let viewer = m.w.viewer.clone();
            let id = settings_of(m.w, &viewer, &now);
            m.update_with("UserSettings", &id, |e| {
                let p = e
                    .entry("notificationCategoryPreferences")
                    .or_insert_with(|| json!({}));
                if let Some(p) = p.as_object_mut() {
                    let c = p.entry(category).or_insert_with(|| json!({}));
                    if let Some(c) = c.as_object_mut() {
                        c.insert(channel, json!(on));
                    }
                }
            })?;
            Ok(Done::one("UserSettings", &id))
        }
        "emailUnsubscribe" => {
            // The link in an email: the user's emails of that type stop.
            let input = args.get("input").cloned().unwrap_or_default();
            let user = m.id_arg("User", &json!({"id": s(&input, "userId")}))?;
            if s(&input, "token").is_none_or(str::is_empty) {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - token should not be empty".into(),
                    "The unsubscribe link is not valid.",
                ));
            }
            let kind = s(&input, "type").unwrap_or("").to_string();
            let id = settings_of(m.w, &user, &now);
            m.update_with("UserSettings", &id, |e| {
                crate::mutate::edit_ids(e, "unsubscribedFrom", &[kind], true)
            })?;
            Ok(nothing())
        }
        "organizationDeleteChallenge" => {
            admin_only(m, "delete the workspace")?;
            let code: String =
                m.w.new_id()
                    .chars()
                    .filter(char::is_ascii_digit)
                    .chain("000000".chars())
                    .take(6)
                    .collect();
            let org = m.w.org.clone();
            m.update_with("Organization", &org, |o| {
                o.insert("deletionCode".into(), json!(code));
            })?;
            Ok(nothing())
        }
        "organizationDelete" => {
            admin_only(m, "delete the workspace")?;
            let org = m.w.org.clone();
            let given = args
                .pointer("/input/deletionCode")
                .and_then(Value::as_str)
                .unwrap_or("");
            let expected =
                m.w.str_field("Organization", &org, "deletionCode")
                    .unwrap_or("")
                    .to_string();
            if expected.is_empty() || given != expected {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - invalid deletion code".into(),
                    "The deletion code is not valid. Request a new one.",
                ));
            }
            // Linear deletes a workspace some days after the request, until then cancellable.
            m.update_with("Organization", &org, |o| {
                o.insert("deletionRequestedAt".into(), json!(now));
                o.remove("deletionCode");
            })?;
            Ok(nothing())
        }
        "organizationCancelDelete" => {
            admin_only(m, "cancel the workspace's deletion")?;
            let org = m.w.org.clone();
            if m.w
                .get("Organization", &org)
                .and_then(|o| o.get("deletionRequestedAt"))
                .is_none_or(Value::is_null)
            {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - the workspace is not being deleted".into(),
                    "The workspace is not scheduled for deletion.",
                ));
            }
            m.update_with("Organization", &org, |o| {
                o.insert("deletionRequestedAt".into(), Value::Null);
            })?;
            Ok(nothing())
        }
        "organizationStartTrial" | "organizationStartTrialForPlan" => {
            admin_only(m, "start a trial")?;
            let plan = args
                .pointer("/input/planType")
                .and_then(Value::as_str)
                .map(String::from);
            if plan.as_deref().is_some_and(|p| p.trim().is_empty()) {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - planType should not be empty".into(),
                    "Choose a plan to try.",
                ));
            }
            let org = m.w.org.clone();
            if m.w
                .get("Organization", &org)
                .and_then(|o| o.get("trialStartsAt"))
                .is_some_and(|v| !v.is_null())
            {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - the workspace has already had a trial".into(),
                    "This workspace has already had a trial.",
                ));
            }
            let ends = chrono::DateTime::parse_from_rfc3339(&now)
                .map(|t| {
                    (t + chrono::Duration::days(TRIAL_DAYS))
                        .to_utc()
                        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                        .to_string()
                })
                .unwrap_or_default();
            m.update_with("Organization", &org, |o| {
                o.insert("trialStartsAt".into(), json!(now));
                o.insert("trialEndsAt".into(), json!(ends));
                if let Some(p) = plan {
                    o.insert("trialPlan".into(), json!(p));
                }
            })?;
            Ok(nothing())
        }
        "organizationDomainVerify" => {
            admin_only(m, "verify a domain")?;
            let input = args.get("input").cloned().unwrap_or_default();
            let id = m.id_arg(
                "OrganizationDomain",
                &json!({"id": s(&input, "organizationDomainId")}),
            )?;
            let expected =
                m.w.str_field("OrganizationDomain", &id, "verificationCode")
                    .unwrap_or("")
                    .to_string();
            if expected.is_empty() || s(&input, "verificationCode") != Some(expected.as_str()) {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - invalid verification code".into(),
                    "The verification code is not valid.",
                ));
            }
            m.update_with("OrganizationDomain", &id, |d| {
                d.insert("verified".into(), json!(true));
            })?;
            Ok(Done::one("OrganizationDomain", &id))
        }
        "organizationDomainClaim" => {
            admin_only(m, "claim a domain")?;
            let id = m.id_arg("OrganizationDomain", args)?;
            if m.w
                .get("OrganizationDomain", &id)
                .and_then(|d| d.get("verified"))
                .and_then(Value::as_bool)
                != Some(true)
            {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - the domain is not verified".into(),
                    "Verify the domain before claiming it.",
                ));
            }
            m.update_with("OrganizationDomain", &id, |d| {
                d.insert("claimed".into(), json!(true));
            })?;
            Ok(nothing())
        }
        _ => Err(m.ctx.unsupported(&format!("Mutation.{name}"))),
    }
}
