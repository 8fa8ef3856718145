//! Mutations. Linear names them `<entity><Verb>` (`issueCreate`, `issueLabelUpdate`,
//! `projectArchive`): every such root field whose entity is a type of the schema is served by
//! one generic implementation (the input's fields become the entity's, relations by id), with
//! hooks for the entities whose rules matter (issues: numbering, identifiers, default state,
//! label edits, history; comments: threads; teams: default states; webhooks: secrets).

use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;

use apollo_compiler::resolvers::FieldError;
use pome_twin_sdk::{Change, Delivery};

use crate::exec::{Ctx, Payload, find_typed, lcfirst};
use crate::gql;
use crate::model::{Entity, Inner, slug};

pub const VERBS: &[&str] = &["Create", "Update", "Delete", "Archive", "Unarchive", "Retire", "Restore", "AddLabel", "RemoveLabel"];

/// Mutations that look generic but must not be: they would do something Linear guards.
const NOT_GENERIC: &[&str] = &["organizationDelete", "teamKeyDelete", "teamCyclesDelete", "userSettingsUpdate"];

/// Special mutations served by their own code.
pub const SPECIAL: &[&str] = &[
    "issueSubscribe", "issueUnsubscribe", "commentResolve", "commentUnresolve", "attachmentLinkURL", "webhookRotateSecret",
    "issueBatchCreate", "issueBatchUpdate", "organizationUpdate", "notificationMarkReadAll", "notificationMarkUnreadAll",
    "notificationArchiveAll", "notificationSnoozeAll", "notificationUnsnoozeAll", "issueReminder", "userSuspend", "userUnsuspend",
    "attachmentLinkGitHubIssue", "attachmentLinkGitHubPR", "attachmentLinkSlack", "attachmentLinkJiraIssue", "attachmentLinkZendesk",
    "attachmentLinkIntercom", "attachmentLinkFront", "attachmentLinkDiscord", "attachmentLinkGitLabMR", "attachmentLinkSalesforce",
    "issueToReleaseDeleteByIssueAndRelease", "userSettingsUpdate", "userChangeRole", "customerUpsert", "resendOrganizationInvite",
    "resendOrganizationInviteByEmail", "fileUpload", "cycleShiftAll", "cycleStartUpcomingCycleToday", "teamCyclesDelete", "customerMerge",
    "customerUnsync", "customerNeedCreateFromAttachment", "projectMilestoneMove", "projectReassignStatus", "createProjectUpdateReminder",
    "createInitiativeUpdateReminder", "agentSessionCreateOnIssue", "agentSessionCreateOnComment", "agentSessionUpdateExternalUrl",
    "issueDescriptionUpdateFromFront",
];

/// The viewer's settings record, made on first use (Linear has one per user).
pub fn user_settings(w: &mut Inner, now: &str) -> String {
    let viewer = w.viewer.clone();
    if let Some((id, _)) = w.all("UserSettings").find(|(_, s)| s.get("userId").and_then(Value::as_str) == Some(viewer.as_str())) {
        return id.clone();
    }
    let id = format!("settings_{viewer}");
    let e: Entity = [("id", json!(id)), ("userId", json!(viewer)), ("createdAt", json!(now)), ("updatedAt", json!(now)), ("notificationDeliveryPreferences", json!({})), ("unsubscribedFrom", json!([]))]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    w.insert("UserSettings", &id, e);
    id
}

/// The entity type and verb of a generic mutation name, if it is one.
pub fn generic(name: &str) -> Option<(String, &'static str)> {
    if NOT_GENERIC.contains(&name) {
        return None;
    }
    for verb in VERBS {
        if let Some(prefix) = name.strip_suffix(verb) {
            let mut c = prefix.chars();
            let ty: String = match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect(),
                None => continue,
            };
            let interface = crate::tables::ty(&ty).is_some_and(|t| t.kind == crate::tables::Kind::Interface);
            if (gql::is_object(&ty) || (interface && *verb != "AddLabel" && *verb != "RemoveLabel")) && !ty.ends_with("Payload") {
                if (*verb == "AddLabel" || *verb == "RemoveLabel") && !has_field(&ty, "labelIds") && !has_field(&ty, "labels") {
                    continue;
                }
                return Some((ty, verb));
            }
        }
    }
    None
}

/// Whether mutation `name` has rules of its own beyond the generic writer's.
pub fn has_rules(name: &str) -> bool {
    SPECIAL.contains(&name) || crate::families::served(name)
}

pub fn served(name: &str) -> bool {
    has_rules(name) || generic(name).is_some()
}

fn has_field(ty: &str, f: &str) -> bool {
    gql::has_field(ty, f)
}

pub(crate) struct Done {
    pub entity: Option<(String, String)>,
    pub list: Vec<(String, String)>,
    pub extra: Map<String, Value>,
}

impl Done {
    pub(crate) fn one(ty: &str, id: &str) -> Done {
        Done { entity: Some((ty.to_string(), id.to_string())), list: Vec::new(), extra: Map::new() }
    }
}

pub fn run<'c, 'w>(ctx: &'c Ctx<'w>, name: &str, args: &Value, payload_ty: &str) -> Result<Payload<'c, 'w>, FieldError> {
    let done = {
        let mut w = ctx.w.borrow_mut();
        let mut m = Mut { ctx, w: &mut w, changed: false };
        let done = m.dispatch(name, args)?;
        let changed = m.changed;
        if changed {
            w.bump_sync();
        }
        done
    };
    ctx.fx.borrow_mut().actions.push(name.to_string());
    let sync = ctx.w.borrow().last_sync_id;
    Ok(Payload { ctx, ty: payload_ty.to_string(), sync, entity: done.entity, list: done.list, extra: done.extra })
}

pub(crate) struct Mut<'m, 'c, 'w> {
    pub(crate) ctx: &'c Ctx<'w>,
    pub(crate) w: &'m mut Inner,
    changed: bool,
}

pub(crate) fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

