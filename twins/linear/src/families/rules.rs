//! Rules for the entities the generic writer makes, changes and removes (issue #35): what
//! Linear refuses beyond the schema's types, and what it does to other entities when one goes.
//!
//! Every write: a required text (`name`, `title`, `emoji`, `url`…) may not be blank. Creates:
//! nothing relates to itself (an issue, project or initiative relation, a sub-initiative), a
//! pair is kept once (a team membership, an initiative's or roadmap's project, a relation, a
//! user's reaction of one emoji, a favorite of one thing), a reaction, favorite, notification
//! subscription or external link has exactly the one target its input names, a custom emoji's
//! name is Slack-style and unique, and URLs are URLs. Removals: a deleted label leaves its
//! issues, a deleted milestone its issues, a customer status or tier its customers; a state
//! with issues and a project status with projects cannot be archived.

use apollo_compiler::resolvers::FieldError;
use serde_json::Value;

use crate::model::Entity;
use crate::mutate::{Mut, edit_ids};

/// Fields whose blank value Linear refuses when its input requires them.
const TEXTS: &[&str] = &[
    "name", "title", "emoji", "url", "label", "color", "body", "data", "key",
];

/// A required text of the mutation's input (`<Type>CreateInput`'s `name: String!`) or of the
/// entity (`Type.name: String!`) given blank.
pub(crate) fn blank_text(
    m: &Mut<'_, '_, '_>,
    mutation: &str,
    ty: &str,
    input: &Value,
) -> Result<(), FieldError> {
    let input_ty = crate::tables::field("Mutation", mutation).and_then(|f| {
        f.args
            .iter()
            .find(|(a, _, _)| *a == "input")
            .map(|(_, t, _)| *t)
    });
    let head = input_ty
        .and_then(crate::tables::ty)
        .map(|t| t.head)
        .unwrap_or("");
    for k in TEXTS {
        let Some(v) = input.get(*k).and_then(Value::as_str) else {
            continue;
        };
        let required = head.contains(&format!("\n  {k}: String!"))
            || crate::tables::field(ty, k).is_some_and(|f| f.non_null && f.ty == "String");
        if required && v.trim().is_empty() {
            return Err(m.ctx.invalid_input(
                format!("Argument Validation Error - {k} should not be empty"),
                &format!("{k} cannot be empty."),
            ));
        }
    }
    Ok(())
}

fn same<'a>(e: &'a Entity, k: &str) -> Option<&'a str> {
    e.get(k).and_then(Value::as_str)
}

fn live(e: &Entity) -> bool {
    e.get("archivedAt").is_none_or(Value::is_null)
}

fn refuse(m: &Mut<'_, '_, '_>, why: &str, user: &str) -> FieldError {
    m.ctx
        .invalid_input(format!("Argument Validation Error - {why}"), user)
}

/// The targets an entity of `ty` may point at; exactly one must be given.
fn targets(ty: &str) -> &'static [&'static str] {
    match ty {
        "Reaction" => &[
            "issueId",
            "commentId",
            "projectUpdateId",
            "initiativeUpdateId",
            "postId",
            "pullRequestId",
            "pullRequestCommentId",
        ],
        "EntityExternalLink" => &[
            "initiativeId",
            "projectId",
            "releaseId",
            "cycleId",
            "teamId",
            "resourceFolderId",
        ],
        // Slack settings and notification subscriptions are for one team, project, initiative,
        // view, cycle, label or customer.
        "IntegrationsSettings" => &["teamId", "projectId", "initiativeId", "customViewId"],
        "CustomViewNotificationSubscription"
        | "CustomerNotificationSubscription"
        | "CycleNotificationSubscription"
        | "InitiativeNotificationSubscription"
        | "LabelNotificationSubscription"
        | "ProjectNotificationSubscription"
        | "TeamNotificationSubscription" => &[
            "customViewId",
            "customerId",
            "cycleId",
            "initiativeId",
            "labelId",
            "projectId",
            "teamId",
        ],
        _ => &[],
    }
}

/// Whether another live entity of `ty` has the same values for all of `keys`.
fn duplicate(m: &Mut<'_, '_, '_>, ty: &str, e: &Entity, keys: &[&str]) -> bool {
    m.w.all(ty).any(|(id, o)| {
        same(e, "id") != Some(id.as_str()) && live(o) && keys.iter().all(|k| o.get(*k) == e.get(*k))
    })
}

