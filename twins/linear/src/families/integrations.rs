//! Integrations (issue #35): a connect stores an `Integration` of its service in the
//! organization, listed where Linear lists them (`integrations`, `Organization.integrations`,
//! `archivedIntegrations` once archived) and removed by `integrationDelete`.
//!
//! A sandbox reaches no third party, so a connect cannot exchange its OAuth `code` or check an
//! API key with the provider: what is modelled is what Linear keeps once the provider said
//! yes. The inputs Linear checks itself are checked (a code, key or token that is empty, a
//! redirect or server URL that is not one, a Linear entity that does not exist, a service
//! name Linear does not know), workspace integrations are one per service (GitHub's asks for
//! `confirmReplace`; the others reconnect in place, as a repeated OAuth grant does), personal
//! ones one per user and service, and channel connections one per team, project, initiative
//! or view. Refreshes that would fetch from the provider find the integration and change
//! nothing, since nothing new can come from a provider the sandbox cannot reach.

use apollo_compiler::resolvers::FieldError;
use serde_json::{Map, Value, json};

use crate::mutate::{Done, Mut, s};

/// How many integrations of a service a scope holds.
#[derive(Clone, Copy)]
enum Scope {
    /// One for the workspace.
    Workspace,
    /// One per user (`…Personal`).
    Personal,
    /// One per Linear entity the named argument points at (`teamId` of `integrationSlackPost`).
    Per(&'static str),
}

/// The connects: mutation, the `IntegrationService` it stores, and its scope.
const CONNECTS: &[(&str, &str, Scope)] = &[
    ("airbyteIntegrationConnect", "airbyte", Scope::Workspace),
    ("integrationDiscord", "discord", Scope::Workspace),
    ("integrationFigma", "figma", Scope::Workspace),
    ("integrationFront", "front", Scope::Workspace),
    (
        "integrationGitHubPersonal",
        "githubPersonal",
        Scope::Personal,
    ),
    (
        "integrationGithubCommitCreate",
        "githubCommit",
        Scope::Workspace,
    ),
    ("integrationGithubConnect", "github", Scope::Workspace),
    (
        "integrationGithubImportConnect",
        "githubImport",
        Scope::Workspace,
    ),
    ("integrationGitlabConnect", "gitlab", Scope::Workspace),
    ("integrationGong", "gong", Scope::Workspace),
    (
        "integrationGoogleCalendarPersonalConnect",
        "googleCalendarPersonal",
        Scope::Personal,
    ),
    ("integrationGoogleSheets", "googleSheets", Scope::Workspace),
    ("integrationIntercom", "intercom", Scope::Workspace),
    ("integrationJiraPersonal", "jiraPersonal", Scope::Personal),
    (
        "integrationLaunchDarklyConnect",
        "launchDarkly",
        Scope::Workspace,
    ),
    (
        "integrationLaunchDarklyPersonalConnect",
        "launchDarklyPersonal",
        Scope::Personal,
    ),
    ("integrationMcpServerConnect", "mcpServer", Scope::Workspace),
    (
        "integrationMcpServerPersonalConnect",
        "mcpServerPersonal",
        Scope::Personal,
    ),
    (
        "integrationMicrosoftPersonalConnect",
        "microsoftPersonal",
        Scope::Personal,
    ),
    (
        "integrationMicrosoftTeams",
        "microsoftTeams",
        Scope::Workspace,
    ),
    (
        "integrationMicrosoftTeamsProjectPost",
        "microsoftTeamsProjectPost",
        Scope::Per("projectId"),
    ),
    ("integrationOpsgenieConnect", "opsgenie", Scope::Workspace),
    ("integrationPagerDutyConnect", "pagerDuty", Scope::Workspace),
    ("integrationSalesforce", "salesforce", Scope::Workspace),
    ("integrationSentryConnect", "sentry", Scope::Workspace),
    ("integrationSlack", "slack", Scope::Workspace),
    ("integrationSlackAsks", "slackAsks", Scope::Workspace),
    (
        "integrationSlackCustomViewNotifications",
        "slackCustomViewNotifications",
        Scope::Per("customViewId"),
    ),
    (
        "integrationSlackInitiativePost",
        "slackInitiativePost",
        Scope::Per("initiativeId"),
    ),
    (
        "integrationSlackOrgInitiativeUpdatesPost",
        "slackOrgInitiativeUpdatesPost",
        Scope::Workspace,
    ),
    (
        "integrationSlackOrgProjectUpdatesPost",
        "slackOrgProjectUpdatesPost",
        Scope::Workspace,
    ),
    ("integrationSlackPersonal", "slackPersonal", Scope::Personal),
    ("integrationSlackPost", "slackPost", Scope::Per("teamId")),
    // The service is the caller's: a project's issue posts or its update posts.
    (
        "integrationSlackProjectPost",
        "slackProjectPost",
        Scope::Per("projectId"),
    ),
    ("integrationZendesk", "zendesk", Scope::Workspace),
    ("jiraIntegrationConnect", "jira", Scope::Workspace),
];

/// Mutations on an integration that exists: the service it must be, if one.
const ON_EXISTING: &[(&str, Option<&str>)] = &[
    ("integrationIntercomDelete", Some("intercom")),
    ("integrationIntercomSettingsUpdate", Some("intercom")),
    ("integrationSettingsUpdate", None),
    ("integrationSlackWorkflowAccessUpdate", Some("slack")),
    ("updateIntegrationSlackScopes", Some("slack")),
    ("integrationGithubRemoveCodeAccess", None),
    ("integrationJiraUpdate", Some("jira")),
    ("integrationGithubImportRefresh", Some("githubImport")),
    ("integrationSalesforceMetadataRefresh", Some("salesforce")),
    ("refreshGoogleSheetsData", Some("googleSheets")),
    (
        "integrationOpsgenieRefreshScheduleMappings",
        Some("opsgenie"),
    ),
    (
        "integrationPagerDutyRefreshScheduleMappings",
        Some("pagerDuty"),
    ),
    ("integrationCustomerDataAttributesRefresh", None),
    ("integrationGitlabTestConnection", Some("gitlab")),
];

pub fn served(name: &str) -> bool {
    CONNECTS.iter().any(|(n, _, _)| *n == name)
        || ON_EXISTING.iter().any(|(n, _)| *n == name)
        || name == "integrationRequest"
}

pub(crate) fn run(m: &mut Mut<'_, '_, '_>, name: &str, args: &Value) -> Result<Done, FieldError> {
    if let Some((_, service, scope)) = CONNECTS.iter().find(|(n, _, _)| *n == name) {
        return connect(m, name, service, *scope, args);
    }
    if name == "integrationRequest" {
        // A request to Linear for an integration it does not have: the name is required,
        // and nothing in the workspace changes.
        let input = args.get("input").cloned().unwrap_or_default();
        if s(&input, "name").is_none_or(|n| n.trim().is_empty()) {
            return Err(m.ctx.invalid_input(
                "Argument Validation Error - name should not be empty".into(),
                "Name the integration you would like.",
            ));
        }
        if let Some(email) = s(&input, "email").filter(|e| !e.contains('@')) {
            return Err(m.ctx.invalid_input(
                format!("Argument Validation Error - email must be an email, got {email:?}"),
                "Enter a valid email address.",
            ));
        }
        return Ok(Done {
            entity: None,
            list: Vec::new(),
            extra: Map::new(),
        });
    }
    let service = ON_EXISTING
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, s)| *s);
    existing(m, name, service, args)
}