impl Mut<'_, '_, '_> {
    pub(crate) fn now(&self) -> String {
        self.ctx.now.clone()
    }

    pub(crate) fn record(&mut self, ty: &str, id: &str, before: Option<&Entity>, after: Option<&Entity>) {
        self.changed = true;
        let enc = |e: Option<&Entity>| e.map(|e| serde_json::to_string(&Public(e)).unwrap_or_default());
        self.ctx.fx.borrow_mut().changes.push(Change { entity: ty.to_string(), id: id.to_string(), before: enc(before), after: enc(after) });
        let action = match (before, after) {
            (None, Some(_)) => "create",
            (Some(_), None) => "remove",
            _ => "update",
        };
        if let Some(e) = after.or(before) {
            self.webhooks(ty, id, action, e, before.filter(|_| after.is_some()));
        }
    }

    pub(crate) fn id_arg(&self, ty: &str, args: &Value) -> Result<String, FieldError> {
        let id = s(args, "id").unwrap_or("");
        let found = if ty == "Issue" {
            self.w.issue_id(id)
        } else if ty == "Team" {
            self.w.team_id(id)
        } else {
            find_typed(self.w, ty, id).map(|_| id.to_string())
        };
        found.ok_or_else(|| self.ctx.not_found(ty))
    }

    /// The concrete type an id of (possibly abstract) type `ty` is stored under.
    fn concrete(&self, ty: &str, id: &str) -> String {
        find_typed(self.w, ty, id).unwrap_or_else(|| ty.to_string())
    }

    pub(crate) fn dispatch(&mut self, name: &str, args: &Value) -> Result<Done, FieldError> {
        match name {
            "issueSubscribe" | "issueUnsubscribe" => {
                let id = self.id_arg("Issue", args)?;
                let user = s(args, "userId").map(String::from).unwrap_or_else(|| self.w.viewer.clone());
                let add = name == "issueSubscribe";
                self.update_with("Issue", &id, |e| edit_ids(e, "subscriberIds", &[user.clone()], add))?;
                return Ok(Done::one("Issue", &id));
            }
            "commentResolve" | "commentUnresolve" => {
                let id = self.id_arg("Comment", args)?;
                let viewer = self.w.viewer.clone();
                let now = self.now();
                let resolve = name == "commentResolve";
                let by = s(args, "resolvingCommentId").map(String::from);
                self.update_with("Comment", &id, |e| {
                    if resolve {
                        e.insert("resolvedAt".into(), json!(now));
                        e.insert("resolvingUserId".into(), json!(viewer));
                        if let Some(by) = by {
                            e.insert("resolvingCommentId".into(), json!(by));
                        }
                    } else {
                        e.insert("resolvedAt".into(), Value::Null);
                        e.insert("resolvingUserId".into(), Value::Null);
                        e.insert("resolvingCommentId".into(), Value::Null);
                    }
                })?;
                return Ok(Done::one("Comment", &id));
            }
            n if n.starts_with("attachmentLink") => {
                let source = n.trim_start_matches("attachmentLink");
                let url = match n {
                    "attachmentLinkJiraIssue" => s(args, "url").map(String::from).unwrap_or_else(|| format!("https://jira.atlassian.net/browse/{}", s(args, "jiraIssueId").unwrap_or(""))),
                    "attachmentLinkZendesk" => s(args, "url").map(String::from).unwrap_or_else(|| format!("https://zendesk.com/agent/tickets/{}", s(args, "ticketId").unwrap_or(""))),
                    "attachmentLinkIntercom" => format!("https://app.intercom.com/conversations/{}", s(args, "conversationId").unwrap_or("")),
                    "attachmentLinkFront" => format!("https://app.frontapp.com/open/{}", s(args, "conversationId").unwrap_or("")),
                    _ => s(args, "url").unwrap_or("").to_string(),
                };
                let mut input = Map::new();
                input.insert("issueId".into(), json!(s(args, "issueId").unwrap_or("")));
                input.insert("url".into(), json!(url));
                input.insert("title".into(), json!(s(args, "title").map(String::from).unwrap_or_else(|| url.clone())));
                input.insert("sourceType".into(), json!(source.to_ascii_lowercase()));
                if let Some(icon) = s(args, "displayIconUrl") {
                    input.insert("iconUrl".into(), json!(icon));
                }
                if let Some(id) = s(args, "id") {
                    input.insert("id".into(), json!(id));
                }
                let id = self.create("Attachment", Value::Object(input))?;
                return Ok(Done::one("Attachment", &id));
            }
            "fileUpload" => {
                // A signed upload target: the bytes go to `uploadUrl` (PUT, served by the twin
                // without keeping them); `assetUrl` is what attachments and markdown link to.
                let filename = s(args, "filename").unwrap_or("file").to_string();
                let size = args.get("size").and_then(Value::as_i64).unwrap_or(0);
                let id = self.w.new_id();
                let org = self.w.org.clone();
                let enc: String = filename.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect();
                let headers = vec![
                    json!({"key": "x-goog-content-length-range", "value": format!("{size},{size}")}),
                    json!({"key": "cache-control", "value": "public, max-age=31536000"}),
                    json!({"key": "Content-Disposition", "value": format!("attachment; filename=\"{filename}\"")}),
                ];
                let upload = json!({
                    "uploadUrl": format!("{}/uploads/{org}/{id}/{enc}", self.ctx.base_url),
                    "assetUrl": format!("https://uploads.linear.app/{org}/{id}/{enc}"),
                    "contentType": s(args, "contentType").unwrap_or("application/octet-stream"),
                    "filename": filename,
                    "size": size,
                    "headers": headers,
                    "metaData": args.get("metaData").cloned().unwrap_or(Value::Null),
                });
                let mut d = Done { entity: None, list: Vec::new(), extra: Map::new() };
                d.extra.insert("uploadFile".into(), upload);
                return Ok(d);
            }
            "webhookRotateSecret" => {
                let id = self.id_arg("Webhook", args)?;
                let secret = format!("lin_wh_{}", self.w.new_id().replace('-', ""));
                let s2 = secret.clone();
                self.update_with("Webhook", &id, |e| {
                    e.insert("secret".into(), json!(s2));
                })?;
                let mut d = Done::one("Webhook", &id);
                d.extra.insert("secret".into(), json!(secret));
                return Ok(d);
            }
            "issueBatchCreate" => {
                let issues = args.pointer("/input/issues").and_then(Value::as_array).cloned().unwrap_or_default();
                let mut list = Vec::new();
                for i in issues {
                    list.push(("Issue".to_string(), self.create("Issue", i)?));
                }
                return Ok(Done { entity: None, list, extra: Map::new() });
            }
            "issueBatchUpdate" => {
                let ids = args.get("ids").and_then(Value::as_array).cloned().unwrap_or_default();
                let input = args.get("input").cloned().unwrap_or(json!({}));
                let mut list = Vec::new();
                for id in ids {
                    let id = self.id_arg("Issue", &json!({"id": id}))?;
                    self.update("Issue", &id, &input)?;
                    list.push(("Issue".to_string(), id));
                }
                return Ok(Done { entity: None, list, extra: Map::new() });
            }
            "organizationUpdate" => {
                let org = self.w.org.clone();
                let input = args.get("input").cloned().unwrap_or(json!({}));
                self.update("Organization", &org, &input)?;
                return Ok(Done::one("Organization", &org));
            }
            "userSuspend" | "userUnsuspend" => {
                let id = self.id_arg("User", args)?;
                let active = name == "userUnsuspend";
                self.update_with("User", &id, |e| {
                    e.insert("active".into(), json!(active));
                })?;
                return Ok(Done::one("User", &id));
            }
            "notificationMarkReadAll" | "notificationMarkUnreadAll" | "notificationArchiveAll" | "notificationSnoozeAll" | "notificationUnsnoozeAll" => {
                let now = self.now();
                let viewer = self.w.viewer.clone();
                let mut list = Vec::new();
                for t in gql::possible_types("Notification") {
                    let ids: Vec<String> = self.w.all(&t).filter(|(_, n)| s(&Value::Object((*n).clone()), "userId") == Some(viewer.as_str())).map(|(id, _)| id.clone()).collect();
                    for id in ids {
                        let (field, value) = match name {
                            "notificationMarkReadAll" => ("readAt", json!(now)),
                            "notificationMarkUnreadAll" => ("readAt", Value::Null),
                            "notificationArchiveAll" => ("archivedAt", json!(now)),
                            "notificationSnoozeAll" => ("snoozedUntilAt", args.get("snoozedUntilAt").cloned().unwrap_or(Value::Null)),
                            _ => ("snoozedUntilAt", Value::Null),
                        };
                        self.update_with(&t, &id, |e| {
                            e.insert(field.into(), value.clone());
                        })?;
                        list.push((t.clone(), id));
                    }
                }
                return Ok(Done { entity: None, list, extra: Map::new() });
            }
            "issueToReleaseDeleteByIssueAndRelease" => {
                let issue = self.id_arg("Issue", args)?;
                let issue = self.w.issue_id(s(args, "issueId").unwrap_or(&issue)).unwrap_or(issue);
                let release = s(args, "releaseId").unwrap_or("").to_string();
                let found = self.w.all("IssueToRelease").find(|(_, e)| e.get("issueId").and_then(Value::as_str) == Some(issue.as_str()) && e.get("releaseId").and_then(Value::as_str) == Some(release.as_str())).map(|(id, _)| id.clone());
                let id = found.ok_or_else(|| self.ctx.not_found("IssueToRelease"))?;
                let before = self.w.remove("IssueToRelease", &id);
                self.record("IssueToRelease", &id, before.as_ref(), None);
                return Ok(Done::one("IssueToRelease", &id));
            }
            "userSettingsUpdate" => {
                let now = self.now();
                let id = user_settings(self.w, &now);
                let input = args.get("input").cloned().unwrap_or(json!({}));
                self.update("UserSettings", &id, &input)?;
                return Ok(Done::one("UserSettings", &id));
            }
            "userChangeRole" => {
                let id = self.id_arg("User", args)?;
                let role = s(args, "role").unwrap_or("user").to_string();
                self.update_with("User", &id, |e| {
                    e.insert("admin".into(), json!(role == "admin" || role == "owner"));
                    e.insert("owner".into(), json!(role == "owner"));
                    e.insert("guest".into(), json!(role == "guest"));
                    e.insert("role".into(), json!(role));
                })?;
                return Ok(Done::one("User", &id));
            }
            "customerUpsert" => {
                let input = args.get("input").cloned().unwrap_or(json!({}));
                let key = s(&input, "id").map(String::from);
                let ext = s(&input, "externalId").map(String::from);
                let existing = self.w.all("Customer").find(|(id, c)| Some(id.as_str()) == key.as_deref() || (ext.is_some() && c.get("externalIds").and_then(Value::as_array).is_some_and(|a| a.iter().any(|x| x.as_str() == ext.as_deref())))).map(|(id, _)| id.clone());
                let id = match existing {
                    Some(id) => {
                        self.update("Customer", &id, &input)?;
                        id
                    }
                    None => {
                        let mut input = input;
                        if let Some(e) = ext {
                            input["externalIds"] = json!([e]);
                            input.as_object_mut().map(|m| m.remove("externalId"));
                        }
                        self.create("Customer", input)?
                    }
                };
                return Ok(Done::one("Customer", &id));
            }
            "resendOrganizationInvite" | "resendOrganizationInviteByEmail" => {
                let id = match s(args, "email") {
                    Some(email) => self.w.all("OrganizationInvite").find(|(_, i)| i.get("email").and_then(Value::as_str).is_some_and(|e| e.eq_ignore_ascii_case(email))).map(|(id, _)| id.clone()).ok_or_else(|| self.ctx.not_found("OrganizationInvite"))?,
                    None => self.id_arg("OrganizationInvite", args)?,
                };
                return Ok(Done::one("OrganizationInvite", &id));
            }
            "issueReminder" => {
                let id = self.id_arg("Issue", args)?;
                return Ok(Done::one("Issue", &id));
            }
            "cycleShiftAll" => return self.cycle_shift_all(args),
            "cycleStartUpcomingCycleToday" => return self.cycle_start_today(args),
            "teamCyclesDelete" => return self.team_cycles_delete(args),
            "customerMerge" => return self.customer_merge(args),
            "customerUnsync" => {
                // The customer stops following its data source: the external ids that mapped
                // it there are cleared, and nothing updates it from there again.
                let id = self.id_arg("Customer", args)?;
                self.update_with("Customer", &id, |c| {
                    c.insert("externalIds".into(), json!([]));
                    c.insert("mainSourceId".into(), Value::Null);
                    c.remove("integrationId");
                })?;
                return Ok(Done::one("Customer", &id));
            }
            "customerNeedCreateFromAttachment" => return self.need_from_attachment(args),
            "projectMilestoneMove" => return self.milestone_move(args),
            "projectReassignStatus" => return self.reassign_project_status(args),
            "createProjectUpdateReminder" | "createInitiativeUpdateReminder" => return self.update_reminder(name, args),
            "agentSessionCreateOnIssue" | "agentSessionCreateOnComment" => return self.agent_session_create(name, args),
            "agentSessionUpdateExternalUrl" => return self.agent_session_urls(args),
            // Front's app edits the description as any edit does (history, webhooks, updatedAt).
            "issueDescriptionUpdateFromFront" => {
                let id = self.id_arg("Issue", args)?;
                self.update("Issue", &id, &json!({"description": args.get("description")}))?;
                return Ok(Done::one("Issue", &id));
            }
            _ => {}
        }
        if let Some(done) = crate::families::dispatch(self, name, args) {
            return done;
        }
        let Some((ty, verb)) = generic(name) else {
            return Err(self.ctx.unsupported(&format!("Mutation.{name}")));
        };
        let ty = match (verb, s(args, "id")) {
            ("Create", _) | (_, None) => ty,
            (_, Some(id)) if !gql::is_object(&ty) => self.concrete(&ty, id),
            _ => ty,
        };
        match verb {
            "Create" => {
                let input = args.get("input").cloned().unwrap_or_else(|| args.clone());
                crate::families::rules::blank_text(self, name, &ty, &input)?;
                let ty = if gql::is_object(&ty) { ty } else { pick_implementer(&ty, &input) };
                let id = self.create(&ty, input)?;
                Ok(Done::one(&ty, &id))
            }
            "Update" => {
                let id = self.id_arg(&ty, args)?;
                let input = args.get("input").cloned().unwrap_or(json!({}));
                crate::families::rules::blank_text(self, name, &ty, &input)?;
                self.update(&ty, &id, &input)?;
                Ok(Done::one(&ty, &id))
            }
            "Delete" => {
                let id = self.id_arg(&ty, args)?;
                // A delete that answers an archive payload (issues, projects, documents,
                // releases) moves the entity to Linear's trash: archived and flagged, restored
                // by unarchiving. Only `permanentlyDelete` on an issue removes it.
                let trashes = crate::tables::field("Mutation", name).is_some_and(|f| f.ty.ends_with("ArchivePayload"));
                if trashes && !args.get("permanentlyDelete").and_then(Value::as_bool).unwrap_or(false) {
                    let now = self.now();
                    self.update_with(&ty, &id, |e| {
                        e.insert("archivedAt".into(), json!(now));
                        e.insert("trashed".into(), json!(true));
                    })?;
                    return Ok(Done::one(&ty, &id));
                }
                let before = self.w.remove(&ty, &id);
                self.record(&ty, &id, before.as_ref(), None);
                crate::families::rules::after_delete(self, &ty, &id)?;
                Ok(Done::one(&ty, &id))
            }
            "Archive" | "Unarchive" => {
                let id = self.id_arg(&ty, args)?;
                if verb == "Archive" {
                    crate::families::rules::before_archive(self, &ty, &id)?;
                }
                let v = if verb == "Archive" { json!(self.now()) } else { Value::Null };
                let trash = args.get("trash").and_then(Value::as_bool);
                self.update_with(&ty, &id, |e| {
                    e.insert("archivedAt".into(), v.clone());
                    if verb == "Unarchive" {
                        e.remove("trashed");
                    } else if let Some(t) = trash {
                        e.insert("trashed".into(), json!(t));
                    }
                })?;
                Ok(Done::one(&ty, &id))
            }
            "Retire" | "Restore" => {
                let id = self.id_arg(&ty, args)?;
                let v = if verb == "Retire" { json!(self.now()) } else { Value::Null };
                self.update_with(&ty, &id, |e| {
                    e.insert("retiredAt".into(), v.clone());
                })?;
                Ok(Done::one(&ty, &id))
            }
            _ => {
                // AddLabel / RemoveLabel.
                let id = self.id_arg(&ty, args)?;
                let label = s(args, "labelId").unwrap_or("").to_string();
                let label_ty = if ty == "Issue" { "IssueLabel".to_string() } else { format!("{ty}Label") };
                if find_typed(self.w, &label_ty, &label).is_none() {
                    return Err(self.ctx.not_found(&label_ty));
                }
                let add = verb == "AddLabel";
                if add && ty == "Issue" {
                    let issue = self.w.get("Issue", &id).ok_or_else(|| self.ctx.not_found("Issue"))?;
                    let team = issue.get("teamId").and_then(Value::as_str).unwrap_or("").to_string();
                    let mut labels = ids_of(issue.get("labelIds"));
                    labels.push(label.clone());
                    self.check_labels(&team, &labels)?;
                }
                self.update_with(&ty, &id, |e| edit_ids(e, "labelIds", &[label.clone()], add))?;
                Ok(Done::one(&ty, &id))
            }
        }
    }

    /// Change an entity in place, stamp `updatedAt`, and record the change.
    pub(crate) fn update_with(&mut self, ty: &str, id: &str, f: impl FnOnce(&mut Entity)) -> Result<(), FieldError> {
        let now = self.now();
        let Some(e) = self.w.get_mut(ty, id) else { return Err(self.ctx.not_found(ty)) };
        let before = e.clone();
        f(e);
        e.insert("updatedAt".into(), json!(now));
        let after = e.clone();
        if ty == "Issue" {
            self.history(id, &before, &after);
        }
        self.record(ty, id, Some(&before), Some(&after));
        self.notify(ty, id, Some(&before), &after);
        Ok(())
    }

    /// Linear's inbox: an issue assigned to someone else notifies them; a comment notifies
    /// the issue's subscribers (never the one who acted).
    fn notify(&mut self, ty: &str, id: &str, before: Option<&Entity>, after: &Entity) {
        let actor = self.w.viewer.clone();
        let mut out: Vec<(String, String, String, Option<String>)> = Vec::new();
        match ty {
            "Issue" => {
                let was = before.and_then(|b| b.get("assigneeId")).and_then(Value::as_str);
                if let Some(a) = after.get("assigneeId").and_then(Value::as_str) {
                    if Some(a) != was && a != actor {
                        out.push((a.to_string(), "issueAssignedToYou".into(), id.to_string(), None));
                    }
                }
            }
            "Comment" if before.is_none() => {
                let Some(issue) = after.get("issueId").and_then(Value::as_str) else { return };
                let subs: Vec<String> = self.w.get("Issue", issue).and_then(|i| i.get("subscriberIds")).and_then(Value::as_array).map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default();
                for u in subs {
                    if u != actor {
                        out.push((u, "issueNewComment".into(), issue.to_string(), Some(id.to_string())));
                    }
                }
            }
            _ => {}
        }
        for (user, kind, issue, comment) in out {
            let nid = self.w.new_id();
            let now = self.now();
            let team = self.w.str_field("Issue", &issue, "teamId").unwrap_or("").to_string();
            let title = self.w.str_field("Issue", &issue, "title").unwrap_or("").to_string();
            let e: Entity = [
                ("id", json!(nid)), ("type", json!(kind)), ("userId", json!(user)), ("actorId", json!(actor)), ("issueId", json!(issue)),
                ("teamId", json!(team)), ("commentId", json!(comment)), ("title", json!(title)), ("category", json!(if kind == "issueAssignedToYou" { "assignments" } else { "commentsAndReplies" })),
                ("groupingKey", json!(format!("issue-{issue}"))), ("createdAt", json!(now)), ("updatedAt", json!(now)),
            ]
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            self.w.insert("IssueNotification", &nid, e.clone());
            self.record("IssueNotification", &nid, None, Some(&e));
        }
    }

    pub(crate) fn create(&mut self, ty: &str, input: Value) -> Result<String, FieldError> {
        let Value::Object(input) = input else { return Err(self.ctx.invalid_input("input must be an object".into(), "Invalid input.")) };
        // Attachments are unique by URL on an issue: creating one again updates it.
        if ty == "Attachment" {
            let issue = input.get("issueId").and_then(Value::as_str).and_then(|i| self.resolve("Issue", i));
            let url = input.get("url").and_then(Value::as_str);
            let same = self.w.all("Attachment").find(|(_, a)| a.get("issueId").and_then(Value::as_str) == issue.as_deref() && a.get("url").and_then(Value::as_str) == url && url.is_some()).map(|(id, _)| id.clone());
            if let Some(id) = same {
                let mut patch = input.clone();
                patch.remove("id");
                patch.remove("issueId");
                self.update("Attachment", &id, &Value::Object(patch))?;
                return Ok(id);
            }
        }
        let now = self.now();
        let id = match input.get("id").and_then(Value::as_str) {
            Some(id) if self.w.get(ty, id).is_some() => {
                return Err(self.ctx.invalid_input(format!("Argument Validation Error - {ty} with id {id} already exists"), "An entity with this id already exists."));
            }
            Some(id) => id.to_string(),
            None => self.w.new_id(),
        };
        let mut e = Entity::new();
        e.insert("id".into(), json!(id));
        e.insert("createdAt".into(), json!(now));
        e.insert("updatedAt".into(), json!(now));
        for (k, v) in input {
            if k != "id" && !v.is_null() {
                e.insert(k, v);
            }
        }
        self.normalize_refs(ty, &mut e)?;
        self.normalize_dates(ty, &mut e)?;
        if ty == "Issue" {
            let team = e.get("teamId").and_then(Value::as_str).unwrap_or("");
            self.check_labels(team, &ids_of(e.get("labelIds")))?;
        }
        let viewer = self.w.viewer.clone();
        if has_field(ty, "creator") && !e.contains_key("creatorId") {
            e.insert("creatorId".into(), json!(viewer));
        }
        // (A favorite's `user` is the user it points at; its owner is set in `on_create`.)
        if has_field(ty, "user") && !e.contains_key("userId") && ty != "TeamMembership" && ty != "Favorite" {
            e.insert("userId".into(), json!(viewer));
        }
        self.on_create(ty, &id, &mut e)?;
        crate::families::rules::before_create(self, ty, &e)?;
        // Recorded before it is stored, so the entity moves into the world uncopied.
        self.record(ty, &id, None, Some(&e));
        self.notify(ty, &id, None, &e);
        self.w.insert(ty, &id, e);
        if ty == "Team" {
            self.team_defaults(&id)?;
        }
        if ty == "ProjectUpdate" || ty == "InitiativeUpdate" {
            self.project_update_posted(ty, &id)?;
        }
        Ok(id)
    }

    pub(crate) fn update(&mut self, ty: &str, id: &str, input: &Value) -> Result<(), FieldError> {
        let mut patch = input.as_object().cloned().unwrap_or_default();
        patch.remove("id");
        let mut probe = patch.clone();
        self.normalize_refs(ty, &mut probe)?;
        self.normalize_dates(ty, &mut probe)?;
        crate::families::rules::before_update(self, ty, id, &probe)?;
        if ty == "Issue" {
            self.check_issue_update(id, &probe)?;
            self.move_team(id, &mut probe)?;
            // The labels the issue will have, in the team it will be in.
            let issue = self.w.get("Issue", id);
            let field = |k: &str| probe.get(k).or_else(|| issue.and_then(|i| i.get(k)));
            let team = field("teamId").and_then(Value::as_str).unwrap_or("").to_string();
            let mut labels = ids_of(field("labelIds"));
            labels.extend(ids_of(probe.get("addedLabelIds")));
            let removed = ids_of(probe.get("removedLabelIds"));
            labels.retain(|l| !removed.contains(l));
            self.check_labels(&team, &labels)?;
        }
        let now = self.now();
        let state_type = probe.get("stateId").and_then(Value::as_str).and_then(|s| self.w.str_field("WorkflowState", s, "type")).map(String::from);
        let title_changed = probe.contains_key("title");
        let identifier = probe.get("identifier").and_then(Value::as_str).or_else(|| self.w.str_field(ty, id, "identifier")).unwrap_or("").to_string();
        let assignee_name = probe
            .get("assigneeId")
            .and_then(Value::as_str)
            .and_then(|a| self.w.str_field("User", a, "displayName"))
            .map(String::from);
        if ty == "Comment" && probe.contains_key("body") {
            probe.insert("editedAt".into(), json!(now));
        }
        let project_status = if ty == "Project" { probe.get("statusId").and_then(Value::as_str).and_then(|s| self.w.str_field("ProjectStatus", s, "type")).map(String::from) } else { None };
        let new_assignee = if ty == "Issue" { probe.get("assigneeId").and_then(Value::as_str).map(String::from) } else { None };
        if ty == "IssueLabel" {
            if let Some(name) = probe.get("name").and_then(Value::as_str) {
                let team = self.w.get(ty, id).and_then(|e| e.get("teamId")).cloned().unwrap_or(Value::Null);
                if self.w.all("IssueLabel").any(|(lid, l)| lid != id && l.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(name)) && l.get("teamId").cloned().unwrap_or(Value::Null) == team) {
                    return Err(self.ctx.invalid_input("Argument Validation Error - duplicate label name".into(), "A label with this name already exists."));
                }
            }
        }
        self.update_with(ty, id, |e| {
            let added = probe.remove("addedLabelIds");
            let removed = probe.remove("removedLabelIds");
            let added_releases = probe.remove("addedReleaseIds");
            let removed_releases = probe.remove("removedReleaseIds");
            for (k, v) in probe {
                e.insert(k, v);
            }
            let ids = |v: Option<Value>| -> Vec<String> { v.and_then(|v| v.as_array().cloned()).unwrap_or_default().iter().filter_map(|x| x.as_str().map(String::from)).collect() };
            edit_ids(e, "labelIds", &ids(added), true);
            edit_ids(e, "labelIds", &ids(removed), false);
            edit_ids(e, "releaseIds", &ids(added_releases), true);
            edit_ids(e, "releaseIds", &ids(removed_releases), false);
            if let Some(a) = &new_assignee {
                edit_ids(e, "subscriberIds", std::slice::from_ref(a), true);
            }
            if let Some(kind) = &project_status {
                project_status_moved(e, kind, &now);
            }
            if let Some(t) = state_type {
                for (field, when) in [("startedAt", "started"), ("completedAt", "completed"), ("canceledAt", "canceled")] {
                    if t == when {
                        e.insert(field.into(), json!(now));
                    } else if field != "startedAt" {
                        e.insert(field.into(), Value::Null);
                    }
                }
            }
            if title_changed && !identifier.is_empty() {
                let t = e.get("title").and_then(Value::as_str).unwrap_or("").to_string();
                let who = assignee_name.clone().or_else(|| e.get("_branchUser").and_then(Value::as_str).map(String::from)).unwrap_or_default();
                e.insert("branchName".into(), json!(branch(&who, &identifier, &t)));
            }
        })
    }

    /// What Linear refuses in an issue update that the schema's types allow: a priority
    /// outside 0-4, a state of another team, an issue as its own parent or ancestor.
    fn check_issue_update(&self, id: &str, probe: &Entity) -> Result<(), FieldError> {
        check_priority(self.ctx, probe)?;
        let team = probe.get("teamId").and_then(Value::as_str).or_else(|| self.w.str_field("Issue", id, "teamId")).unwrap_or("");
        if let Some(st) = probe.get("stateId").and_then(Value::as_str) {
            if self.w.str_field("WorkflowState", st, "teamId") != Some(team) {
                return Err(self.ctx.invalid_input("Argument Validation Error - the state does not belong to the issue's team".into(), "The workflow state does not belong to the issue's team."));
            }
        }
        if let Some(parent) = probe.get("parentId").and_then(Value::as_str) {
            // Walk up from the new parent: meeting the issue itself would close a loop.
            let mut at = Some(parent.to_string());
            let mut steps = 0;
            while let Some(p) = at {
                if p == id {
                    return Err(self.ctx.invalid_input("Argument Validation Error - an issue cannot be its own parent or ancestor".into(), "An issue cannot be its own parent or a parent of its own parent."));
                }
                steps += 1;
                if steps > 10_000 {
                    break;
                }
                at = self.w.str_field("Issue", &p, "parentId").map(String::from);
            }
        }
        Ok(())
    }

    /// A project (or initiative) update posted: the project's health is the update's, and it
    /// is the last one.
    fn project_update_posted(&mut self, ty: &str, id: &str) -> Result<(), FieldError> {
        let parent = if ty == "InitiativeUpdate" { "Initiative" } else { "Project" };
        let Some(u) = self.w.get(ty, id) else { return Ok(()) };
        let Some(project) = u.get(&format!("{}Id", lcfirst(parent))).and_then(Value::as_str).map(String::from) else { return Ok(()) };
        let health = u.get("health").cloned().unwrap_or(Value::Null);
        let now = self.now();
        self.update_with(parent, &project, |p| {
            p.insert("health".into(), health);
            p.insert("healthUpdatedAt".into(), json!(now));
            p.insert("lastUpdateId".into(), json!(id));
        })
    }

    /// An issue moving to another team is renumbered in it (its old identifier kept in
    /// `previousIdentifiers`, still found), takes the new team's state of the same type unless
    /// the update names one, and leaves its old team's cycle.
    fn move_team(&mut self, id: &str, probe: &mut Entity) -> Result<(), FieldError> {
        let Some(team) = probe.get("teamId").and_then(Value::as_str).map(String::from) else { return Ok(()) };
        let Some(issue) = self.w.get("Issue", id) else { return Ok(()) };
        if issue.get("teamId").and_then(Value::as_str) == Some(team.as_str()) {
            return Ok(());
        }
        let old_ident = issue.get("identifier").and_then(Value::as_str).unwrap_or("").to_string();
        let mut previous: Vec<Value> = issue.get("previousIdentifiers").and_then(Value::as_array).cloned().unwrap_or_default();
        let state_type = issue.get("stateId").and_then(Value::as_str).and_then(|s| self.w.str_field("WorkflowState", s, "type")).unwrap_or("").to_string();
        let title = probe.get("title").or_else(|| issue.get("title")).and_then(Value::as_str).unwrap_or("").to_string();
        let who = issue.get("_branchUser").and_then(Value::as_str).unwrap_or("").to_string();
        let in_cycle = issue.get("cycleId").is_some_and(|c| !c.is_null());
        let key = self.w.str_field("Team", &team, "key").unwrap_or("").to_string();
        let number = {
            let t = self.w.get_mut("Team", &team).ok_or_else(|| self.ctx.not_found("Team"))?;
            let n = t.get("_seq").and_then(Value::as_u64).unwrap_or(0) + 1;
            t.insert("_seq".into(), json!(n));
            n
        };
        let ident = format!("{key}-{number}");
        if !old_ident.is_empty() {
            previous.push(json!(old_ident));
        }
        if !probe.contains_key("stateId") {
            let same_type = self
                .w
                .all("WorkflowState")
                .filter(|(_, s)| s.get("teamId").and_then(Value::as_str) == Some(team.as_str()) && s.get("type").and_then(Value::as_str) == Some(state_type.as_str()) && s.get("archivedAt").is_none_or(Value::is_null))
                .min_by(|(a, x), (b, y)| {
                    let pos = |s: &Entity| s.get("position").and_then(Value::as_f64).unwrap_or(0.0);
                    pos(x).total_cmp(&pos(y)).then_with(|| a.cmp(b))
                })
                .map(|(sid, _)| sid.clone());
            let state = same_type.or_else(|| default_state(self.w, &team)).ok_or_else(|| self.ctx.not_found("WorkflowState"))?;
            probe.insert("stateId".into(), json!(state));
        }
        probe.insert("number".into(), json!(number));
        probe.insert("identifier".into(), json!(ident));
        probe.insert("previousIdentifiers".into(), Value::Array(previous));
        probe.insert("branchName".into(), json!(branch(&who, &ident, &title)));
        if in_cycle && !probe.contains_key("cycleId") {
            probe.insert("cycleId".into(), Value::Null);
        }
        Ok(())
    }

    /// Relations given by identifier or key become ids, and every referenced entity must exist.
    fn normalize_refs(&self, ty: &str, e: &mut Entity) -> Result<(), FieldError> {
        let keys: Vec<String> = e.keys().cloned().collect();
        for k in keys {
            let Some(rel) = k.strip_suffix("Id") else {
                if let Some(rel) = k.strip_suffix("Ids") {
                    if let Some(arr) = e.get(&k).and_then(Value::as_array).cloned() {
                        let target = relation_type(ty, &format!("{rel}s")).or_else(|| relation_type(ty, rel));
                        let mut out = Vec::new();
                        for v in arr {
                            let id = v.as_str().unwrap_or("").to_string();
                            match &target {
                                Some(t) => match self.resolve(t, &id) {
                                    Some(id) => out.push(json!(id)),
                                    None => return Err(self.ctx.not_found(t)),
                                },
                                None => out.push(json!(id)),
                            }
                        }
                        e.insert(k.clone(), Value::Array(out));
                    }
                }
                continue;
            };
            let Some(id) = e.get(&k).and_then(Value::as_str).map(String::from) else { continue };
            // A reference the entity's type does not name as a field (`customViewCreate`'s
            // `projectId`, `teamCreate`'s `autoCloseStateId`) is typed by its own name, so a
            // reference to nothing is refused rather than stored.
            if let Some(t) = relation_type(ty, rel).or_else(|| referenced_type(rel)) {
                match self.resolve(&t, &id) {
                    Some(real) => {
                        e.insert(k.clone(), json!(real));
                    }
                    None => return Err(self.ctx.not_found(&t)),
                }
            }
        }
        Ok(())
    }

    /// Labels an issue may carry: its team's or the workspace's, and at most one of a group
    /// (Linear's label groups are exclusive).
    fn check_labels(&self, team: &str, labels: &[String]) -> Result<(), FieldError> {
        let mut groups: Vec<(&str, &str)> = Vec::new();
        for id in labels {
            let Some(l) = self.w.get("IssueLabel", id) else { continue };
            let name = l.get("name").and_then(Value::as_str).unwrap_or("");
            if l.get("teamId").and_then(Value::as_str).is_some_and(|t| t != team) {
                return Err(self.ctx.invalid_input(format!("Argument Validation Error - label {name:?} belongs to another team"), "The label belongs to another team than the issue."));
            }
            if let Some(group) = l.get("parentId").and_then(Value::as_str) {
                if let Some((other, _)) = groups.iter().find(|(_, g)| *g == group) {
                    let group_name = self.w.str_field("IssueLabel", group, "name").unwrap_or("");
                    return Err(self.ctx.invalid_input(
                        format!("Argument Validation Error - Only one label in a group can be applied: {other:?} and {name:?} are both in {group_name:?}"),
                        "Only one label in a group can be applied.",
                    ));
                }
                groups.push((name, group));
            }
        }
        Ok(())
    }

    /// Dates and times given as the entity's `DateTime` and `TimelessDate` fields are kept
    /// as Linear keeps them (see [`crate::dates::date_time`]); a value that is neither is
    /// refused.
    fn normalize_dates(&self, ty: &str, e: &mut Entity) -> Result<(), FieldError> {
        for (k, v) in e.iter_mut() {
            let Some(text) = v.as_str() else { continue };
            let kind = crate::tables::field(ty, k).map(|f| f.ty).filter(|t| *t == "DateTime" || *t == "TimelessDate");
            let normal = match kind {
                Some("DateTime") => crate::dates::date_time(text),
                Some(_) => crate::dates::timeless_date(text),
                None => continue,
            };
            match normal {
                Some(n) => *v = json!(n),
                None => {
                    let kind = kind.unwrap_or_default();
                    return Err(self.ctx.invalid_input(format!("Argument Validation Error - {k} must be a valid {kind}, got {text:?}"), &format!("{k} is not a valid date.")));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn resolve(&self, named: &str, id: &str) -> Option<String> {
        match named {
            "Issue" => self.w.issue_id(id),
            "Team" => self.w.team_id(id),
            _ => find_typed(self.w, named, id).map(|_| id.to_string()),
        }
    }

    fn on_create(&mut self, ty: &str, id: &str, e: &mut Entity) -> Result<(), FieldError> {
        let now = self.now();
        match ty {
            "Issue" => {
                let team = e.get("teamId").and_then(Value::as_str).unwrap_or("").to_string();
                let key = self.w.str_field("Team", &team, "key").unwrap_or("").to_string();
                let number = {
                    let t = self.w.get_mut("Team", &team).ok_or_else(|| self.ctx.not_found("Team"))?;
                    let n = t.get("_seq").and_then(Value::as_u64).unwrap_or(0) + 1;
                    t.insert("_seq".into(), json!(n));
                    n
                };
                if let Some(parent) = e.get("parentId").and_then(Value::as_str) {
                    if parent == id {
                        return Err(self.ctx.invalid_input("Argument Validation Error - an issue cannot be its own parent".into(), "An issue cannot be its own parent."));
                    }
                }
                if !e.contains_key("stateId") {
                    let state = default_state(self.w, &team).ok_or_else(|| self.ctx.not_found("WorkflowState"))?;
                    e.insert("stateId".into(), json!(state));
                } else if let Some(st) = e.get("stateId").and_then(Value::as_str) {
                    if self.w.str_field("WorkflowState", st, "teamId") != Some(team.as_str()) {
                        return Err(self.ctx.invalid_input("Argument Validation Error - the state does not belong to the issue's team".into(), "The workflow state does not belong to the issue's team."));
                    }
                }
                let identifier = format!("{key}-{number}");
                let title = e.get("title").and_then(Value::as_str).unwrap_or("").to_string();
                e.entry("title").or_insert(json!(""));
                e.insert("number".into(), json!(number));
                e.insert("identifier".into(), json!(identifier));
                e.entry("priority").or_insert(json!(0));
                e.entry("labelIds").or_insert(json!([]));
                e.entry("description").or_insert(Value::Null);
                e.entry("sortOrder").or_insert(json!(-(number as f64)));
                e.entry("boardOrder").or_insert(json!(0));
                e.entry("prioritySortOrder").or_insert(json!(0));
                check_priority(self.ctx, e)?;
                // The creator and the assignee follow the issue, with anyone the input names.
                let creator = e.get("creatorId").and_then(Value::as_str).unwrap_or("").to_string();
                let assignee = e.get("assigneeId").and_then(Value::as_str).map(String::from);
                let mut subscribers: Vec<String> = vec![creator.clone()];
                subscribers.extend(assignee);
                subscribers.extend(e.get("subscriberIds").and_then(Value::as_array).into_iter().flatten().filter_map(|v| v.as_str().map(String::from)));
                let mut seen = std::collections::BTreeSet::new();
                subscribers.retain(|s| !s.is_empty() && seen.insert(s.clone()));
                e.insert("subscriberIds".into(), json!(subscribers));
                let who = e.get("assigneeId").and_then(Value::as_str).and_then(|a| self.w.str_field("User", a, "displayName")).or_else(|| self.w.str_field("User", &creator, "displayName")).unwrap_or("").to_string();
                e.insert("_branchUser".into(), json!(who));
                e.insert("branchName".into(), json!(branch(&who, &identifier, &title)));
                let stype = e.get("stateId").and_then(Value::as_str).and_then(|s| self.w.str_field("WorkflowState", s, "type")).unwrap_or("").to_string();
                match stype.as_str() {
                    "started" => {
                        e.insert("startedAt".into(), json!(now));
                    }
                    "completed" => {
                        e.insert("completedAt".into(), json!(now));
                    }
                    "canceled" => {
                        e.insert("canceledAt".into(), json!(now));
                    }
                    _ => {}
                }
            }
            "Favorite" => {
                // The viewer's own favorite, typed by what it points at.
                e.insert("ownerId".into(), json!(self.w.viewer));
                let kinds = [("issueId", "issue"), ("projectId", "project"), ("cycleId", "cycle"), ("labelId", "label"), ("projectLabelId", "projectLabel"), ("customViewId", "customView"), ("documentId", "document"), ("initiativeId", "initiative"), ("roadmapId", "roadmap"), ("userId", "user"), ("predefinedViewType", "predefinedView")];
                if !e.contains_key("type") {
                    let kind = kinds.iter().find(|(k, _)| e.get(*k).is_some_and(|v| !v.is_null())).map_or("folder", |(_, t)| t);
                    e.insert("type".into(), json!(kind));
                }
            }
            "ProjectUpdate" | "InitiativeUpdate" => {
                e.entry("health").or_insert(json!("onTrack"));
            }
            "Comment" => {
                // Commenting on an issue subscribes the author to it.
                if let (Some(issue), Some(user)) = (e.get("issueId").and_then(Value::as_str).map(String::from), e.get("userId").and_then(Value::as_str).map(String::from)) {
                    let subscribed = self.w.get("Issue", &issue).and_then(|i| i.get("subscriberIds")).and_then(Value::as_array).is_some_and(|a| a.iter().any(|s| s.as_str() == Some(user.as_str())));
                    // Recorded, but not an edit of the issue: no updatedAt, no webhook.
                    if let Some(i) = self.w.get_mut("Issue", &issue).filter(|_| !subscribed) {
                        let before = i.clone();
                        edit_ids(i, "subscriberIds", std::slice::from_ref(&user), true);
                        let after = i.clone();
                        self.record("Issue", &issue, Some(&before), Some(&after));
                    }
                }
                if !e.contains_key("issueId") && !e.contains_key("projectUpdateId") && !e.contains_key("documentContentId") && !e.contains_key("initiativeUpdateId") {
                    return Err(self.ctx.invalid_input("Argument Validation Error - issueId must be set".into(), "A comment needs an issue."));
                }
                e.entry("body").or_insert(json!(""));
                if let Some(parent) = e.get("parentId").and_then(Value::as_str).map(String::from) {
                    let p = self.w.get("Comment", &parent).ok_or_else(|| self.ctx.not_found("Comment"))?;
                    if p.get("issueId") != e.get("issueId") {
                        return Err(self.ctx.invalid_input("Argument Validation Error - the parent comment is on another issue".into(), "The parent comment belongs to another issue."));
                    }
                    // Linear threads are one level deep: a reply to a reply joins its thread.
                    if let Some(root) = p.get("parentId").and_then(Value::as_str) {
                        e.insert("parentId".into(), json!(root));
                    }
                }
            }
            "IssueLabel" => {
                let name = e.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let team = e.get("teamId").cloned().unwrap_or(Value::Null);
                if self.w.all("IssueLabel").any(|(_, l)| l.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case(&name)) && l.get("teamId").cloned().unwrap_or(Value::Null) == team) {
                    return Err(self.ctx.invalid_input("Argument Validation Error - duplicate label name".into(), "A label with this name already exists."));
                }
                e.entry("color").or_insert(json!("#bec2c8"));
                e.entry("isGroup").or_insert(json!(false));
                // Labels nest one level: a label's parent is a group, and a group has none.
                if let Some(parent) = e.get("parentId").and_then(Value::as_str) {
                    if e.get("isGroup") == Some(&json!(true)) {
                        return Err(self.ctx.invalid_input("Argument Validation Error - a label group cannot have a parent".into(), "Label groups cannot be nested."));
                    }
                    if self.w.get("IssueLabel", parent).and_then(|p| p.get("isGroup")) != Some(&json!(true)) {
                        return Err(self.ctx.invalid_input("Argument Validation Error - parent label is not a group".into(), "The parent label is not a group."));
                    }
                }
            }
            "Team" => {
                let key = e.get("key").and_then(Value::as_str).map(|k| k.to_ascii_uppercase()).unwrap_or_else(|| {
                    e.get("name").and_then(Value::as_str).unwrap_or("TEAM").chars().filter(|c| c.is_ascii_alphanumeric()).take(3).collect::<String>().to_ascii_uppercase()
                });
                if self.w.team_id(&key).is_some() {
                    return Err(self.ctx.invalid_input("Argument Validation Error - team key already in use".into(), "A team with this key already exists."));
                }
                e.insert("key".into(), json!(key));
                e.insert("_seq".into(), json!(0));
                e.entry("private").or_insert(json!(false));
                e.entry("cyclesEnabled").or_insert(json!(false));
                e.entry("timezone").or_insert(json!("America/Los_Angeles"));
                e.entry("issueEstimationType").or_insert(json!("notUsed"));
                e.entry("issueEstimationAllowZero").or_insert(json!(false));
                e.entry("issueEstimationExtended").or_insert(json!(false));
            }
            "WorkflowState" => {
                let team = e.get("teamId").and_then(Value::as_str).unwrap_or("").to_string();
                let n = self.w.all("WorkflowState").filter(|(_, s)| s.get("teamId").and_then(Value::as_str) == Some(team.as_str())).count();
                e.entry("position").or_insert(json!(n));
            }
            "Cycle" => {
                let team = e.get("teamId").and_then(Value::as_str).unwrap_or("").to_string();
                let n = self.w.all("Cycle").filter(|(_, s)| s.get("teamId").and_then(Value::as_str) == Some(team.as_str())).count() + 1;
                e.entry("number").or_insert(json!(n));
                e.entry("progress").or_insert(json!(0));
            }
            "Webhook" => {
                if !e.contains_key("secret") {
                    let secret = format!("lin_wh_{}", self.w.new_id().replace('-', ""));
                    e.insert("secret".into(), json!(secret));
                }
                e.entry("enabled").or_insert(json!(true));
                e.entry("resourceTypes").or_insert(json!([]));
                let all = e.get("teamId").is_none();
                e.entry("allPublicTeams").or_insert(json!(all));
            }
            "Project" => {
                e.entry("progress").or_insert(json!(0));
                if !e.contains_key("statusId") {
                    if let Some((sid, _)) = self.w.all("ProjectStatus").min_by_key(|(_, s)| s.get("position").and_then(Value::as_i64).unwrap_or(0)) {
                        e.insert("statusId".into(), json!(sid));
                    }
                }
                let kind = e.get("statusId").and_then(Value::as_str).and_then(|s| self.w.str_field("ProjectStatus", s, "type")).unwrap_or("backlog").to_string();
                project_status_moved(e, &kind, &now);
                e.entry("slugId").or_insert_with(|| json!(crate::model::slug_id(id)));
            }
            "Document" | "Initiative" | "AgentSession" => {
                e.entry("slugId").or_insert_with(|| json!(crate::model::slug_id(id)));
            }
            "Release" | "ReleasePipeline" | "ReleaseNote" | "AgentSkill" => {
                if !e.contains_key("slugId") {
                    let base = e.get("name").or_else(|| e.get("title")).and_then(Value::as_str).unwrap_or("").to_string();
                    e.insert("slugId".into(), json!(slug(&base)));
                }
                // A release starts in its pipeline's first stage.
                if ty == "Release" && e.get("stageId").is_none_or(Value::is_null) {
                    let pipeline = e.get("pipelineId").and_then(Value::as_str).unwrap_or("").to_string();
                    let first = self
                        .w
                        .all("ReleaseStage")
                        .filter(|(_, s)| s.get("pipelineId").and_then(Value::as_str) == Some(pipeline.as_str()))
                        .min_by(|a, b| a.1.get("position").and_then(Value::as_f64).unwrap_or(0.0).total_cmp(&b.1.get("position").and_then(Value::as_f64).unwrap_or(0.0)))
                        .map(|(id, _)| id.clone());
                    if let Some(s) = first {
                        e.insert("stageId".into(), json!(s));
                    }
                }
            }
            "OrganizationDomain" => crate::families::domain_created(self.w, e),
            "EmailIntakeAddress" => {
                let address = crate::families::intake_address(self.w, e);
                e.insert("address".into(), json!(address));
            }
            // The one who invites is the inviter.
            "OrganizationInvite" => {
                e.entry("inviterId").or_insert_with(|| json!(self.w.viewer.clone()));
            }
            // A push subscription is the device of the user who registered it.
            "PushSubscription" => {
                e.insert("userId".into(), json!(self.w.viewer.clone()));
            }
            "TeamMembership" => {
                if !e.contains_key("userId") {
                    e.insert("userId".into(), json!(self.w.viewer.clone()));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A new team gets Linear's default workflow and its creator as a member.
    fn team_defaults(&mut self, team: &str) -> Result<(), FieldError> {
        let defaults = [("Backlog", "backlog", "#bec2c8"), ("Todo", "unstarted", "#e2e2e2"), ("In Progress", "started", "#f2c94c"), ("Done", "completed", "#5e6ad2"), ("Canceled", "canceled", "#95a2b3")];
        for (i, (name, kind, color)) in defaults.iter().enumerate() {
            self.create("WorkflowState", json!({"name": name, "type": kind, "color": color, "position": i, "teamId": team}))?;
        }
        let viewer = self.w.viewer.clone();
        self.create("TeamMembership", json!({"teamId": team, "userId": viewer, "owner": true}))?;
        // New issues start in the backlog, and the team says so.
        if let Some(backlog) = default_state(self.w, team) {
            self.update_with("Team", team, |t| {
                t.insert("defaultIssueStateId".into(), json!(backlog));
            })?;
        }
        Ok(())
    }

    /// Issue history: one entry per update that changed what Linear tracks.
    fn history(&mut self, issue: &str, before: &Entity, after: &Entity) {
        let mut h = Entity::new();
        let pairs = [("stateId", "fromStateId", "toStateId"), ("assigneeId", "fromAssigneeId", "toAssigneeId"), ("priority", "fromPriority", "toPriority"), ("estimate", "fromEstimate", "toEstimate"), ("title", "fromTitle", "toTitle"), ("parentId", "fromParentId", "toParentId"), ("projectId", "fromProjectId", "toProjectId"), ("cycleId", "fromCycleId", "toCycleId"), ("dueDate", "fromDueDate", "toDueDate")];
        for (f, from, to) in pairs {
            if before.get(f) != after.get(f) {
                h.insert(from.into(), before.get(f).cloned().unwrap_or(Value::Null));
                h.insert(to.into(), after.get(f).cloned().unwrap_or(Value::Null));
            }
        }
        let ids = |e: &Entity| -> Vec<String> { e.get("labelIds").and_then(Value::as_array).map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default() };
        let (b, a) = (ids(before), ids(after));
        let added: Vec<&String> = a.iter().filter(|x| !b.contains(x)).collect();
        let removed: Vec<&String> = b.iter().filter(|x| !a.contains(x)).collect();
        if !added.is_empty() {
            h.insert("addedLabelIds".into(), json!(added));
        }
        if !removed.is_empty() {
            h.insert("removedLabelIds".into(), json!(removed));
        }
        if before.get("archivedAt") != after.get("archivedAt") {
            h.insert("archived".into(), json!(after.get("archivedAt").is_some_and(|v| !v.is_null())));
        }
        if h.is_empty() {
            return;
        }
        let id = self.w.new_id();
        let now = self.now();
        h.insert("id".into(), json!(id));
        h.insert("issueId".into(), json!(issue));
        h.insert("actorId".into(), json!(self.w.viewer.clone()));
        h.insert("createdAt".into(), json!(now));
        h.insert("updatedAt".into(), json!(now));
        self.w.insert("IssueHistory", &id, h);
    }

    /// Signed deliveries to every enabled webhook listening for this resource type.
    fn webhooks(&mut self, ty: &str, id: &str, action: &str, e: &Entity, before: Option<&Entity>) {
        if !["Issue", "Comment", "IssueLabel", "Project", "ProjectUpdate", "Cycle", "Reaction", "Document", "Attachment"].contains(&ty) {
            return;
        }
        let team = match ty {
            "Issue" | "IssueLabel" | "Cycle" => e.get("teamId").and_then(Value::as_str).map(String::from),
            "Comment" => e.get("issueId").and_then(Value::as_str).and_then(|i| self.w.str_field("Issue", i, "teamId")).map(String::from),
            _ => None,
        };
        let hooks: Vec<(String, String, String)> = self
            .w
            .all("Webhook")
            .filter(|(_, h)| h.get("enabled").and_then(Value::as_bool).unwrap_or(true) && h.get("archivedAt").is_none_or(Value::is_null))
            .filter(|(_, h)| h.get("resourceTypes").and_then(Value::as_array).is_some_and(|a| a.iter().any(|r| r.as_str() == Some(ty))))
            .filter(|(_, h)| {
                h.get("allPublicTeams").and_then(Value::as_bool).unwrap_or(false)
                    || h.get("teamId").and_then(Value::as_str).is_none()
                    || team.as_deref().is_none_or(|t| h.get("teamId").and_then(Value::as_str) == Some(t))
            })
            .map(|(hid, h)| (hid.clone(), h.get("url").and_then(Value::as_str).unwrap_or("").to_string(), h.get("secret").and_then(Value::as_str).unwrap_or("").to_string()))
            .collect();
        if hooks.is_empty() {
            return;
        }
        let now = self.now();
        let ts = chrono::DateTime::parse_from_rfc3339(&now).map(|t| t.timestamp_millis()).unwrap_or(0);
        let viewer = self.w.viewer.clone();
        let actor_name = self.w.str_field("User", &viewer, "name").unwrap_or("").to_string();
        let org = self.w.org.clone();
        for (hid, url, secret) in hooks {
            let mut body = json!({
                "action": action,
                "actor": {"id": viewer, "name": actor_name, "type": "user"},
                "createdAt": now,
                "data": public(e),
                "type": ty,
                "organizationId": org,
                "webhookTimestamp": ts,
                "webhookId": hid,
            });
            if let Some(b) = before {
                let mut from = Map::new();
                for (k, v) in b {
                    if !k.starts_with('_') && e.get(k) != Some(v) {
                        from.insert(k.clone(), v.clone());
                    }
                }
                body["updatedFrom"] = Value::Object(from);
            }
            if ty == "Issue" {
                let ident = e.get("identifier").and_then(Value::as_str).unwrap_or("");
                body["url"] = json!(format!("{}/{}/issue/{ident}/{}", self.ctx.base_url, self.w.org_url_key(), slug(e.get("title").and_then(Value::as_str).unwrap_or(""))));
            }
            let bytes = serde_json::to_vec(&body).unwrap_or_default();
            let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
            mac.update(&bytes);
            let sig = hex::encode(mac.finalize().into_bytes());
            let delivery = self.w.new_id();
            let _ = id;
            self.ctx.fx.borrow_mut().deliveries.push(Delivery {
                url,
                method: "POST".into(),
                headers: vec![
                    ("content-type".into(), "application/json; charset=utf-8".into()),
                    ("linear-delivery".into(), delivery),
                    ("linear-event".into(), ty.to_string()),
                    ("linear-signature".into(), sig),
                    ("user-agent".into(), "Linear-Webhook".into()),
                ],
                body: bytes,
                event: format!("{ty}.{action}"),
            });
        }
    }
}

/// Mutations with rules of their own (issue #35): each checks what it refers to, does what
/// Linear does to the world, and records every change it makes.
impl Mut<'_, '_, '_> {
    /// `cycleShiftAll`: the cycle and every later cycle of its team move by `daysToShift`.
    fn cycle_shift_all(&mut self, args: &Value) -> Result<Done, FieldError> {
        let input = args.get("input").cloned().unwrap_or(json!({}));
        let id = self.id_arg("Cycle", &input)?;
        let days = input.get("daysToShift").and_then(Value::as_f64).unwrap_or(0.0);
        if days.fract() != 0.0 {
            return Err(self.ctx.invalid_input(format!("Argument Validation Error - daysToShift must be a whole number of days, got {days}"), "Cycles move by whole days."));
        }
        let cycle = self.w.get("Cycle", &id).cloned().unwrap_or_default();
        let team = cycle.get("teamId").and_then(Value::as_str).unwrap_or("").to_string();
        let at = |c: &Entity| c.get("startsAt").and_then(Value::as_str).and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
        let from = at(&cycle);
        let shifted: Vec<String> = self
            .w
            .all("Cycle")
            .filter(|(_, c)| c.get("teamId").and_then(Value::as_str) == Some(team.as_str()) && at(c).is_some() && at(c) >= from)
            .map(|(cid, _)| cid.clone())
            .collect();
        let by = chrono::Duration::days(days as i64);
        for cid in shifted {
            self.update_with("Cycle", &cid, |c| {
                for k in ["startsAt", "endsAt"] {
                    if let Some(t) = c.get(k).and_then(Value::as_str).and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok()) {
                        c.insert(k.into(), json!((t + by).to_utc().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)));
                    }
                }
            })?;
        }
        Ok(Done::one("Cycle", &id))
    }

    /// `cycleStartUpcomingCycleToday`: only the team's next cycle not yet started may start,
    /// as of midnight today; the cycle under way, if any, ends then and is completed.
    fn cycle_start_today(&mut self, args: &Value) -> Result<Done, FieldError> {
        let id = self.id_arg("Cycle", args)?;
        let now = self.now();
        let today = format!("{}T00:00:00.000Z", now.get(..10).unwrap_or(&now));
        let cycle = self.w.get("Cycle", &id).cloned().unwrap_or_default();
        let team = cycle.get("teamId").and_then(Value::as_str).unwrap_or("").to_string();
        // Times compared as times: seeds and Linear write them with and without milliseconds.
        let at = |c: &Entity, k: &str| c.get(k).and_then(Value::as_str).and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
        let now_at = chrono::DateTime::parse_from_rfc3339(&now).ok();
        let starts = |c: &Entity| at(c, "startsAt");
        let live = |c: &Entity| c.get("teamId").and_then(Value::as_str) == Some(team.as_str()) && c.get("archivedAt").is_none_or(Value::is_null);
        let next = self.w.all("Cycle").filter(|(_, c)| live(c) && starts(c) > now_at).min_by_key(|(cid, c)| (starts(c), (*cid).clone())).map(|(cid, _)| cid.clone());
        if next.as_deref() != Some(id.as_str()) {
            return Err(self.ctx.invalid_input("Argument Validation Error - only the next upcoming cycle can be started".into(), "Only the next upcoming cycle of the team can be started."));
        }
        let current: Vec<String> = self
            .w
            .all("Cycle")
            .filter(|(cid, c)| **cid != id && live(c) && starts(c).is_some() && starts(c) <= now_at && at(c, "endsAt") > now_at)
            .map(|(cid, _)| cid.clone())
            .collect();
        for cid in current {
            let (end, done) = (today.clone(), now.clone());
            self.update_with("Cycle", &cid, |c| {
                c.insert("endsAt".into(), json!(end));
                c.insert("completedAt".into(), json!(done));
            })?;
        }
        self.update_with("Cycle", &id, |c| {
            c.insert("startsAt".into(), json!(today));
        })?;
        Ok(Done::one("Cycle", &id))
    }

    /// `teamCyclesDelete`: the team's cycles are deleted, its issues leave them, and cycles
    /// are turned off for the team.
    fn team_cycles_delete(&mut self, args: &Value) -> Result<Done, FieldError> {
        let team = self.id_arg("Team", args)?;
        let cycles: Vec<String> = self.w.all("Cycle").filter(|(_, c)| c.get("teamId").and_then(Value::as_str) == Some(team.as_str())).map(|(id, _)| id.clone()).collect();
        let issues: Vec<String> = self
            .w
            .all("Issue")
            .filter(|(_, i)| i.get("cycleId").and_then(Value::as_str).is_some_and(|c| cycles.iter().any(|x| x == c)))
            .map(|(id, _)| id.clone())
            .collect();
        for i in issues {
            self.update_with("Issue", &i, |e| {
                e.insert("cycleId".into(), Value::Null);
            })?;
        }
        for c in cycles {
            let before = self.w.remove("Cycle", &c);
            self.record("Cycle", &c, before.as_ref(), None);
        }
        self.update_with("Team", &team, |t| {
            t.insert("cyclesEnabled".into(), json!(false));
        })?;
        Ok(Done::one("Team", &team))
    }

    /// `customerMerge`: the source's needs move to the target, its domains and external ids
    /// join the target's, and the source is archived.
    fn customer_merge(&mut self, args: &Value) -> Result<Done, FieldError> {
        let source = self.id_arg("Customer", &json!({"id": args.get("sourceCustomerId")}))?;
        let target = self.id_arg("Customer", &json!({"id": args.get("targetCustomerId")}))?;
        if source == target {
            return Err(self.ctx.invalid_input("Argument Validation Error - a customer cannot be merged into itself".into(), "Choose two different customers to merge."));
        }
        let needs: Vec<String> = self.w.all("CustomerNeed").filter(|(_, n)| n.get("customerId").and_then(Value::as_str) == Some(source.as_str())).map(|(id, _)| id.clone()).collect();
        for n in needs {
            let t = target.clone();
            self.update_with("CustomerNeed", &n, |e| {
                e.insert("customerId".into(), json!(t));
            })?;
        }
        let from = self.w.get("Customer", &source).cloned().unwrap_or_default();
        self.update_with("Customer", &target, |c| {
            for k in ["domains", "externalIds"] {
                let mut all = ids_of(c.get(k));
                for v in ids_of(from.get(k)) {
                    if !all.contains(&v) {
                        all.push(v);
                    }
                }
                c.insert(k.into(), json!(all));
            }
        })?;
        let now = self.now();
        self.update_with("Customer", &source, |c| {
            c.insert("archivedAt".into(), json!(now));
        })?;
        Ok(Done::one("Customer", &target))
    }

    /// `customerNeedCreateFromAttachment`: a need for the attachment's issue; an archived need
    /// of the same attachment is brought back rather than made twice.
    fn need_from_attachment(&mut self, args: &Value) -> Result<Done, FieldError> {
        let input = args.get("input").cloned().unwrap_or(json!({}));
        let attachment = self.id_arg("Attachment", &json!({"id": input.get("attachmentId")}))?;
        let existing = self.w.all("CustomerNeed").find(|(_, n)| n.get("attachmentId").and_then(Value::as_str) == Some(attachment.as_str())).map(|(id, n)| (id.clone(), n.get("archivedAt").is_some_and(|a| !a.is_null())));
        match existing {
            Some((id, true)) => {
                self.update_with("CustomerNeed", &id, |n| {
                    n.insert("archivedAt".into(), Value::Null);
                })?;
                Ok(Done::one("CustomerNeed", &id))
            }
            Some(_) => Err(self.ctx.invalid_input("Argument Validation Error - the attachment already has a customer need".into(), "This attachment is already a customer request.")),
            None => {
                let issue = self.w.str_field("Attachment", &attachment, "issueId").map(String::from);
                let id = self.create("CustomerNeed", json!({"attachmentId": attachment, "issueId": issue, "priority": 0}))?;
                Ok(Done::one("CustomerNeed", &id))
            }
        }
    }

    /// `projectMilestoneMove`: the milestone and the issues in it move to another project.
    fn milestone_move(&mut self, args: &Value) -> Result<Done, FieldError> {
        let id = self.id_arg("ProjectMilestone", args)?;
        let input = args.get("input").cloned().unwrap_or(json!({}));
        let project = self.id_arg("Project", &json!({"id": input.get("projectId")}))?;
        let issues: Vec<String> = self.w.all("Issue").filter(|(_, i)| i.get("projectMilestoneId").and_then(Value::as_str) == Some(id.as_str())).map(|(iid, _)| iid.clone()).collect();
        let p = project.clone();
        self.update_with("ProjectMilestone", &id, |m| {
            m.insert("projectId".into(), json!(p));
        })?;
        for i in issues {
            let p = project.clone();
            self.update_with("Issue", &i, |e| {
                e.insert("projectId".into(), json!(p));
            })?;
        }
        Ok(Done::one("ProjectMilestone", &id))
    }

    /// `projectReassignStatus`: every project in one status moves to another.
    fn reassign_project_status(&mut self, args: &Value) -> Result<Done, FieldError> {
        let from = self.id_arg("ProjectStatus", &json!({"id": args.get("originalProjectStatusId")}))?;
        let to = self.id_arg("ProjectStatus", &json!({"id": args.get("newProjectStatusId")}))?;
        let kind = self.w.str_field("ProjectStatus", &to, "type").unwrap_or("backlog").to_string();
        let projects: Vec<String> = self.w.all("Project").filter(|(_, p)| p.get("statusId").and_then(Value::as_str) == Some(from.as_str())).map(|(id, _)| id.clone()).collect();
        let now = self.now();
        for p in projects {
            let to = to.clone();
            self.update_with("Project", &p, |e| {
                e.insert("statusId".into(), json!(to));
                project_status_moved(e, &kind, &now);
            })?;
        }
        Ok(Done { entity: None, list: Vec::new(), extra: Map::new() })
    }

    /// `createProjectUpdateReminder` / `createInitiativeUpdateReminder`: the user asked (else
    /// the project's lead, the initiative's owner) gets an inbox notification to post an update.
    fn update_reminder(&mut self, name: &str, args: &Value) -> Result<Done, FieldError> {
        let (ty, key, owner, kind, note) = if name == "createProjectUpdateReminder" {
            ("Project", "projectId", "leadId", "projectUpdateReminder", "ProjectNotification")
        } else {
            ("Initiative", "initiativeId", "ownerId", "initiativeUpdateReminder", "InitiativeNotification")
        };
        let id = self.id_arg(ty, &json!({"id": args.get(key)}))?;
        let user = match s(args, "userId") {
            Some(u) => self.id_arg("User", &json!({"id": u}))?,
            None => self.w.str_field(ty, &id, owner).map(String::from).ok_or_else(|| {
                self.ctx.invalid_input(format!("Argument Validation Error - the {} has no {} to remind", lc(ty), if ty == "Project" { "lead" } else { "owner" }), "Choose whom to remind.")
            })?,
        };
        let nid = self.w.new_id();
        let now = self.now();
        let actor = self.w.viewer.clone();
        let title = self.w.str_field(ty, &id, "name").unwrap_or("").to_string();
        let e: Entity = [
            ("id", json!(nid)), ("type", json!(kind)), ("userId", json!(user)), ("actorId", json!(actor)), (key, json!(id)), ("title", json!(title)),
            ("category", json!("reminders")), ("groupingKey", json!(format!("{}-{id}", lc(ty)))), ("createdAt", json!(now)), ("updatedAt", json!(now)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        self.w.insert(note, &nid, e.clone());
        self.record(note, &nid, None, Some(&e));
        Ok(Done { entity: None, list: Vec::new(), extra: Map::new() })
    }
}

impl Mut<'_, '_, '_> {
    /// `agentSessionCreateOnIssue` / `…OnComment`: a session of the calling app's user (the
    /// viewer) on an issue, or on a root comment (and its issue); it starts `pending`.
    fn agent_session_create(&mut self, name: &str, args: &Value) -> Result<Done, FieldError> {
        let input = args.get("input").cloned().unwrap_or(json!({}));
        let (issue, comment) = if name == "agentSessionCreateOnIssue" {
            (self.id_arg("Issue", &json!({"id": input.get("issueId")}))?, None)
        } else {
            let c = self.id_arg("Comment", &json!({"id": input.get("commentId")}))?;
            if self.w.str_field("Comment", &c, "parentId").is_some() {
                return Err(self.ctx.invalid_input("Argument Validation Error - an agent session starts on a root comment, not a reply".into(), "Agent sessions can only be created on a root comment."));
            }
            let issue = self.w.str_field("Comment", &c, "issueId").map(String::from).ok_or_else(|| self.ctx.not_found("Issue"))?;
            (issue, Some(c))
        };
        let urls = input.get("externalUrls").cloned().unwrap_or(json!([]));
        let viewer = self.w.viewer.clone();
        let e = json!({
            "issueId": issue, "commentId": comment, "sourceCommentId": comment, "appUserId": viewer, "creatorId": viewer,
            "status": "pending", "type": "commentThread", "context": {}, "externalLink": input.get("externalLink"),
            "externalUrls": urls, "externalLinks": urls,
        });
        let id = self.create("AgentSession", e)?;
        Ok(Done::one("AgentSession", &id))
    }

    /// `agentSessionUpdateExternalUrl`: `externalUrls` replaces the list, `addedExternalUrls`
    /// and `removedExternalUrls` (by URL) edit it.
    fn agent_session_urls(&mut self, args: &Value) -> Result<Done, FieldError> {
        let id = self.id_arg("AgentSession", args)?;
        let input = args.get("input").cloned().unwrap_or(json!({}));
        self.update_with("AgentSession", &id, |e| {
            let mut urls: Vec<Value> = match input.get("externalUrls").and_then(Value::as_array) {
                Some(a) => a.clone(),
                None => e.get("externalUrls").and_then(Value::as_array).cloned().unwrap_or_default(),
            };
            for add in input.get("addedExternalUrls").and_then(Value::as_array).into_iter().flatten() {
                urls.retain(|u| u.get("url") != add.get("url"));
                urls.push(add.clone());
            }
            let removed = ids_of(input.get("removedExternalUrls"));
            urls.retain(|u| !u.get("url").and_then(Value::as_str).is_some_and(|x| removed.iter().any(|r| r == x)));
            e.insert("externalUrls".into(), json!(urls));
            e.insert("externalLinks".into(), json!(urls));
            if let Some(link) = input.get("externalLink") {
                e.insert("externalLink".into(), link.clone());
            }
        })?;
        Ok(Done::one("AgentSession", &id))
    }
}

/// Which implementer of an interface a create makes: the one named by the input's relation
/// (`teamId` → `TeamNotificationSubscription`), else the first.
fn pick_implementer(iface: &str, input: &Value) -> String {
    let types = gql::possible_types(iface);
    if let Some(m) = input.as_object() {
        for k in m.keys() {
            if let Some(rel) = k.strip_suffix("Id") {
                let mut c = rel.chars();
                let head: String = c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default();
                if let Some(t) = types.iter().find(|t| t.starts_with(&head) && !head.is_empty()) {
                    return t.clone();
                }
            }
        }
    }
    types.into_iter().next().unwrap_or_else(|| iface.to_string())
}

/// The entity without hidden bookkeeping (`_seq`…), as the tape and webhooks show it.
/// An entity as the tape and state show it (without `_` bookkeeping), serialised in place.
pub struct Public<'e>(pub &'e Entity);

impl serde::Serialize for Public<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for (k, v) in self.0.iter().filter(|(k, _)| !k.starts_with('_')) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

pub fn public(e: &Entity) -> Value {
    Value::Object(e.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// The type a relation field of `ty` points at (`Issue.assignee` → `User`).
pub fn relation_type(ty: &str, rel: &str) -> Option<String> {
    if !gql::is_object(ty) {
        return None;
    }
    let named = crate::tables::field(ty, rel)?.ty.to_string();
    if let Some(node) = gql::connection_node(&named) {
        return Some(node);
    }
    gql::is_composite(&named).then_some(named)
}

/// The object type a `<rel>Id` input names by itself: `Project` for `projectId`, a workflow
/// state for `autoCloseStateId`; none for ids of things outside Linear (`slackChannelId`).
fn referenced_type(rel: &str) -> Option<String> {
    let mut c = rel.chars();
    let named: String = c.next()?.to_uppercase().chain(c).collect();
    if gql::is_object(&named) && !named.ends_with("Payload") {
        return Some(named);
    }
    named.ends_with("State").then(|| "WorkflowState".to_string())
}

/// A project in a status of type `kind`: its (deprecated) `state` says the type, and it
/// was started, completed or canceled now if it was not already.
fn project_status_moved(e: &mut Entity, kind: &str, now: &str) {
    e.insert("state".into(), json!(kind));
    for (field, when) in [("startedAt", "started"), ("completedAt", "completed"), ("canceledAt", "canceled")] {
        if kind == when && e.get(field).is_none_or(Value::is_null) {
            e.insert(field.into(), json!(now));
        }
    }
    if kind == "completed" {
        e.entry("startedAt").or_insert(json!(now));
    }
}

/// Linear's priorities are 0 (none) to 4 (low).
fn check_priority(ctx: &Ctx<'_>, e: &Entity) -> Result<(), FieldError> {
    match e.get("priority").and_then(Value::as_f64) {
        Some(p) if !(0.0..=4.0).contains(&p) => Err(ctx.invalid_input(
            format!("Argument Validation Error - priority must not be greater than 4 or less than 0, got {p}"),
            "Priority must be 0 (no priority), 1 (urgent), 2 (high), 3 (medium) or 4 (low).",
        )),
        _ => Ok(()),
    }
}

/// The ids of a list of ids (`labelIds`), none when absent.
pub(crate) fn ids_of(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default()
}

pub(crate) fn edit_ids(e: &mut Entity, field: &str, ids: &[String], add: bool) {
    let mut cur: Vec<String> = e.get(field).and_then(Value::as_array).map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default();
    for id in ids {
        if add {
            if !cur.contains(id) {
                cur.push(id.clone());
            }
        } else {
            cur.retain(|c| c != id);
        }
    }
    e.insert(field.into(), json!(cur));
}

/// Linear's branch name: `<user>/<eng-12>-<title-slug>`.
pub fn branch(user: &str, identifier: &str, title: &str) -> String {
    let u = slug(user);
    let t = slug(title);
    let head = if u.is_empty() { String::new() } else { format!("{u}/") };
    format!("{head}{}-{t}", identifier.to_ascii_lowercase()).trim_end_matches('-').to_string()
}

/// The state a new issue starts in: the team's default, else its first backlog or unstarted state.
pub fn default_state(w: &Inner, team: &str) -> Option<String> {
    if let Some(d) = w.str_field("Team", team, "defaultIssueStateId") {
        return Some(d.to_string());
    }
    let rank = |t: &str| match t {
        "backlog" => 0,
        "unstarted" => 1,
        "triage" => 2,
        _ => 3,
    };
    w.all("WorkflowState")
        .filter(|(_, s)| s.get("teamId").and_then(Value::as_str) == Some(team) && s.get("archivedAt").is_none_or(Value::is_null))
        .min_by_key(|(id, s)| (rank(s.get("type").and_then(Value::as_str).unwrap_or("")), s.get("position").and_then(Value::as_f64).unwrap_or(0.0) as i64, (*id).clone()))
        .map(|(id, _)| id.clone())
}

pub fn lc(ty: &str) -> String {
    lcfirst(ty)
}
