//! Work around issues and projects (issue #35): releases driven by a pipeline (CI's calls),
//! agent prompts and their queue, time schedules from an on-call tool, sharing an issue with
//! someone, ending an external sync, uploads for imports, and the messages a client sends to
//! Linear itself (contact, sales, partner, analytics), which change nothing in the workspace.

use apollo_compiler::resolvers::FieldError;
use serde_json::{Map, Value, json};

use crate::mutate::{Done, Mut, edit_ids, s};

pub const MUTATIONS: &[&str] = &[
    "releaseSync",
    "releaseComplete",
    "releaseUpdateByPipeline",
    "agentActivityCreatePrompt",
    "agentActivityDeleteQueued",
    "agentActivitySendQueued",
    "timeScheduleUpsertExternal",
    "timeScheduleRefreshIntegrationSchedule",
    "issueShare",
    "issueUnshare",
    "issueExternalSyncDisable",
    "projectExternalSyncDisable",
    "userExternalUserDisconnect",
    "importFileUpload",
    "fileUploadDangerouslyDelete",
    "createCsvExportReport",
    "contactCreate",
    "contactSalesCreate",
    "partnerApplicationCreate",
    "trackAnonymousEvent",
    "emailIntakeAddressRotate",
];

fn nothing() -> Done {
    Done {
        entity: None,
        list: Vec::new(),
        extra: Map::new(),
    }
}

fn blank(v: &Value, key: &str) -> bool {
    s(v, key).is_none_or(|x| x.trim().is_empty())
}

fn need(m: &Mut<'_, '_, '_>, v: &Value, key: &str) -> Result<(), FieldError> {
    if blank(v, key) {
        return Err(m.ctx.invalid_input(
            format!("Argument Validation Error - {key} should not be empty"),
            &format!("{key} is required."),
        ));
    }
    Ok(())
}

fn email(m: &Mut<'_, '_, '_>, v: &Value, key: &str) -> Result<(), FieldError> {
    need(m, v, key)?;
    let e = s(v, key).unwrap_or("");
    if !e
        .split_once('@')
        .is_some_and(|(a, b)| !a.is_empty() && b.contains('.'))
    {
        return Err(m.ctx.invalid_input(
            format!("Argument Validation Error - {key} must be an email, got {e:?}"),
            "Enter a valid email address.",
        ));
    }
    Ok(())
}