/// A value that must be given and not blank.
fn required<'a>(m: &Mut<'_, '_, '_>, v: &'a Value, key: &str) -> Result<&'a str, FieldError> {
    match s(v, key).map(str::trim) {
        Some(x) if !x.is_empty() => Ok(x),
        _ => Err(m.ctx.invalid_input(
            format!("Argument Validation Error - {key} should not be empty"),
            &format!("{key} is required."),
        )),
    }
}

/// A URL Linear would call back or connect to: `http(s)://host…`.
fn url<'a>(
    m: &Mut<'_, '_, '_>,
    v: &'a Value,
    key: &str,
    https_only: bool,
) -> Result<Option<&'a str>, FieldError> {
    let Some(u) = s(v, key) else { return Ok(None) };
    let rest = u.strip_prefix("https://").or_else(|| {
        if https_only {
            None
        } else {
            u.strip_prefix("http://")
        }
    });
    match rest {
        Some(host)
            if host
                .split('/')
                .next()
                .is_some_and(|h| !h.is_empty() && !h.contains(' ')) =>
        {
            Ok(Some(u))
        }
        _ => Err(m.ctx.invalid_input(
            format!(
                "Argument Validation Error - {key} must be a{} URL, got {u:?}",
                if https_only { "n https" } else { " valid" }
            ),
            &format!("{key} is not a valid URL."),
        )),
    }
}