/// What Linear refuses in a new entity of `ty` (its references already resolved).
pub(crate) fn before_create(m: &Mut<'_, '_, '_>, ty: &str, e: &Entity) -> Result<(), FieldError> {
    let t = targets(ty);
    if !t.is_empty() {
        let given = t
            .iter()
            .filter(|k| e.get(**k).is_some_and(|v| !v.is_null()))
            .count();
        if given != 1 {
            return Err(refuse(
                m,
                &format!("exactly one of {} must be given", t.join(", ")),
                "Name exactly one thing this belongs to.",
            ));
        }
    }
    let pair = |a: &str, b: &str| same(e, a).is_some() && same(e, a) == same(e, b);
    match ty {
        "IssueRelation" if pair("issueId", "relatedIssueId") => {
            return Err(refuse(
                m,
                "an issue cannot relate to itself",
                "An issue cannot be related to itself.",
            ));
        }
        "ProjectRelation" if pair("projectId", "relatedProjectId") => {
            return Err(refuse(
                m,
                "a project cannot depend on itself",
                "A project cannot be related to itself.",
            ));
        }
        "InitiativeRelation" if pair("initiativeId", "relatedInitiativeId") => {
            return Err(refuse(
                m,
                "an initiative cannot contain itself",
                "An initiative cannot be its own sub-initiative.",
            ));
        }
        _ => {}
    }
    let unique: &[&str] = match ty {
        "TeamMembership" => &["teamId", "userId"],
        "InitiativeToProject" => &["initiativeId", "projectId"],
        "RoadmapToProject" => &["roadmapId", "projectId"],
        "IssueRelation" => &["issueId", "relatedIssueId", "type"],
        "InitiativeRelation" => &["initiativeId", "relatedInitiativeId"],
        "Reaction" => &[
            "userId",
            "emoji",
            "issueId",
            "commentId",
            "projectUpdateId",
            "initiativeUpdateId",
            "postId",
            "pullRequestId",
            "pullRequestCommentId",
        ],
        "Emoji" => &["name"],
        "IssueToRelease" => &["issueId", "releaseId"],
        "IntegrationTemplate" => &["integrationId", "templateId"],
        "IntegrationsSettings" => &["teamId", "projectId", "initiativeId", "customViewId"],
        // A team has one triage responsibility.
        "TriageResponsibility" => &["teamId"],
        "GitAutomationState" => &["teamId", "event", "targetBranchId"],
        _ => &[],
    };
    if !unique.is_empty() && duplicate(m, ty, e, unique) {
        return Err(refuse(
            m,
            &format!("this {ty} already exists"),
            "It already exists.",
        ));
    }
    if ty == "Favorite" {
        let keys: Vec<&str> = e
            .keys()
            .filter(|k| k.ends_with("Id") && *k != "ownerId" && *k != "parentId" && *k != "id")
            .map(String::as_str)
            .collect();
        let mut with_owner = keys.clone();
        with_owner.push("ownerId");
        if !keys.is_empty() && duplicate(m, ty, e, &with_owner) {
            return Err(refuse(
                m,
                "already a favorite",
                "This is already in your favorites.",
            ));
        }
    }
    if ty == "Emoji" {
        let name = same(e, "name").unwrap_or("");
        if !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        {
            return Err(refuse(
                m,
                &format!("emoji name {name:?} may hold only a-z, 0-9, _ and -"),
                "Emoji names use lowercase letters, digits, _ and -.",
            ));
        }
    }
    dated(m, ty, e)?;
    if ty == "OrganizationInvite" {
        let email = same(e, "email").unwrap_or("").trim().to_ascii_lowercase();
        if !email
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.'))
        {
            return Err(refuse(
                m,
                &format!("email must be an email, got {email:?}"),
                "Enter a valid email address.",
            ));
        }
        let member = m.w.all("User").any(|(_, u)| {
            same(u, "email").is_some_and(|x| x.eq_ignore_ascii_case(&email))
                && u.get("active") != Some(&Value::Bool(false))
        });
        if member {
            return Err(refuse(
                m,
                &format!("{email} is already a member of the workspace"),
                "This person is already a member.",
            ));
        }
        let pending = m.w.all("OrganizationInvite").any(|(id, i)| {
            same(e, "id") != Some(id.as_str())
                && live(i)
                && i.get("acceptedAt").is_none_or(Value::is_null)
                && same(i, "email").is_some_and(|x| x.eq_ignore_ascii_case(&email))
        });
        if pending {
            return Err(refuse(
                m,
                &format!("{email} has already been invited"),
                "This person has already been invited.",
            ));
        }
    }
    if ty == "TimeSchedule" {
        let mut entries = e.get("entries").cloned();
        super::work::check_entries(m, entries.as_mut())?;
    }
    for k in ["url", "imageUrl"] {
        if let Some(u) = same(e, k).filter(|_| matches!(ty, "Emoji" | "EntityExternalLink")) {
            if !(u.starts_with("https://") || u.starts_with("http://")) {
                return Err(refuse(
                    m,
                    &format!("{k} must be a URL, got {u:?}"),
                    "Enter a valid URL.",
                ));
            }
        }
    }
    Ok(())
}