pub(crate) fn run(m: &mut Mut<'_, '_, '_>, name: &str, args: &Value) -> Result<Done, FieldError> {
    let input = args.get("input").cloned().unwrap_or_default();
    match name {
        "releaseSync" | "releaseComplete" | "releaseUpdateByPipeline" => release(m, name, &input),
        "agentActivityCreatePrompt" => {
            let session = m.id_arg("AgentSession", &json!({"id": s(&input, "agentSessionId")}))?;
            let body = input
                .pointer("/content/body")
                .and_then(Value::as_str)
                .unwrap_or("");
            if body.trim().is_empty() {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - content.body should not be empty".into(),
                    "A prompt needs a body.",
                ));
            }
            if let Some(c) = s(&input, "sourceCommentId") {
                m.id_arg("Comment", &json!({"id": c}))?;
            }
            // A queued prompt waits for the agent's current turn; another is sent now.
            let queued = input
                .get("queued")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let now = m.now();
            let mut a = json!({
                "agentSessionId": session, "content": {"type": "prompt", "body": body}, "queued": queued, "ephemeral": false,
                "sentAt": if queued { Value::Null } else { json!(now) },
            });
            for k in [
                "id",
                "signal",
                "signalMetadata",
                "contextualMetadata",
                "sourceCommentId",
            ] {
                if let Some(v) = input.get(k).filter(|v| !v.is_null()) {
                    a[k] = v.clone();
                }
            }
            let id = m.create("AgentActivity", a)?;
            Ok(Done::one("AgentActivity", &id))
        }
        "agentActivityDeleteQueued" | "agentActivitySendQueued" => {
            let id = m.id_arg("AgentActivity", args)?;
            let a = m.w.get("AgentActivity", &id);
            let waiting = a.is_some_and(|a| {
                a.get("queued").and_then(Value::as_bool) == Some(true)
                    && a.get("archivedAt").is_none_or(Value::is_null)
            });
            if !waiting {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - the activity is not queued".into(),
                    "Only a queued prompt can be sent or removed.",
                ));
            }
            let now = m.now();
            let send = name == "agentActivitySendQueued";
            // A removed prompt is archived, so the payload can still name it.
            m.update_with("AgentActivity", &id, |a| {
                a.insert("queued".into(), json!(false));
                a.insert(
                    if send { "sentAt" } else { "archivedAt" }.into(),
                    json!(now),
                );
            })?;
            Ok(Done::one("AgentActivity", &id))
        }
        "timeScheduleUpsertExternal" => {
            let external = s(args, "externalId").unwrap_or("").to_string();
            if external.trim().is_empty() {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - externalId should not be empty".into(),
                    "externalId is required.",
                ));
            }
            let mut patch = input.as_object().cloned().unwrap_or_default();
            patch.retain(|_, v| !v.is_null());
            check_entries(m, patch.get_mut("entries"))?;
            let found =
                m.w.all("TimeSchedule")
                    .find(|(_, t)| {
                        t.get("externalId").and_then(Value::as_str) == Some(external.as_str())
                    })
                    .map(|(id, _)| id.clone());
            let id = match found {
                Some(id) => {
                    m.update("TimeSchedule", &id, &Value::Object(patch))?;
                    id
                }
                None => {
                    if blank(&Value::Object(patch.clone()), "name") {
                        return Err(m.ctx.invalid_input(
                            "Argument Validation Error - name should not be empty".into(),
                            "A new schedule needs a name.",
                        ));
                    }
                    patch.insert("externalId".into(), json!(external));
                    patch.entry("entries").or_insert(json!([]));
                    patch.insert("organizationId".into(), json!(m.w.org.clone()));
                    m.create("TimeSchedule", Value::Object(patch))?
                }
            };
            Ok(Done::one("TimeSchedule", &id))
        }
        "timeScheduleRefreshIntegrationSchedule" => {
            let id = m.id_arg("TimeSchedule", args)?;
            // Only a schedule an on-call integration keeps can be refreshed; nothing new
            // arrives from a provider the sandbox cannot reach.
            if m.w
                .str_field("TimeSchedule", &id, "integrationId")
                .is_none()
            {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - the schedule is not from an integration".into(),
                    "This schedule is not synced from an integration.",
                ));
            }
            Ok(Done::one("TimeSchedule", &id))
        }
        "issueShare" | "issueUnshare" => {
            let id = m.id_arg("Issue", args)?;
            let user = m.id_arg("User", &json!({"id": s(args, "userId")}))?;
            let shared =
                m.w.get("Issue", &id)
                    .and_then(|i| i.get("sharedWithUserIds"))
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|u| u.as_str() == Some(user.as_str())));
            let share = name == "issueShare";
            if share && user == m.w.viewer {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - an issue cannot be shared with yourself".into(),
                    "You cannot share an issue with yourself.",
                ));
            }
            if !share && !shared {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - the issue is not shared with this user".into(),
                    "The issue is not shared with this user.",
                ));
            }
            if share != shared {
                m.update_with("Issue", &id, |i| {
                    edit_ids(i, "sharedWithUserIds", std::slice::from_ref(&user), share)
                })?;
            }
            Ok(Done::one("Issue", &id))
        }
        "issueExternalSyncDisable" => {
            let att = m.id_arg("Attachment", &json!({"id": s(args, "attachmentId")}))?;
            let issue =
                m.w.str_field("Attachment", &att, "issueId")
                    .unwrap_or("")
                    .to_string();
            let service =
                m.w.str_field("Attachment", &att, "sourceType")
                    .unwrap_or("")
                    .to_ascii_lowercase();
            stop_sync(m, "Issue", &issue, &service)?;
            Ok(Done::one("Issue", &issue))
        }
        "projectExternalSyncDisable" => {
            let id = m.id_arg("Project", &json!({"id": s(args, "projectId")}))?;
            let service = s(args, "syncSource").unwrap_or("").to_string();
            stop_sync(m, "Project", &id, &service)?;
            Ok(Done::one("Project", &id))
        }
        "userExternalUserDisconnect" => {
            // The user's own link to the service: their personal integration of it goes.
            let service = s(args, "service").unwrap_or("").to_string();
            let viewer = m.w.viewer.clone();
            let personal = format!("{service}Personal");
            let found =
                m.w.all("Integration")
                    .find(|(_, i)| {
                        i.get("creatorId").and_then(Value::as_str) == Some(viewer.as_str())
                            && i.get("service")
                                .and_then(Value::as_str)
                                .is_some_and(|x| x.eq_ignore_ascii_case(&personal))
                    })
                    .map(|(id, _)| id.clone());
            let id = found.ok_or_else(|| {
                m.ctx.invalid_input(
                    format!("Argument Validation Error - no {service} account is connected"),
                    "No account of this service is connected.",
                )
            })?;
            let gone = m.w.remove("Integration", &id);
            m.record("Integration", &id, gone.as_ref(), None);
            Ok(Done::one("User", &viewer))
        }
        "importFileUpload" => m.dispatch("fileUpload", args),
        "fileUploadDangerouslyDelete" => {
            // Only this workspace's uploads; the twin keeps no bytes, so what goes is the URL's
            // standing: links to it stay, as Linear warns.
            let url = s(args, "assetUrl").unwrap_or("");
            let mine = format!("https://uploads.linear.app/{}/", m.w.org);
            if !url.starts_with(&mine) || url.len() == mine.len() {
                return Err(m.ctx.invalid_input(
                    format!(
                        "Argument Validation Error - {url:?} is not an upload of this workspace"
                    ),
                    "The file is not an upload of this workspace.",
                ));
            }
            Ok(nothing())
        }
        "createCsvExportReport" => {
            // The export is emailed to the caller; the teams it includes must exist.
            for key in ["includePrivateTeamIds", "includeRestrictedTeamIds"] {
                for t in args
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    m.id_arg("Team", &json!({"id": t}))?;
                }
            }
            Ok(nothing())
        }
        "emailIntakeAddressRotate" => {
            // A new address replaces the old, which takes no more mail.
            let id = m.id_arg("EmailIntakeAddress", args)?;
            let e =
                m.w.get("EmailIntakeAddress", &id)
                    .cloned()
                    .unwrap_or_default();
            let address = super::intake_address(m.w, &e);
            m.update_with("EmailIntakeAddress", &id, |e| {
                e.insert("address".into(), json!(address));
            })?;
            Ok(Done::one("EmailIntakeAddress", &id))
        }
        "contactCreate" => {
            need(m, &input, "type")?;
            need(m, &input, "message")?;
            if let Some(r) = input
                .get("disappointmentRating")
                .and_then(Value::as_i64)
                .filter(|r| !(1..=5).contains(r))
            {
                return Err(m.ctx.invalid_input(
                    format!(
                        "Argument Validation Error - disappointmentRating must be 1 to 5, got {r}"
                    ),
                    "Rate from 1 to 5.",
                ));
            }
            Ok(nothing())
        }
        "contactSalesCreate" => {
            need(m, &input, "name")?;
            email(m, &input, "email")?;
            Ok(nothing())
        }
        "partnerApplicationCreate" => {
            for k in [
                "fullName",
                "organizationName",
                "organizationType",
                "organizationWebsite",
                "description",
                "region",
                "role",
            ] {
                need(m, &input, k)?;
            }
            email(m, &input, "email")?;
            if input.get("consent").and_then(Value::as_bool) != Some(true) {
                return Err(m.ctx.invalid_input(
                    "Argument Validation Error - consent must be given".into(),
                    "Agree to the terms to apply.",
                ));
            }
            Ok(nothing())
        }
        "trackAnonymousEvent" => {
            need(m, &input, "event")?;
            Ok(nothing())
        }
        _ => Err(m.ctx.unsupported(&format!("Mutation.{name}"))),
    }
}

