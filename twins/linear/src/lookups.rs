//! Root queries answered from what the mutation families keep (issue #35): OAuth apps,
//! integrations and their scopes, workspace domains and invites, push subscriptions, and
//! Linear's suggestions.
//!
//! Linear makes its suggestions (filters from a prompt, a title from a customer's request, a
//! repository for an issue, a view's name) with a language model. The twin has none; it
//! answers from the world by words: a filter names the states, labels, people, priorities,
//! statuses and health the prompt names (by their names in the workspace), a title is the
//! request's first sentence, repositories rank by the words of their name the issue holds.
//! Each answer is one the filters and entities of the world can use; `logId` (the model's
//! log) is null.

use apollo_compiler::resolvers::FieldError;
use pome_graphql::exec::Out as ResolvedValue;
use serde_json::{Map, Value, json};

use crate::exec::{Ctx, Ent, Plain};
use crate::model::Inner;

pub const QUERIES: &[&str] = &[
    "applicationInfo",
    "failuresForOauthWebhooks",
    "archivedIntegrations",
    "integrationHasScopes",
    "organizationDomainClaimRequest",
    "organizationInviteDetails",
    "pushSubscriptionTest",
    "issueRepositorySuggestions",
    "issueFilterSuggestion",
    "projectFilterSuggestion",
    "initiativeFilterSuggestion",
    "issueTitleSuggestionFromCustomerRequest",
    "customViewDetailsSuggestion",
    "availableUsers",
    "templatesForIntegration",
    "microsoftTeamsChannels",
    "organizationMeta",
    "ssoUrlFromEmail",
    "verifyGitHubEnterpriseServerInstallation",
];

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn plain<'a>(ty: &str, value: Value) -> ResolvedValue<'a> {
    ResolvedValue::object(Plain {
        ty: ty.into(),
        value,
    })
}

fn live(e: &crate::model::Entity) -> bool {
    e.get("archivedAt").is_none_or(Value::is_null)
}