fn secret(m: &mut Mut<'_, '_, '_>) -> String {
    m.w.new_id().replace('-', "")
}

/// The integrations of `service` in the same scope as a new one would be.
fn same_scope(m: &Mut<'_, '_, '_>, service: &str, scope: Scope, key: Option<&str>) -> Vec<String> {
    let viewer = m.w.viewer.clone();
    m.w.all("Integration")
        .filter(|(_, i)| {
            i.get("service").and_then(Value::as_str) == Some(service)
                && i.get("archivedAt").is_none_or(Value::is_null)
        })
        .filter(|(_, i)| match scope {
            Scope::Workspace => true,
            Scope::Personal => i.get("creatorId").and_then(Value::as_str) == Some(viewer.as_str()),
            Scope::Per(k) => i.get(k).and_then(Value::as_str) == key,
        })
        .map(|(id, _)| id.clone())
        .collect()
}

fn connect(
    m: &mut Mut<'_, '_, '_>,
    name: &str,
    service: &str,
    scope: Scope,
    args: &Value,
) -> Result<Done, FieldError> {
    let mut input = Map::new();
    let mut settings = Map::new();
    let mut extra = Map::new();
    let mut service = service.to_string();
    // What each connect is given beyond an OAuth code, checked as Linear checks it.
    let given = args.get("input").unwrap_or(args);
    for key in ["code", "apiKey", "accessToken", "installationId"] {
        if given.get(key).is_some() {
            required(m, given, key)?;
        }
    }
    url(m, args, "redirectUri", false)?;
    match name {
        "integrationJiraPersonal"
            if s(args, "code").is_none() && s(args, "accessToken").is_none() =>
        {
            return Err(m.ctx.invalid_input(
                "Argument Validation Error - either code or accessToken is required".into(),
                "Connect Jira with an OAuth code or a personal access token.",
            ));
        }
        "jiraIntegrationConnect" => {
            let host = required(m, given, "hostname")?.to_string();
            let email = required(m, given, "email")?.to_string();
            if !email.contains('@') {
                return Err(m.ctx.invalid_input(
                    format!("Argument Validation Error - email must be an email, got {email:?}"),
                    "Enter the email of the Jira account.",
                ));
            }
            settings.insert("jira".into(), json!({"hostname": host, "email": email, "manualSetup": given.get("manualSetup").and_then(Value::as_bool).unwrap_or(false)}));
        }
        "integrationGitlabConnect" => {
            let u = url(m, args, "gitlabUrl", false)?
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_string();
            let readonly = args
                .get("readonly")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            settings.insert(
                "gitLab".into(),
                json!({"url": u, "readonly": readonly, "expiresAt": args.get("expiresAt")}),
            );
        }
        "integrationGithubConnect" | "integrationGitHubPersonal" => {
            let code_access = args
                .get("codeAccess")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let host = s(args, "githubHost").or_else(|| s(args, "enterpriseUrl"));
            settings.insert("gitHub".into(), json!({"codeAccess": code_access, "installationId": s(args, "installationId"), "host": host}));
        }
        "integrationMcpServerConnect" | "integrationMcpServerPersonalConnect" => {
            let u = url(m, args, "serverUrl", true)?
                .unwrap_or_default()
                .to_string();
            // Header names are kept; their values are credentials for the server, not Linear's.
            let headers: Vec<Value> = args
                .get("customHeaders")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|h| s(h, "name").map(|n| json!(n)))
                .collect();
            settings.insert(
                "mcpServer".into(),
                json!({"serverUrl": u, "customHeaderNames": headers}),
            );
            if let Some(t) = s(args, "teamId") {
                input.insert("teamId".into(), json!(t));
            }
        }
        "integrationSlackPost" => {
            input.insert("teamId".into(), json!(s(args, "teamId")));
        }
        "integrationSlackProjectPost" => {
            let asked = s(args, "service").unwrap_or("");
            if asked != "slackProjectPost" && asked != "slackProjectUpdatesPost" {
                return Err(m.ctx.invalid_input(format!("Argument Validation Error - service must be slackProjectPost or slackProjectUpdatesPost, got {asked:?}"), "Unknown Slack project notification service."));
            }
            service = asked.to_string();
            input.insert("projectId".into(), json!(s(args, "projectId")));
        }
        "integrationSlackCustomViewNotifications" => {
            input.insert("customViewId".into(), json!(s(args, "customViewId")));
        }
        "integrationSlackInitiativePost" => {
            input.insert("initiativeId".into(), json!(s(args, "initiativeId")));
        }
        "integrationMicrosoftTeamsProjectPost" => {
            input.insert("projectId".into(), json!(s(args, "projectId")));
            // `teamId` here is the Microsoft Teams team, not a Linear team.
            let channel = required(m, args, "channelId")?.to_string();
            settings.insert("microsoftTeamsProjectPost".into(), json!({"channelId": channel, "channelName": s(args, "channelName"), "teamId": s(args, "teamId"), "teamName": s(args, "teamName"), "membershipType": s(args, "membershipType")}));
        }
        "integrationZendesk" | "integrationSalesforce" => {
            let sub = required(m, args, "subdomain")?.to_string();
            settings.insert(service.clone(), json!({"subdomain": sub}));
        }
        "integrationSentryConnect" => {
            let org = required(m, args, "organizationSlug")?.to_string();
            settings.insert("sentry".into(), json!({"organizationSlug": org}));
        }
        "integrationLaunchDarklyConnect" => {
            let project = required(m, args, "projectKey")?.to_string();
            let env = required(m, args, "environment")?.to_string();
            settings.insert(
                "launchDarkly".into(),
                json!({"projectKey": project, "environment": env}),
            );
        }
        "integrationIntercom" => {
            if let Some(d) = url(m, args, "domainUrl", false)? {
                settings.insert("intercom".into(), json!({"domainUrl": d}));
            }
        }
        _ => {}
    }
    // The Linear entity a channel connection belongs to must exist (checked when stored).
    let key = match scope {
        Scope::Per(k) => input.get(k).and_then(Value::as_str).map(String::from),
        _ => None,
    };
    let before = same_scope(m, &service, scope, key.as_deref());
    if name == "integrationGithubConnect"
        && !before.is_empty()
        && !args
            .get("confirmReplace")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    {
        return Err(m.ctx.invalid_input("Argument Validation Error - a GitHub integration already exists; set confirmReplace to replace it".into(), "This workspace is already connected to GitHub. Confirm to replace the connection."));
    }
    let scopes: Vec<Value> = args
        .get("requestedScopes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let webhook_secret = matches!(
        name,
        "integrationGitlabConnect" | "integrationGithubCommitCreate"
    )
    .then(|| secret(m));
    let org = m.w.org.clone();
    input.insert("service".into(), json!(service));
    input.insert("organizationId".into(), json!(org));
    input.insert("settings".into(), Value::Object(settings));
    input.insert("scopes".into(), Value::Array(scopes));
    if let Some(w) = &webhook_secret {
        input.insert("_webhookSecret".into(), json!(w));
    }
    let id = match before.first() {
        // A workspace's second GitHub connection replaces the first; other services
        // reconnect in place.
        Some(old) if name == "integrationGithubConnect" => {
            let old = old.clone();
            let gone = m.w.remove("Integration", &old);
            m.record("Integration", &old, gone.as_ref(), None);
            m.create("Integration", Value::Object(input))?
        }
        Some(old) => {
            let old = old.clone();
            m.update("Integration", &old, &Value::Object(input))?;
            old
        }
        None => m.create("Integration", Value::Object(input))?,
    };
    if let Some(w) = webhook_secret {
        extra.insert("webhookSecret".into(), json!(w));
    }
    match name {
        // A channel is reached through Slack's incoming webhook, which posts without a bot in
        // the channel.
        "integrationSlackCustomViewNotifications"
        | "integrationSlackInitiativePost"
        | "integrationSlackOrgInitiativeUpdatesPost"
        | "integrationSlackOrgProjectUpdatesPost"
        | "integrationSlackPost"
        | "integrationSlackProjectPost" => {
            extra.insert("addBot".into(), json!(false));
        }
        "integrationGitlabConnect" => {
            for k in [
                "error",
                "errorRequest",
                "errorResponseBody",
                "errorResponseHeaders",
            ] {
                extra.insert(k.into(), Value::Null);
            }
        }
        _ => {}
    }
    let mut d = Done::one("Integration", &id);
    d.extra = extra;
    Ok(d)
}