/// Time schedule entries: each ends after it starts, for a user who exists (by id) or an email.
pub(crate) fn check_entries(
    m: &Mut<'_, '_, '_>,
    entries: Option<&mut Value>,
) -> Result<(), FieldError> {
    let Some(Value::Array(list)) = entries else {
        return Ok(());
    };
    for e in list.iter_mut() {
        let (a, b) = (
            s(e, "startsAt").and_then(crate::dates::date_time),
            s(e, "endsAt").and_then(crate::dates::date_time),
        );
        let (Some(a), Some(b)) = (a, b) else {
            return Err(m.ctx.invalid_input(
                "Argument Validation Error - startsAt and endsAt must be dates".into(),
                "Each entry needs a start and an end.",
            ));
        };
        if b <= a {
            return Err(m.ctx.invalid_input(
                "Argument Validation Error - an entry must end after it starts".into(),
                "Each entry must end after it starts.",
            ));
        }
        if let Some(u) = s(e, "userId") {
            m.id_arg("User", &json!({"id": u}))?;
        } else if blank(e, "userEmail") {
            return Err(m.ctx.invalid_input(
                "Argument Validation Error - an entry needs userId or userEmail".into(),
                "Each entry names a user.",
            ));
        }
        e["startsAt"] = json!(a);
        e["endsAt"] = json!(b);
    }
    Ok(())
}