/// Answer root query `name` (one of [`QUERIES`]) of return type `named`.
pub fn answer<'a, 'c: 'a, 'w: 'a>(
    ctx: &'c Ctx<'w>,
    name: &str,
    named: &str,
    args: &Value,
) -> Result<ResolvedValue<'a>, FieldError> {
    let w = ctx.w.borrow();
    match name {
        "applicationInfo" | "failuresForOauthWebhooks" => {
            let client = s(args, "clientId")
                .or_else(|| s(args, "oauthClientId"))
                .unwrap_or("");
            let (id, app) = w
                .all("OAuthApplication")
                .find(|(_, a)| a.get("clientId").and_then(Value::as_str) == Some(client) && live(a))
                .ok_or_else(|| ctx.not_found("OAuthApplication"))?;
            if name == "failuresForOauthWebhooks" {
                // The twin delivers no webhooks to OAuth apps, so none has failed.
                return Ok(ResolvedValue::list(Vec::new()));
            }
            let mut v = json!({"id": id});
            for k in [
                "clientId",
                "name",
                "description",
                "developer",
                "developerUrl",
                "imageUrl",
            ] {
                v[k] = app.get(k).cloned().unwrap_or(Value::Null);
            }
            Ok(plain("Application", v))
        }
        "archivedIntegrations" => {
            let list: Vec<Value> = w
                .all("Integration")
                .filter(|(_, i)| !live(i))
                .map(|(id, i)| {
                    let github = i.get("settings").and_then(|x| x.get("gitHub"));
                    json!({"id": id, "service": i.get("service"), "archivedAt": i.get("archivedAt"), "codeAccess": github.and_then(|g| g.get("codeAccess")), "enterpriseUrl": github.and_then(|g| g.get("host"))})
                })
                .collect();
            Ok(ResolvedValue::list(
                list.into_iter()
                    .map(|v| plain("ArchivedIntegrationPayload", v)),
            ))
        }
        "integrationHasScopes" => {
            let id = s(args, "integrationId").unwrap_or("");
            let held: Vec<&str> = w
                .get("Integration", id)
                .ok_or_else(|| ctx.not_found("Integration"))?
                .get("scopes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let missing: Vec<&str> = args
                .get("scopes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|x| !held.contains(x))
                .collect();
            Ok(plain(
                named,
                json!({"hasAllScopes": missing.is_empty(), "missingScopes": missing}),
            ))
        }
        "organizationDomainClaimRequest" => {
            let d = w
                .get("OrganizationDomain", s(args, "id").unwrap_or(""))
                .ok_or_else(|| ctx.not_found("OrganizationDomain"))?;
            Ok(plain(
                named,
                json!({"verificationString": d.get("verificationString")}),
            ))
        }
        "organizationInviteDetails" => {
            // Whether an invite has expired depends on the clock: never kept.
            ctx.volatile.set(true);
            let inv = w
                .get("OrganizationInvite", s(args, "id").unwrap_or(""))
                .ok_or_else(|| ctx.not_found("OrganizationInvite"))?;
            let accepted = inv.get("acceptedAt").is_some_and(|v| !v.is_null());
            let expired = inv
                .get("expiresAt")
                .and_then(Value::as_str)
                .is_some_and(|t| t < ctx.now.as_str());
            let status = if accepted {
                "accepted"
            } else if expired {
                "expired"
            } else {
                "pending"
            };
            if status != "pending" {
                return Ok(plain(
                    "OrganizationAcceptedOrExpiredInviteDetailsPayload",
                    json!({"status": status}),
                ));
            }
            let org = w.get("Organization", &w.org);
            let of_org = |k: &str| org.and_then(|o| o.get(k)).cloned().unwrap_or(Value::Null);
            let inviter = inv
                .get("inviterId")
                .and_then(Value::as_str)
                .and_then(|u| w.str_field("User", u, "name"))
                .map(String::from);
            Ok(plain(
                "OrganizationInviteFullDetailsPayload",
                json!({"status": status, "accepted": false, "expired": false, "email": inv.get("email"), "createdAt": inv.get("createdAt"), "role": inv.get("role"),
                    "inviter": inviter, "organizationId": w.org, "organizationName": of_org("name"), "organizationLogoUrl": of_org("logoUrl"), "allowedAuthServices": of_org("allowedAuthServices")}),
            ))
        }
        "pushSubscriptionTest" => {
            // A test push reaches the viewer's devices: it succeeds when there is one to reach.
            let mobile = args
                .get("targetMobile")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let any = w.all("PushSubscription").any(|(_, p)| {
                let kind = p.get("type").and_then(Value::as_str).unwrap_or("web");
                p.get("userId").and_then(Value::as_str) == Some(w.viewer.as_str())
                    && live(p)
                    && (!mobile || kind != "web")
            });
            Ok(plain(named, json!({"success": any})))
        }
        "issueRepositorySuggestions" => {
            let id = w
                .issue_id(s(args, "issueId").unwrap_or(""))
                .ok_or_else(|| ctx.not_found("Issue"))?;
            let issue = w
                .get("Issue", &id)
                .map(|i| Value::Object(i.clone()))
                .unwrap_or_default();
            let text = format!(
                "{} {}",
                s(&issue, "title").unwrap_or(""),
                s(&issue, "description").unwrap_or("")
            )
            .to_lowercase();
            let mut out: Vec<(f64, Value)> = Vec::new();
            for c in args
                .get("candidateRepositories")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let full = s(c, "repositoryFullName").unwrap_or("");
                let words: Vec<String> = full
                    .to_lowercase()
                    .split(|ch: char| !ch.is_alphanumeric())
                    .filter(|x| x.len() > 1)
                    .map(String::from)
                    .collect();
                let hit = words.iter().filter(|x| text.contains(x.as_str())).count();
                if hit > 0 {
                    let confidence = hit as f64 / words.len() as f64;
                    out.push((confidence, json!({"repositoryFullName": full, "hostname": s(c, "hostname"), "confidence": confidence})));
                }
            }
            out.sort_by(|a, b| b.0.total_cmp(&a.0));
            Ok(plain(
                named,
                json!({"suggestions": out.into_iter().map(|(_, v)| v).collect::<Vec<_>>()}),
            ))
        }
        "issueFilterSuggestion" | "projectFilterSuggestion" | "initiativeFilterSuggestion" => {
            let prompt = s(args, "prompt").unwrap_or("").to_lowercase();
            let team = s(args, "teamId")
                .map(|t| w.team_id(t).ok_or_else(|| ctx.not_found("Team")))
                .transpose()?;
            let f = match name {
                "issueFilterSuggestion" => issue_filter(&w, &prompt, team.as_deref()),
                "projectFilterSuggestion" => project_filter(&w, &prompt),
                _ => initiative_filter(&w, &prompt),
            };
            let filter = if f.is_empty() {
                Value::Null
            } else {
                Value::Object(f)
            };
            Ok(plain(named, json!({"filter": filter, "logId": null})))
        }
        "issueTitleSuggestionFromCustomerRequest" => {
            let request = s(args, "request").unwrap_or("").trim();
            let first = request
                .split(['\n', '.', '?', '!'])
                .map(str::trim)
                .find(|x| !x.is_empty())
                .unwrap_or("");
            let mut title: String = first.chars().take(80).collect();
            if first.chars().count() > 80 {
                title = format!("{}…", title.trim_end());
            }
            Ok(plain(
                named,
                json!({"title": title, "logId": null, "lastSyncId": w.last_sync_id}),
            ))
        }
        "customViewDetailsSuggestion" => {
            // A name from what the filter names, as the views list would show it.
            let filter = args.get("filter").cloned().unwrap_or_default();
            let mut parts: Vec<String> = Vec::new();
            if let Some(m) = filter.as_object() {
                for (k, v) in m {
                    let names = ids_in(v)
                        .into_iter()
                        .filter_map(|id| name_of(&w, &id))
                        .collect::<Vec<_>>();
                    parts.push(if names.is_empty() {
                        k.clone()
                    } else {
                        format!("{k}: {}", names.join(", "))
                    });
                }
            }
            let model = s(args, "modelName").unwrap_or("issue");
            let name = if parts.is_empty() {
                None
            } else {
                Some(parts.join(" · "))
            };
            Ok(plain(
                named,
                json!({"name": name, "description": name.as_ref().map(|n| format!("{}s where {n}", model.to_lowercase())), "icon": null}),
            ))
        }
        "availableUsers" => {
            // The accounts the caller may switch to: their own user in this workspace.
            let u = w
                .get("User", &w.viewer)
                .map(|u| Value::Object(u.clone()))
                .unwrap_or_default();
            let o = w
                .get("Organization", &w.org)
                .map(|o| Value::Object(o.clone()))
                .unwrap_or_default();
            let role = if u.get("owner") == Some(&json!(true)) {
                "owner"
            } else if u.get("admin") == Some(&json!(true)) {
                "admin"
            } else if u.get("guest") == Some(&json!(true)) {
                "guest"
            } else {
                "user"
            };
            let org = json!({"id": w.org, "name": o.get("name"), "urlKey": o.get("urlKey"), "logoUrl": o.get("logoUrl"), "allowedAuthServices": o.get("allowedAuthServices"),
                "samlEnabled": o.get("samlEnabled"), "scimEnabled": o.get("scimEnabled"), "createdAt": o.get("createdAt"), "deletionRequestedAt": o.get("deletionRequestedAt"),
                "previousUrlKeys": o.get("previousUrlKeys"), "userCount": w.all("User").count() as f64, "approximateUserCount": w.all("User").count() as f64,
                "hideNonPrimaryOrganizations": o.get("hideNonPrimaryOrganizations"), "authSettings": o.get("authSettings"), "enabled": true});
            let user = json!({"id": w.viewer, "name": u.get("name"), "displayName": u.get("displayName"), "email": u.get("email"), "avatarUrl": u.get("avatarUrl"),
                "active": u.get("active"), "createdAt": u.get("createdAt"), "role": role, "organization": org.clone()});
            Ok(plain(
                named,
                json!({"id": w.viewer, "email": u.get("email"), "users": [user], "lockedUsers": [], "availableOrganizations": [org], "lockedOrganizations": [], "lastUsedOrganizationId": w.org}),
            ))
        }
        "templatesForIntegration" => {
            // Templates an integration files issues with are those of its type (`slackAsks`…).
            let kind = s(args, "integrationType").unwrap_or("");
            let ids: Vec<String> = w
                .all("Template")
                .filter(|(_, t)| t.get("type").and_then(Value::as_str) == Some(kind) && live(t))
                .map(|(id, _)| id.clone())
                .collect();
            drop(w);
            Ok(ResolvedValue::list(ids.into_iter().map(move |id| {
                ResolvedValue::object(Ent {
                    ctx,
                    ty: "Template".into(),
                    id: id.into(),
                })
            })))
        }
        "microsoftTeamsChannels" => {
            // The teams and channels the workspace has connected projects to: the twin knows
            // Microsoft Teams only through those connections.
            if !w.all("Integration").any(|(_, i)| {
                i.get("service").and_then(Value::as_str) == Some("microsoftTeams") && live(i)
            }) {
                return Err(ctx.not_found("Integration"));
            }
            let mut teams: Vec<Value> = Vec::new();
            for (_, i) in w.all("Integration").filter(|(_, i)| {
                i.get("service").and_then(Value::as_str) == Some("microsoftTeamsProjectPost")
                    && live(i)
            }) {
                let Some(p) = i
                    .get("settings")
                    .and_then(|x| x.get("microsoftTeamsProjectPost"))
                else {
                    continue;
                };
                let channel = json!({"id": p.get("channelId"), "displayName": p.get("channelName"), "membershipType": p.get("membershipType")});
                match teams.iter_mut().find(|t| t.get("id") == p.get("teamId")) {
                    Some(t) => {
                        if let Some(c) = t["channels"].as_array_mut().filter(|c| !c.contains(&channel)) {
                            c.push(channel);
                        }
                    }
                    None => teams.push(json!({"id": p.get("teamId"), "displayName": p.get("teamName"), "channels": [channel]})),
                }
            }
            Ok(plain(named, json!({"success": true, "teams": teams})))
        }
        "organizationMeta" => {
            // The workspace of a URL key (a current or earlier one), else null. Its data region
            // is no fact the world holds, and answers as not supported.
            let key = s(args, "urlKey").unwrap_or("");
            let o = w
                .get("Organization", &w.org)
                .map(|o| Value::Object(o.clone()))
                .unwrap_or_default();
            let earlier = o
                .get("previousUrlKeys")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|k| k.as_str() == Some(key)));
            if s(&o, "urlKey") != Some(key) && !earlier && key != w.org {
                return Ok(ResolvedValue::null());
            }
            Ok(plain(
                named,
                json!({"allowedAuthServices": o.get("allowedAuthServices")}),
            ))
        }
        "ssoUrlFromEmail" => {
            // SAML sign-in is a workspace's when SAML is on and the email's domain is a
            // verified SAML domain of it; the identity provider's URL is no fact the twin holds.
            let email = s(args, "email").unwrap_or("");
            let domain = email
                .rsplit_once('@')
                .map(|(_, d)| d.to_ascii_lowercase())
                .unwrap_or_default();
            let saml_on = w
                .get("Organization", &w.org)
                .and_then(|o| o.get("samlEnabled"))
                .and_then(Value::as_bool)
                == Some(true);
            let saml_domain = w.all("OrganizationDomain").any(|(_, d)| {
                d.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.eq_ignore_ascii_case(&domain))
                    && d.get("verified") == Some(&json!(true))
                    && d.get("authType").and_then(Value::as_str) == Some("saml")
                    && live(d)
            });
            if domain.is_empty() || !saml_on || !saml_domain {
                return Err(ctx.invalid_input(
                    format!("Argument Validation Error - no SAML sign-in for {email:?}"),
                    "Single sign-on is not set up for this email's domain.",
                ));
            }
            Ok(plain(named, json!({"success": true})))
        }
        "verifyGitHubEnterpriseServerInstallation" => {
            let id = s(args, "integrationId").unwrap_or("");
            let i = w
                .get("Integration", id)
                .ok_or_else(|| ctx.not_found("Integration"))?;
            if i.get("service").and_then(Value::as_str) != Some("githubEnterpriseServer") {
                return Err(ctx.invalid_input(format!("Argument Validation Error - integration {id} is not a GitHub Enterprise Server integration"), "This is not a GitHub Enterprise Server integration."));
            }
            // The server's answer never reaches a sandbox.
            Ok(plain(named, json!({"success": false})))
        }
        _ => Err(ctx.unsupported(&format!("Query.{name}"))),
    }
}