/// The integration a mutation on an existing one names: by `integrationId`/`id`, else the
/// workspace's one of the service.
fn find(m: &Mut<'_, '_, '_>, args: &Value, service: Option<&str>) -> Result<String, FieldError> {
    let named = s(args, "integrationId")
        .or_else(|| s(args, "id"))
        .or_else(|| args.get("input").and_then(|i| s(i, "id")));
    let found = match named {
        Some(id) => m.w.get("Integration", id).map(|_| id.to_string()),
        None => {
            m.w.all("Integration")
                .find(|(_, i)| {
                    service.is_some()
                        && i.get("service").and_then(Value::as_str) == service
                        && i.get("archivedAt").is_none_or(Value::is_null)
                })
                .map(|(id, _)| id.clone())
        }
    };
    let id = found.ok_or_else(|| m.ctx.not_found("Integration"))?;
    let has =
        m.w.str_field("Integration", &id, "service")
            .unwrap_or("")
            .to_string();
    if let Some(want) = service {
        if has != want {
            return Err(m.ctx.invalid_input(format!("Argument Validation Error - integration {id} is a {has} integration, not {want}"), &format!("This is not a {want} integration.")));
        }
    }
    Ok(id)
}

fn existing(
    m: &mut Mut<'_, '_, '_>,
    name: &str,
    service: Option<&str>,
    args: &Value,
) -> Result<Done, FieldError> {
    if name == "integrationCustomerDataAttributesRefresh" {
        let asked = required(m, args.get("input").unwrap_or(args), "service")?.to_string();
        let id = find(m, &json!({}), Some(&asked))?;
        return Ok(Done::one("Integration", &id));
    }
    let id = find(m, args, service)?;
    let service =
        m.w.str_field("Integration", &id, "service")
            .unwrap_or("")
            .to_string();
    let mut d = Done::one("Integration", &id);
    match name {
        "integrationIntercomDelete" => {
            let gone = m.w.remove("Integration", &id);
            m.record("Integration", &id, gone.as_ref(), None);
        }
        "integrationIntercomSettingsUpdate" | "integrationSettingsUpdate" => {
            let patch = if name == "integrationIntercomSettingsUpdate" {
                json!({"intercom": args.get("input")})
            } else {
                args.get("input").cloned().unwrap_or_default()
            };
            // Settings are kept under the service's own key (`slack`, `gitHub`, `jira`…):
            // another service's are refused.
            // (`gitHubPersonal` is a `githubPersonal` integration's: case aside, the same name.)
            let own = |k: &str| k.eq_ignore_ascii_case(&service);
            let patch = patch.as_object().cloned().unwrap_or_default();
            if let Some((k, _)) = patch.iter().find(|(k, v)| !v.is_null() && !own(k)) {
                return Err(m.ctx.invalid_input(format!("Argument Validation Error - {k} settings do not apply to a {service} integration"), "These settings belong to another integration."));
            }
            m.update_with("Integration", &id, |i| {
                let settings = i.entry("settings").or_insert_with(|| json!({}));
                for (k, v) in patch.into_iter().filter(|(_, v)| !v.is_null()) {
                    let slot = settings
                        .as_object_mut()
                        .map(|o| o.entry(k).or_insert_with(|| json!({})));
                    if let (Some(Value::Object(slot)), Value::Object(v)) = (slot, v) {
                        slot.extend(v.into_iter().filter(|(_, x)| !x.is_null()));
                    }
                }
            })?;
        }
        "integrationSlackWorkflowAccessUpdate" => {
            let on = args
                .get("enabled")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            m.update_with("Integration", &id, |i| {
                set(i, "slack", "enableWorkflowAccess", json!(on))
            })?;
        }
        "updateIntegrationSlackScopes" => {
            required(m, args, "code")?;
            url(m, args, "redirectUri", false)?;
            let asked: Vec<Value> = args
                .get("requestedScopes")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            m.update_with("Integration", &id, |i| {
                let mut scopes = i
                    .get("scopes")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for x in asked {
                    if !scopes.contains(&x) {
                        scopes.push(x);
                    }
                }
                i.insert("scopes".into(), Value::Array(scopes));
            })?;
        }
        "integrationGithubRemoveCodeAccess" => {
            if service != "github" && service != "githubPersonal" {
                return Err(m.ctx.invalid_input(format!("Argument Validation Error - integration {id} is a {service} integration, not GitHub"), "This is not a GitHub integration."));
            }
            m.update_with("Integration", &id, |i| {
                set(i, "gitHub", "codeAccess", json!(false))
            })?;
            // Code access came with the app's wider install; without it, the basic app stays.
            d.extra.insert("action".into(), json!("Done"));
        }
        "integrationJiraUpdate" => {
            let input = args.get("input").cloned().unwrap_or_default();
            if let Some(email) = s(&input, "email").filter(|e| !e.contains('@')) {
                return Err(m.ctx.invalid_input(
                    format!("Argument Validation Error - email must be an email, got {email:?}"),
                    "Enter the email of the Jira account.",
                ));
            }
            let email = s(&input, "email").map(String::from);
            m.update_with("Integration", &id, |i| {
                if let Some(e) = email {
                    set(i, "jira", "email", json!(e));
                }
            })?;
        }
        // The test calls the GitLab server, which no sandbox reaches: it did not succeed, and
        // no answer of GitLab's is there to report.
        "integrationGitlabTestConnection" => {
            d.extra.insert("success".into(), json!(false));
            for k in [
                "error",
                "errorRequest",
                "errorResponseBody",
                "errorResponseHeaders",
            ] {
                d.extra.insert(k.into(), Value::Null);
            }
        }
        // Refreshes from the provider: nothing new can arrive in a sandbox.
        _ => {}
    }
    Ok(d)
}

/// `settings.<service>.<key> = v` on an integration.
fn set(i: &mut crate::model::Entity, service: &str, key: &str, v: Value) {
    let settings = i.entry("settings").or_insert_with(|| json!({}));
    if let Some(o) = settings.as_object_mut() {
        let slot = o.entry(service).or_insert_with(|| json!({}));
        if let Some(slot) = slot.as_object_mut() {
            slot.insert(key.into(), v);
        }
    }
}