/// What Linear refuses in archiving entity `id` of `ty`.
pub(crate) fn before_archive(m: &Mut<'_, '_, '_>, ty: &str, id: &str) -> Result<(), FieldError> {
    let (kids, fk, what) = match ty {
        "WorkflowState" => (
            "Issue",
            "stateId",
            "a workflow state with issues cannot be archived; move them first",
        ),
        "ProjectStatus" => (
            "Project",
            "statusId",
            "a project status with projects cannot be archived; move them first",
        ),
        _ => return Ok(()),
    };
    if m.w
        .all(kids)
        .any(|(_, e)| same(e, fk) == Some(id) && live(e))
    {
        return Err(refuse(m, what, "Move what is in it elsewhere first."));
    }
    Ok(())
}

/// What goes with a deleted entity of `ty`: references to it are cleared, and each change is
/// recorded.
pub(crate) fn after_delete(m: &mut Mut<'_, '_, '_>, ty: &str, id: &str) -> Result<(), FieldError> {
    let (kids, field, list): (&[&str], &str, bool) = match ty {
        "IssueLabel" => (&["Issue"], "labelIds", true),
        "ProjectLabel" => (&["Project"], "labelIds", true),
        "InitiativeLabel" => (&["Initiative"], "labelIds", true),
        "ProjectMilestone" => (&["Issue"], "projectMilestoneId", false),
        "CustomerStatus" => (&["Customer"], "statusId", false),
        "CustomerTier" => (&["Customer"], "tierId", false),
        _ => return Ok(()),
    };
    for kid in kids {
        let hit: Vec<String> =
            m.w.all(kid)
                .filter(|(_, e)| {
                    if list {
                        e.get(field)
                            .and_then(Value::as_array)
                            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(id)))
                    } else {
                        same(e, field) == Some(id)
                    }
                })
                .map(|(k, _)| k.clone())
                .collect();
        for k in hit {
            let gone = id.to_string();
            m.update_with(kid, &k, |e| {
                if list {
                    edit_ids(e, field, &[gone], false);
                } else {
                    e.insert(field.into(), Value::Null);
                }
            })?;
        }
    }
    Ok(())
}

/// A span ends after it starts: a cycle, a project or an initiative (start and target date).
fn dated(m: &Mut<'_, '_, '_>, ty: &str, e: &Entity) -> Result<(), FieldError> {
    let (a, b) = match ty {
        "Cycle" => ("startsAt", "endsAt"),
        "Project" | "Initiative" => ("startDate", "targetDate"),
        _ => return Ok(()),
    };
    if let (Some(x), Some(y)) = (same(e, a), same(e, b)) {
        if y < x || (ty == "Cycle" && y == x) {
            return Err(refuse(
                m,
                &format!("{b} must be after {a}"),
                &format!("The {b} must come after the {a}."),
            ));
        }
    }
    Ok(())
}

/// What Linear refuses in an update of entity `id` of `ty`: the entity as it would be.
pub(crate) fn before_update(
    m: &Mut<'_, '_, '_>,
    ty: &str,
    id: &str,
    patch: &Entity,
) -> Result<(), FieldError> {
    // A member edits their own profile; only admins edit someone else's.
    if ty == "User" && id != m.w.viewer {
        super::admin_only(m, "update another user")?;
    }
    let Some(now) = m.w.get(ty, id) else {
        return Ok(());
    };
    let mut after = now.clone();
    after.extend(patch.iter().map(|(k, v)| (k.clone(), v.clone())));
    dated(m, ty, &after)
}

/// Entity types whose generic mutations have rules of the type's own (here, or where
/// `crate::mutate` makes one), beyond what every type gets (references that exist, no blank
/// required text); `print_generic` lists the rest. Only the tests read it.
#[cfg(test)]
pub const TYPED: &[&str] = &[
    "Issue",
    "Comment",
    "IssueLabel",
    "ProjectLabel",
    "InitiativeLabel",
    "Team",
    "TeamMembership",
    "WorkflowState",
    "Cycle",
    "Webhook",
    "Project",
    "ProjectStatus",
    "ProjectUpdate",
    "ProjectMilestone",
    "Document",
    "Initiative",
    "AgentSession",
    "Release",
    "ReleasePipeline",
    "ReleaseNote",
    "AgentSkill",
    "Favorite",
    "Reaction",
    "EntityExternalLink",
    "IntegrationsSettings",
    "NotificationSubscription",
    "IssueRelation",
    "ProjectRelation",
    "InitiativeRelation",
    "InitiativeToProject",
    "RoadmapToProject",
    "Emoji",
    "IssueToRelease",
    "IntegrationTemplate",
    "TriageResponsibility",
    "GitAutomationState",
    "OrganizationInvite",
    "OrganizationDomain",
    "PushSubscription",
    "EmailIntakeAddress",
    "TimeSchedule",
    "CustomerStatus",
    "CustomerTier",
    "Attachment",
    "InitiativeUpdate",
    "User",
];