/// Every id a filter names (`{id: {in: [...]}}`, `{id: {eq: ...}}`).
fn ids_in(f: &Value) -> Vec<String> {
    let Some(id) = f.get("id") else {
        return Vec::new();
    };
    match (id.get("eq"), id.get("in")) {
        (Some(Value::String(x)), _) => vec![x.clone()],
        (_, Some(Value::Array(a))) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

fn name_of(w: &Inner, id: &str) -> Option<String> {
    [
        "WorkflowState",
        "IssueLabel",
        "User",
        "Project",
        "ProjectStatus",
        "Team",
        "ProjectLabel",
        "Cycle",
    ]
    .iter()
    .find_map(|t| {
        w.get(t, id)
            .and_then(|e| e.get("name"))
            .and_then(Value::as_str)
            .map(String::from)
    })
}

/// Whether `prompt` names `name` as words of its own (not inside another word).
fn names(prompt: &str, name: &str) -> bool {
    let name = name.trim().to_lowercase();
    !name.is_empty()
        && prompt.match_indices(&name).any(|(at, _)| {
            let before = prompt[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            let after = prompt[at + name.len()..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_alphanumeric());
            before && after
        })
}

/// `{<field>: {id: {in: [...]}}}` for the entities of `ty` the prompt names.
fn by_name(
    w: &Inner,
    prompt: &str,
    ty: &str,
    keep: impl Fn(&crate::model::Entity) -> bool,
) -> Vec<String> {
    w.all(ty)
        .filter(|(_, e)| {
            live(e)
                && keep(e)
                && e.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| names(prompt, n))
        })
        .map(|(id, _)| id.clone())
        .collect()
}

/// The users the prompt names: "me"/"my"/"mine" is the viewer, others by name or display name.
fn people(w: &Inner, prompt: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if ["me", "my", "mine", "i"].iter().any(|x| names(prompt, x)) {
        out.push(w.viewer.clone());
    }
    for (id, u) in w.all("User") {
        let named = ["name", "displayName"].iter().any(|k| {
            u.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|n| names(prompt, n))
        });
        if named && !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

fn in_ids(ids: Vec<String>) -> Value {
    json!({"id": {"in": ids}})
}

fn issue_filter(w: &Inner, prompt: &str, team: Option<&str>) -> Map<String, Value> {
    let mut f = Map::new();
    let of_team = |e: &crate::model::Entity| {
        team.is_none_or(|t| {
            e.get("teamId")
                .and_then(Value::as_str)
                .is_none_or(|x| x == t)
        })
    };
    let states = by_name(w, prompt, "WorkflowState", of_team);
    if !states.is_empty() {
        f.insert("state".into(), in_ids(states));
    }
    let labels = by_name(w, prompt, "IssueLabel", of_team);
    if !labels.is_empty() {
        f.insert("labels".into(), json!({"some": in_ids(labels)}));
    }
    let projects = by_name(w, prompt, "Project", |_| true);
    if !projects.is_empty() {
        f.insert("project".into(), in_ids(projects));
    }
    let users = people(w, prompt);
    if !users.is_empty() {
        let who = if names(prompt, "created") || names(prompt, "creator") {
            "creator"
        } else {
            "assignee"
        };
        f.insert(who.into(), in_ids(users));
    }
    let priorities: Vec<i64> = [
        ("no priority", 0),
        ("urgent", 1),
        ("high", 2),
        ("medium", 3),
        ("low", 4),
    ]
    .iter()
    .filter(|(n, _)| names(prompt, n))
    .map(|(_, p)| *p)
    .collect();
    if !priorities.is_empty() {
        f.insert("priority".into(), json!({"in": priorities}));
    }
    if let Some(t) = team {
        if !f.is_empty() {
            f.insert("team".into(), json!({"id": {"eq": t}}));
        }
    }
    f
}

fn health(prompt: &str) -> Vec<&'static str> {
    [
        ("on track", "onTrack"),
        ("at risk", "atRisk"),
        ("off track", "offTrack"),
    ]
    .iter()
    .filter(|(n, _)| names(prompt, n))
    .map(|(_, h)| *h)
    .collect()
}

fn project_filter(w: &Inner, prompt: &str) -> Map<String, Value> {
    let mut f = Map::new();
    let statuses = by_name(w, prompt, "ProjectStatus", |_| true);
    if !statuses.is_empty() {
        f.insert("status".into(), in_ids(statuses));
    }
    let labels = by_name(w, prompt, "ProjectLabel", |_| true);
    if !labels.is_empty() {
        f.insert("labels".into(), json!({"some": in_ids(labels)}));
    }
    let users = people(w, prompt);
    if !users.is_empty() {
        f.insert("lead".into(), in_ids(users));
    }
    let h = health(prompt);
    if !h.is_empty() {
        f.insert("health".into(), json!({"in": h}));
    }
    f
}

fn initiative_filter(w: &Inner, prompt: &str) -> Map<String, Value> {
    let mut f = Map::new();
    let statuses: Vec<&str> = ["Planned", "Active", "Completed"]
        .into_iter()
        .filter(|n| names(prompt, n))
        .collect();
    if !statuses.is_empty() {
        f.insert("status".into(), json!({"in": statuses}));
    }
    let users = people(w, prompt);
    if !users.is_empty() {
        f.insert("owner".into(), in_ids(users));
    }
    let h = health(prompt);
    if !h.is_empty() {
        f.insert("health".into(), json!({"in": h}));
    }
    f
}