/// An entity stops syncing with `service`: its `syncedWith` entry for it goes, and one that
/// does not sync with it is refused.
fn stop_sync(m: &mut Mut<'_, '_, '_>, ty: &str, id: &str, service: &str) -> Result<(), FieldError> {
    let synced =
        m.w.get(ty, id)
            .and_then(|e| e.get("syncedWith"))
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| s(x, "service") == Some(service)));
    if !synced {
        return Err(m.ctx.invalid_input(
            format!(
                "Argument Validation Error - the {} is not synced with {service}",
                ty.to_ascii_lowercase()
            ),
            "Nothing is synced with this service.",
        ));
    }
    m.update_with(ty, id, |e| {
        if let Some(a) = e.get_mut("syncedWith").and_then(Value::as_array_mut) {
            a.retain(|x| s(x, "service") != Some(service));
        }
    })
}

/// A pipeline's release by `version`, else its latest one not completed or canceled.
fn pipeline_release(m: &Mut<'_, '_, '_>, pipeline: &str, version: Option<&str>) -> Option<String> {
    let mut of: Vec<(&String, &crate::model::Entity)> =
        m.w.all("Release")
            .filter(|(_, r)| {
                r.get("pipelineId").and_then(Value::as_str) == Some(pipeline)
                    && r.get("archivedAt").is_none_or(Value::is_null)
            })
            .collect();
    if let Some(v) = version {
        return of
            .iter()
            .find(|(_, r)| r.get("version").and_then(Value::as_str) == Some(v))
            .map(|(id, _)| (*id).clone());
    }
    of.retain(|(_, r)| {
        r.get("completedAt").is_none_or(Value::is_null)
            && r.get("canceledAt").is_none_or(Value::is_null)
    });
    of.iter()
        .max_by(|a, b| {
            a.1.get("createdAt")
                .and_then(Value::as_str)
                .cmp(&b.1.get("createdAt").and_then(Value::as_str))
                .then_with(|| a.0.cmp(b.0))
        })
        .map(|(id, _)| (*id).clone())
}

/// The pipeline's stage named `name`, or its first of `kind`.
fn stage(
    m: &Mut<'_, '_, '_>,
    pipeline: &str,
    name: Option<&str>,
    kind: Option<&str>,
) -> Option<(String, String)> {
    let mut of: Vec<(&String, &crate::model::Entity)> =
        m.w.all("ReleaseStage")
            .filter(|(_, s)| {
                s.get("pipelineId").and_then(Value::as_str) == Some(pipeline)
                    && s.get("archivedAt").is_none_or(Value::is_null)
            })
            .collect();
    of.sort_by(|a, b| {
        a.1.get("position")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
            .total_cmp(&b.1.get("position").and_then(Value::as_f64).unwrap_or(0.0))
            .then_with(|| a.0.cmp(b.0))
    });
    of.into_iter()
        .find(|(_, st)| {
            name.is_none_or(|n| {
                st.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|x| x.eq_ignore_ascii_case(n))
            }) && kind.is_none_or(|k| st.get("type").and_then(Value::as_str) == Some(k))
        })
        .map(|(id, st)| {
            (
                id.clone(),
                st.get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        })
}

/// CI's release calls. `releaseSync` finds the pipeline's release of the version (or commit)
/// or starts one, and links the issues its commits name (by identifier; a name that is no
/// issue is passed over, as commit messages name what they like) and unlinks reverted ones;
/// `releaseUpdateByPipeline` moves the release to the stage named; `releaseComplete` moves
/// it to the pipeline's completed stage.
fn release(m: &mut Mut<'_, '_, '_>, name: &str, input: &Value) -> Result<Done, FieldError> {
    let pipeline = m.id_arg("ReleasePipeline", &json!({"id": s(input, "pipelineId")}))?;
    let version = s(input, "version");
    let commit = s(input, "commitSha");
    let mut id = pipeline_release(m, &pipeline, version);
    if id.is_none() && name == "releaseSync" {
        if let Some(c) = commit {
            id =
                m.w.all("Release")
                    .find(|(_, r)| {
                        r.get("pipelineId").and_then(Value::as_str) == Some(pipeline.as_str())
                            && r.get("commitSha").and_then(Value::as_str) == Some(c)
                    })
                    .map(|(id, _)| id.clone());
        }
    }
    let id = match id {
        Some(id) => id,
        None if name == "releaseSync" => {
            let title = s(input, "name")
                .or(version)
                .or(commit)
                .unwrap_or("")
                .to_string();
            let mut r = json!({"pipelineId": pipeline, "name": title});
            for k in ["version", "commitSha"] {
                if let Some(v) = s(input, k) {
                    r[k] = json!(v);
                }
            }
            m.create("Release", r)?
        }
        None => return Err(m.ctx.not_found("Release")),
    };
    let mut patch = Map::new();
    for k in ["name", "version", "commitSha"] {
        if let Some(v) = s(input, k) {
            patch.insert(k.into(), json!(v));
        }
    }
    let target = match name {
        "releaseComplete" => Some(
            stage(m, &pipeline, None, Some("completed"))
                .ok_or_else(|| m.ctx.not_found("ReleaseStage"))?,
        ),
        "releaseUpdateByPipeline" => match s(input, "stage") {
            Some(n) => Some(
                stage(m, &pipeline, Some(n), None)
                    .ok_or_else(|| m.ctx.not_found("ReleaseStage"))?,
            ),
            None => None,
        },
        _ => None,
    };
    let now = m.now();
    if let Some((st, kind)) = target {
        patch.insert("stageId".into(), json!(st));
        match kind.as_str() {
            "started" => {
                patch.insert("startedAt".into(), json!(now));
            }
            "completed" => {
                patch.insert("completedAt".into(), json!(now));
            }
            "canceled" => {
                patch.insert("canceledAt".into(), json!(now));
            }
            _ => {}
        }
    }
    if !patch.is_empty() {
        m.update_with("Release", &id, |r| r.extend(patch))?;
    }
    if name == "releaseSync" {
        let refs = |k: &str| -> Vec<String> {
            input
                .get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| s(r, "identifier").map(String::from))
                .collect()
        };
        for (key, add) in [
            ("issueReferences", true),
            ("revertedIssueReferences", false),
        ] {
            for ident in refs(key) {
                let Some(issue) = m.w.issue_id(&ident) else {
                    continue;
                };
                let has =
                    m.w.get("Issue", &issue)
                        .and_then(|i| i.get("releaseIds"))
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(|r| r.as_str() == Some(id.as_str())));
                if has != add {
                    m.update_with("Issue", &issue, |i| {
                        edit_ids(i, "releaseIds", std::slice::from_ref(&id), add)
                    })?;
                }
            }
        }
    }
    Ok(Done::one("Release", &id))
}
