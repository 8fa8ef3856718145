//! Native tests for issue #35's surface: the mutation families of `src/families/` and the
//! root queries of `src/lookups.rs`, each with Linear's rules and its refusals.

use pome_twin_sdk::{Auth, Call, Method, Request, Twin, Value, json};

use crate::World;

const TASK24: &str =
    include_str!("../../../tests/tasks-compat/bundled/24-linear-issue-triage.seed.json");

fn world() -> World {
    let mut v: Value = serde_json::from_str(TASK24).unwrap();
    v["tokens"]
        .as_array_mut()
        .unwrap()
        .push(json!({"token": "lin_dev", "user": "dev@pome-twin.test"}));
    World::init(Some(v)).unwrap()
}

fn ask(w: &mut World, query: &str, vars: Value, key: Option<&str>) -> Value {
    let mut req = Request::new(Method::Post, "/graphql")
        .with_json(&json!({"query": query, "variables": vars}));
    if let Some(k) = key {
        req.auth = Auth::Invalid;
        req.headers.push(("authorization".into(), k.into()));
    }
    World::router().dispatch(w, &mut Call::new(req)).json_body()
}

/// The data of an answer that must have no errors.
fn ok(w: &mut World, query: &str, vars: Value) -> Value {
    let body = ask(w, query, vars, None);
    assert!(body.get("errors").is_none(), "{query}: {body}");
    body["data"].clone()
}

/// The first error (message, code) of an answer that must fail.
fn refused(w: &mut World, query: &str, vars: Value) -> (String, String) {
    let body = ask(w, query, vars, None);
    let e = &body["errors"][0];
    assert!(e.is_object(), "{query}: no error in {body}");
    (
        e["message"].as_str().unwrap().to_string(),
        e["extensions"]["code"].as_str().unwrap().to_string(),
    )
}

#[test]
fn an_integration_connects_lists_reconnects_and_is_removed_issue_35() {
    let mut w = world();
    let d = ok(
        &mut w,
        "mutation { integrationSlack(code: \"c1\", redirectUri: \"https://app.test/cb\", requestedScopes: [\"chat:write\"]) { success integration { id service creator { id } organization { id } } } }",
        json!({}),
    );
    let i = &d["integrationSlack"]["integration"];
    assert_eq!(
        (i["service"].as_str(), i["creator"]["id"].as_str()),
        (Some("slack"), Some("user_admin"))
    );
    let id = i["id"].as_str().unwrap().to_string();
    let listed = ok(
        &mut w,
        "{ integrations { nodes { id service } } organization { integrations { nodes { id } } } }",
        json!({}),
    );
    assert_eq!(
        listed["integrations"]["nodes"],
        json!([{"id": id, "service": "slack"}])
    );
    assert_eq!(
        listed["organization"]["integrations"]["nodes"],
        json!([{"id": id}])
    );
    // A second grant reconnects the same integration.
    let again = ok(
        &mut w,
        "mutation { integrationSlack(code: \"c2\", redirectUri: \"https://app.test/cb\") { integration { id } } }",
        json!({}),
    );
    assert_eq!(again["integrationSlack"]["integration"]["id"], json!(id));
    let scopes = |w: &mut World| {
        ok(w, "query($i: String!) { integrationHasScopes(integrationId: $i, scopes: [\"chat:write\", \"channels:read\"]) { hasAllScopes missingScopes } }", json!({"i": id}))["integrationHasScopes"].clone()
    };
    assert_eq!(
        scopes(&mut w),
        json!({"hasAllScopes": false, "missingScopes": ["chat:write", "channels:read"]}),
        "the reconnect asked for no scopes"
    );
    ok(
        &mut w,
        "mutation($i: String!) { updateIntegrationSlackScopes(integrationId: $i, code: \"c3\", redirectUri: \"https://app.test/cb\", requestedScopes: [\"chat:write\", \"channels:read\"]) { success } }",
        json!({"i": id}),
    );
    assert_eq!(
        scopes(&mut w),
        json!({"hasAllScopes": true, "missingScopes": []})
    );
    // Settings are the service's own.
    let (m, code) = refused(
        &mut w,
        "mutation($i: String!) { integrationSettingsUpdate(id: $i, input: {intercom: {sendNoteOnComment: true}}) { success } }",
        json!({"i": id}),
    );
    assert_eq!(code, "INVALID_INPUT", "{m}");
    ok(
        &mut w,
        "mutation($i: String!) { integrationSlackWorkflowAccessUpdate(integrationId: $i, enabled: true) { success } }",
        json!({"i": id}),
    );
    // Archived, it is listed among the archived; deleted, it is gone.
    ok(
        &mut w,
        "mutation($i: String!) { integrationArchive(id: $i) { success } }",
        json!({"i": id}),
    );
    let d = ok(
        &mut w,
        "{ archivedIntegrations { id service archivedAt } }",
        json!({}),
    );
    assert_eq!(d["archivedIntegrations"][0]["service"], "slack");
    ok(
        &mut w,
        "mutation($i: String!) { integrationDelete(id: $i) { success } }",
        json!({"i": id}),
    );
    assert_eq!(
        ok(
            &mut w,
            "{ integrations(includeArchived: true) { nodes { id } } }",
            json!({})
        )["integrations"]["nodes"],
        json!([])
    );
}

#[test]
fn connects_check_what_linear_checks_issue_35() {
    let mut w = world();
    let bad = [
        (
            "mutation { integrationSlack(code: \"  \", redirectUri: \"https://app.test/cb\") { success } }",
            "INVALID_INPUT",
        ),
        (
            "mutation { integrationFigma(code: \"c\", redirectUri: \"not a url\") { success } }",
            "INVALID_INPUT",
        ),
        (
            "mutation { integrationSlackPost(code: \"c\", redirectUri: \"https://a.test\", teamId: \"NOPE\") { success } }",
            "INVALID_INPUT",
        ),
        (
            "mutation { integrationSlackProjectPost(code: \"c\", redirectUri: \"https://a.test\", projectId: \"nope\", service: \"slackProjectPost\") { success } }",
            "INVALID_INPUT",
        ),
        (
            "mutation { integrationMcpServerConnect(serverUrl: \"http://mcp.test\") { success } }",
            "INVALID_INPUT",
        ),
        (
            "mutation { jiraIntegrationConnect(input: {accessToken: \"t\", email: \"nobody\", hostname: \"acme.atlassian.net\"}) { success } }",
            "INVALID_INPUT",
        ),
        (
            "mutation { integrationJiraPersonal { success } }",
            "INVALID_INPUT",
        ),
        (
            "mutation { integrationIntercomDelete { success } }",
            "INVALID_INPUT",
        ),
    ];
    for (q, code) in bad {
        assert_eq!(refused(&mut w, q, json!({})).1, code, "{q}");
    }
    assert_eq!(refused(&mut w, "mutation { integrationSlackPost(code: \"c\", redirectUri: \"https://a.test\", teamId: \"NOPE\") { success } }", json!({})).0, "Entity not found: Team");
    assert_eq!(
        ok(&mut w, "{ integrations { nodes { id } } }", json!({}))["integrations"]["nodes"],
        json!([]),
        "nothing refused was stored"
    );
    // A channel per team; GitHub once per workspace unless replaced.
    let d = ok(
        &mut w,
        "mutation { integrationSlackPost(code: \"c\", redirectUri: \"https://a.test\", teamId: \"ENG\") { success addBot integration { service team { key } } } }",
        json!({}),
    );
    assert_eq!(
        d["integrationSlackPost"]["integration"],
        json!({"service": "slackPost", "team": {"key": "ENG"}})
    );
    let gh = "mutation($r: Boolean) { integrationGithubConnect(code: \"c\", installationId: \"42\", confirmReplace: $r) { integration { id } } }";
    let first = ok(&mut w, gh, json!({}))["integrationGithubConnect"]["integration"]["id"].clone();
    assert!(refused(&mut w, gh, json!({})).0.contains("confirmReplace"));
    let second =
        ok(&mut w, gh, json!({"r": true}))["integrationGithubConnect"]["integration"]["id"].clone();
    assert_ne!(first, second);
    let d = ok(
        &mut w,
        "{ integrations { nodes { id service } } }",
        json!({}),
    );
    assert_eq!(
        d["integrations"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["service"] == "github")
            .count(),
        1
    );
    let d = ok(
        &mut w,
        "mutation { integrationGitlabConnect(accessToken: \"glpat\", gitlabUrl: \"https://gitlab.acme.test\") { success webhookSecret error integration { service } } }",
        json!({}),
    );
    assert!(
        d["integrationGitlabConnect"]["webhookSecret"]
            .as_str()
            .is_some_and(|s| s.len() >= 16)
    );
    // A personal connection is the user's, and the user disconnects it.
    ok(
        &mut w,
        "mutation { integrationSlackPersonal(code: \"c\", redirectUri: \"https://a.test\") { success } }",
        json!({}),
    );
    ok(
        &mut w,
        "mutation { userExternalUserDisconnect(service: \"slack\") { success } }",
        json!({}),
    );
    assert!(
        refused(
            &mut w,
            "mutation { userExternalUserDisconnect(service: \"slack\") { success } }",
            json!({})
        )
        .0
        .contains("no slack account")
    );
}

#[test]
fn oauth_applications_are_made_rotated_and_archived_issue_35() {
    let mut w = world();
    assert!(refused(&mut w, "mutation { oauthApplicationCreate(input: {name: \"Bot\", developer: \"Acme\", redirectUris: []}) { success } }", json!({})).0.contains("redirectUris"));
    let d = ok(
        &mut w,
        "mutation { oauthApplicationCreate(input: {name: \"Bot\", developer: \"Acme\", developerUrl: \"https://acme.test\", redirectUris: [\"https://acme.test/cb\"]}) { success clientSecret webhookSecret application { id clientId name distribution grantTypes webhookEnabled redirectUris } } }",
        json!({}),
    );
    let c = &d["oauthApplicationCreate"];
    let app = c["application"].clone();
    assert_eq!(
        (
            app["distribution"].as_str(),
            app["webhookEnabled"].as_bool(),
            c["webhookSecret"].is_null()
        ),
        (Some("private"), Some(false), true)
    );
    let (id, client) = (
        app["id"].as_str().unwrap().to_string(),
        app["clientId"].as_str().unwrap().to_string(),
    );
    let secret = c["clientSecret"].as_str().unwrap().to_string();
    let info = ok(
        &mut w,
        "query($c: String!) { applicationInfo(clientId: $c) { id name developer developerUrl clientId } failuresForOauthWebhooks(oauthClientId: $c) { id } }",
        json!({"c": client}),
    );
    assert_eq!(
        info["applicationInfo"],
        json!({"id": id, "name": "Bot", "developer": "Acme", "developerUrl": "https://acme.test", "clientId": client})
    );
    let rotated = ok(
        &mut w,
        "mutation($i: String!) { oauthApplicationRotateSecret(id: $i) { success clientSecret } }",
        json!({"i": id}),
    );
    assert_ne!(
        rotated["oauthApplicationRotateSecret"]["clientSecret"].as_str(),
        Some(secret.as_str())
    );
    assert!(
        refused(
            &mut w,
            "mutation($i: String!) { oauthApplicationRotateWebhookSecret(id: $i) { success } }",
            json!({"i": id})
        )
        .0
        .contains("no webhook URL")
    );
    let d = ok(
        &mut w,
        "mutation($i: String!) { oauthApplicationUpdate(id: $i, input: {webhookUrl: \"https://acme.test/hook\", webhookEnabled: true}) { application { webhookEnabled webhookUrl } } }",
        json!({"i": id}),
    );
    assert_eq!(
        d["oauthApplicationUpdate"]["application"]["webhookEnabled"],
        true
    );
    assert!(ok(&mut w, "mutation($i: String!) { oauthApplicationRotateWebhookSecret(id: $i) { webhookSecret } }", json!({"i": id}))["oauthApplicationRotateWebhookSecret"]["webhookSecret"].as_str().unwrap().starts_with("lin_wh_"));
    assert_eq!(
        ok(&mut w, "{ oauthApplications { id } }", json!({}))["oauthApplications"],
        json!([{"id": id}])
    );
    ok(
        &mut w,
        "mutation($i: String!) { oauthApplicationArchive(id: $i) { success } }",
        json!({"i": id}),
    );
    assert_eq!(
        ok(&mut w, "{ oauthApplications { id } }", json!({}))["oauthApplications"],
        json!([])
    );
    assert_eq!(
        refused(
            &mut w,
            "query($c: String!) { applicationInfo(clientId: $c) { id } }",
            json!({"c": client})
        )
        .0,
        "Entity not found: OAuthApplication"
    );
}

#[test]
fn flags_move_until_locked_and_success_says_so_issue_35() {
    let mut w = world();
    let flag = |w: &mut World, op: &str| {
        ok(w, &format!("mutation {{ userFlagUpdate(flag: completedOnboarding, operation: {op}) {{ success flag value }} }}"), json!({}))["userFlagUpdate"].clone()
    };
    assert_eq!(
        flag(&mut w, "incr"),
        json!({"success": true, "flag": "completedOnboarding", "value": 1})
    );
    assert_eq!(flag(&mut w, "incr")["value"], 2);
    assert_eq!(flag(&mut w, "decr")["value"], 1);
    assert_eq!(flag(&mut w, "lock")["value"], 1);
    assert_eq!(
        flag(&mut w, "incr"),
        json!({"success": false, "flag": "completedOnboarding", "value": 1}),
        "a locked flag does not move"
    );
    ok(
        &mut w,
        "mutation { userSettingsFlagsReset(flags: [completedOnboarding]) { success } }",
        json!({}),
    );
    assert_eq!(
        flag(&mut w, "incr"),
        json!({"success": true, "flag": "completedOnboarding", "value": 1})
    );
    let d = ok(
        &mut w,
        "mutation { notificationCategoryChannelSubscriptionUpdate(category: mentions, channel: email, subscribe: false) { success userSettings { notificationCategoryPreferences { mentions { email } } } } }",
        json!({}),
    );
    assert_eq!(
        d["notificationCategoryChannelSubscriptionUpdate"]["userSettings"]["notificationCategoryPreferences"]
            ["mentions"]["email"],
        false
    );
    assert_eq!(
        refused(
            &mut w,
            "mutation { logoutSession(sessionId: \"s1\") { success } }",
            json!({})
        )
        .0,
        "Entity not found: AuthenticationSession"
    );
    assert_eq!(
        ok(
            &mut w,
            "mutation { logoutOtherSessions { success } }",
            json!({})
        )["logoutOtherSessions"]["success"],
        true
    );
}

#[test]
fn deleting_the_workspace_takes_the_emailed_code_and_can_be_cancelled_issue_35() {
    let mut w = world();
    let dev = ask(
        &mut w,
        "mutation { organizationDeleteChallenge { success } }",
        json!({}),
        Some("lin_dev"),
    );
    assert_eq!(dev["errors"][0]["extensions"]["code"], "FORBIDDEN", "{dev}");
    assert!(
        refused(
            &mut w,
            "mutation { organizationDelete(input: {deletionCode: \"000000\"}) { success } }",
            json!({})
        )
        .0
        .contains("invalid deletion code")
    );
    ok(
        &mut w,
        "mutation { organizationDeleteChallenge { success } }",
        json!({}),
    );
    let org = w.0.org.clone();
    let code =
        w.0.str_field("Organization", &org, "deletionCode")
            .unwrap()
            .to_string();
    assert_eq!(code.len(), 6);
    ok(
        &mut w,
        "mutation($c: String!) { organizationDelete(input: {deletionCode: $c}) { success } }",
        json!({"c": code}),
    );
    assert!(
        ok(
            &mut w,
            "{ organization { deletionRequestedAt } }",
            json!({})
        )["organization"]["deletionRequestedAt"]
            .is_string()
    );
    ok(
        &mut w,
        "mutation { organizationCancelDelete { success } }",
        json!({}),
    );
    assert!(
        ok(
            &mut w,
            "{ organization { deletionRequestedAt } }",
            json!({})
        )["organization"]["deletionRequestedAt"]
            .is_null()
    );
    assert!(
        refused(
            &mut w,
            "mutation { organizationCancelDelete { success } }",
            json!({})
        )
        .0
        .contains("not being deleted")
    );
    // A trial runs 14 days from now, once.
    ok(
        &mut w,
        "mutation { organizationStartTrialForPlan(input: {planType: \"business\"}) { success } }",
        json!({}),
    );
    let d = ok(
        &mut w,
        "{ organization { trialStartsAt trialEndsAt } }",
        json!({}),
    );
    let days = |k: &str| {
        chrono::DateTime::parse_from_rfc3339(d["organization"][k].as_str().unwrap()).unwrap()
    };
    assert_eq!((days("trialEndsAt") - days("trialStartsAt")).num_days(), 14);
    assert!(
        refused(
            &mut w,
            "mutation { organizationStartTrial { success } }",
            json!({})
        )
        .0
        .contains("already had a trial")
    );
}

#[test]
fn a_domain_is_verified_with_its_code_before_it_is_claimed_issue_35() {
    let mut w = world();
    let d = ok(
        &mut w,
        "mutation { organizationDomainCreate(input: {name: \"acme.test\", verificationEmail: \"it@acme.test\"}) { organizationDomain { id verified claimed } } }",
        json!({}),
    );
    let dom = &d["organizationDomainCreate"]["organizationDomain"];
    assert_eq!(
        (dom["verified"].as_bool(), dom["claimed"].as_bool()),
        (Some(false), Some(false))
    );
    let id = dom["id"].as_str().unwrap().to_string();
    let txt = ok(
        &mut w,
        "query($i: String!) { organizationDomainClaimRequest(id: $i) { verificationString } }",
        json!({"i": id}),
    );
    assert!(
        txt["organizationDomainClaimRequest"]["verificationString"]
            .as_str()
            .unwrap()
            .starts_with("linear-domain-verification=")
    );
    assert!(
        refused(
            &mut w,
            "mutation($i: String!) { organizationDomainClaim(id: $i) { success } }",
            json!({"i": id})
        )
        .0
        .contains("not verified")
    );
    assert!(refused(&mut w, "mutation($i: String!) { organizationDomainVerify(input: {organizationDomainId: $i, verificationCode: \"nope\"}) { success } }", json!({"i": id})).0.contains("invalid verification code"));
    let code =
        w.0.str_field("OrganizationDomain", &id, "verificationCode")
            .unwrap()
            .to_string();
    let d = ok(
        &mut w,
        "mutation($i: String!, $c: String!) { organizationDomainVerify(input: {organizationDomainId: $i, verificationCode: $c}) { organizationDomain { verified } } }",
        json!({"i": id, "c": code}),
    );
    assert_eq!(
        d["organizationDomainVerify"]["organizationDomain"]["verified"],
        true
    );
    ok(
        &mut w,
        "mutation($i: String!) { organizationDomainClaim(id: $i) { success } }",
        json!({"i": id}),
    );
    assert_eq!(
        ok(
            &mut w,
            "query($i: String!) { organizationDomain: organizationDomainClaimRequest(id: $i) { verificationString } }",
            json!({"i": id})
        )["organizationDomain"]["verificationString"],
        txt["organizationDomainClaimRequest"]["verificationString"]
    );
    assert_eq!(w.0.get("OrganizationDomain", &id).unwrap()["claimed"], true);
}

#[test]
fn a_pipeline_syncs_moves_and_completes_its_release_issue_35() {
    let mut w = world();
    let p = ok(
        &mut w,
        "mutation { releasePipelineCreate(input: {name: \"Web\"}) { releasePipeline { id } } }",
        json!({}),
    )["releasePipelineCreate"]["releasePipeline"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (name, kind, pos) in [
        ("Planned", "planned", 0),
        ("Staging", "started", 1),
        ("Live", "completed", 2),
    ] {
        ok(
            &mut w,
            "mutation($p: String!, $n: String!, $t: ReleaseStageType!, $o: Float!) { releaseStageCreate(input: {pipelineId: $p, name: $n, type: $t, position: $o, color: \"#000\"}) { success } }",
            json!({"p": p, "n": name, "t": kind, "o": pos}),
        );
    }
    let sync = "mutation($p: String!, $refs: [IssueReferenceInput!]) { releaseSync(input: {pipelineId: $p, commitSha: \"abc123\", version: \"1.2.0\", issueReferences: $refs}) { release { id version commitSha stage { name } } } }";
    let d = ok(
        &mut w,
        sync,
        json!({"p": p, "refs": [{"identifier": "ENG-1", "commitSha": "abc123"}, {"identifier": "NOPE-9", "commitSha": "abc123"}]}),
    );
    let r = d["releaseSync"]["release"].clone();
    assert_eq!(
        (r["version"].as_str(), r["stage"]["name"].as_str()),
        (Some("1.2.0"), Some("Planned"))
    );
    let again = ok(&mut w, sync, json!({"p": p, "refs": []}));
    assert_eq!(
        again["releaseSync"]["release"]["id"], r["id"],
        "the same version is the same release"
    );
    let d = ok(
        &mut w,
        "{ issue(id: \"ENG-1\") { releases { nodes { id } } } }",
        json!({}),
    );
    assert_eq!(d["issue"]["releases"]["nodes"], json!([{"id": r["id"]}]));
    assert_eq!(refused(&mut w, "mutation($p: String!) { releaseUpdateByPipeline(input: {pipelineId: $p, stage: \"Prod\"}) { success } }", json!({"p": p})).0, "Entity not found: ReleaseStage");
    let d = ok(
        &mut w,
        "mutation($p: String!) { releaseUpdateByPipeline(input: {pipelineId: $p, stage: \"staging\"}) { release { stage { name } startedAt } } }",
        json!({"p": p}),
    );
    assert_eq!(
        d["releaseUpdateByPipeline"]["release"]["stage"]["name"],
        "Staging"
    );
    assert!(d["releaseUpdateByPipeline"]["release"]["startedAt"].is_string());
    let d = ok(
        &mut w,
        "mutation($p: String!) { releaseComplete(input: {pipelineId: $p}) { release { stage { name } completedAt } } }",
        json!({"p": p}),
    );
    assert_eq!(d["releaseComplete"]["release"]["stage"]["name"], "Live");
    assert_eq!(
        refused(
            &mut w,
            "mutation($p: String!) { releaseComplete(input: {pipelineId: $p}) { success } }",
            json!({"p": p})
        )
        .0,
        "Entity not found: Release",
        "nothing is left to complete"
    );
    assert_eq!(
        refused(
            &mut w,
            "mutation { releaseSync(input: {pipelineId: \"nope\", commitSha: \"a\"}) { success } }",
            json!({})
        )
        .0,
        "Entity not found: ReleasePipeline"
    );
}

#[test]
fn prompts_queue_schedules_upsert_and_issues_are_shared_issue_35() {
    let mut w = world();
    let s = ok(&mut w, "mutation { agentSessionCreateOnIssue(input: {issueId: \"ENG-1\"}) { agentSession { id } } }", json!({}))["agentSessionCreateOnIssue"]["agentSession"]["id"].as_str().unwrap().to_string();
    let d = ok(
        &mut w,
        "mutation($s: String!) { agentActivityCreatePrompt(input: {agentSessionId: $s, content: {body: \"also fix the tests\"}, queued: true}) { agentActivity { id queued sentAt user { id } agentSession { id } } } }",
        json!({"s": s}),
    );
    let a = d["agentActivityCreatePrompt"]["agentActivity"].clone();
    assert_eq!(
        (
            a["queued"].as_bool(),
            a["sentAt"].is_null(),
            a["user"]["id"].as_str()
        ),
        (Some(true), true, Some("user_admin"))
    );
    let id = a["id"].as_str().unwrap().to_string();
    let d = ok(
        &mut w,
        "mutation($i: String!) { agentActivitySendQueued(id: $i) { agentActivity { queued sentAt } } }",
        json!({"i": id}),
    );
    assert!(d["agentActivitySendQueued"]["agentActivity"]["sentAt"].is_string());
    assert!(
        refused(
            &mut w,
            "mutation($i: String!) { agentActivityDeleteQueued(id: $i) { success } }",
            json!({"i": id})
        )
        .0
        .contains("not queued")
    );
    assert_eq!(refused(&mut w, "mutation { agentActivityCreatePrompt(input: {agentSessionId: \"nope\", content: {body: \"x\"}}) { success } }", json!({})).0, "Entity not found: AgentSession");

    let up = "mutation($e: [TimeScheduleEntryInput!]) { timeScheduleUpsertExternal(externalId: \"pd-1\", input: {name: \"On call\", entries: $e}) { timeSchedule { id name externalId entries { userId startsAt endsAt } } } }";
    let one = ok(
        &mut w,
        up,
        json!({"e": [{"userId": "user_dev", "startsAt": "2026-07-20T00:00:00Z", "endsAt": "2026-07-27T00:00:00Z"}]}),
    );
    let two = ok(&mut w, up, json!({"e": []}));
    assert_eq!(
        one["timeScheduleUpsertExternal"]["timeSchedule"]["id"],
        two["timeScheduleUpsertExternal"]["timeSchedule"]["id"]
    );
    assert_eq!(
        two["timeScheduleUpsertExternal"]["timeSchedule"]["entries"],
        json!([])
    );
    assert!(refused(&mut w, up, json!({"e": [{"userId": "user_dev", "startsAt": "2026-07-27T00:00:00Z", "endsAt": "2026-07-20T00:00:00Z"}]})).0.contains("end after it starts"));
    let sid = one["timeScheduleUpsertExternal"]["timeSchedule"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        refused(
            &mut w,
            "mutation($i: String!) { timeScheduleRefreshIntegrationSchedule(id: $i) { success } }",
            json!({"i": sid})
        )
        .0
        .contains("not from an integration")
    );

    let d = ok(
        &mut w,
        "mutation { issueShare(id: \"ENG-1\", userId: \"user_dev\") { issue { sharedAccess { isShared sharedWithCount sharedWithUsers { id } } } } }",
        json!({}),
    );
    assert_eq!(
        d["issueShare"]["issue"]["sharedAccess"],
        json!({"isShared": true, "sharedWithCount": 1, "sharedWithUsers": [{"id": "user_dev"}]})
    );
    ok(
        &mut w,
        "mutation { issueUnshare(id: \"ENG-1\", userId: \"user_dev\") { success } }",
        json!({}),
    );
    assert!(
        refused(
            &mut w,
            "mutation { issueUnshare(id: \"ENG-1\", userId: \"user_dev\") { success } }",
            json!({})
        )
        .0
        .contains("not shared")
    );
    assert!(refused(&mut w, "mutation($p: String!) { projectExternalSyncDisable(projectId: $p, syncSource: github) { success } }", json!({"p": "nope"})).0.contains("Entity not found: Project"));
    assert!(
        refused(
            &mut w,
            "mutation { contactSalesCreate(input: {name: \"A\", email: \"nope\"}) { success } }",
            json!({})
        )
        .0
        .contains("email")
    );
    assert_eq!(
        ok(
            &mut w,
            "mutation { contactCreate(input: {type: \"feedback\", message: \"Nice\"}) { success } }",
            json!({})
        )["contactCreate"]["success"],
        true
    );
    let org = w.0.org.clone();
    assert!(refused(&mut w, "mutation { fileUploadDangerouslyDelete(assetUrl: \"https://uploads.linear.app/other/x/y.png\") { success } }", json!({})).0.contains("not an upload of this workspace"));
    ok(
        &mut w,
        "mutation($u: String!) { fileUploadDangerouslyDelete(assetUrl: $u) { success } }",
        json!({"u": format!("https://uploads.linear.app/{org}/x/y.png")}),
    );
}

#[test]
fn suggestions_are_filters_the_world_can_use_issue_35() {
    let mut w = world();
    let d = ok(
        &mut w,
        "{ issueFilterSuggestion(prompt: \"Urgent bugs in Todo assigned to me\") { filter logId } }",
        json!({}),
    );
    let f = d["issueFilterSuggestion"]["filter"].clone();
    assert_eq!(f["priority"], json!({"in": [1]}));
    assert_eq!(f["assignee"], json!({"id": {"in": ["user_admin"]}}));
    assert!(
        f["state"]["id"]["in"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{f}"
    );
    // The suggested filter runs as any filter does.
    ok(
        &mut w,
        "mutation { issueUpdate(id: \"ENG-1\", input: {priority: 1, assigneeId: \"user_admin\"}) { success } }",
        json!({}),
    );
    let todo = f["state"]["id"]["in"][0].as_str().unwrap().to_string();
    ok(
        &mut w,
        "mutation($s: String!) { issueUpdate(id: \"ENG-1\", input: {stateId: $s}) { success } }",
        json!({"s": todo}),
    );
    let found = ok(
        &mut w,
        "query($f: IssueFilter) { issues(filter: $f) { nodes { identifier } } }",
        json!({"f": f}),
    );
    assert_eq!(found["issues"]["nodes"], json!([{"identifier": "ENG-1"}]));
    assert!(
        ok(
            &mut w,
            "{ issueFilterSuggestion(prompt: \"zzz qqq\") { filter } }",
            json!({})
        )["issueFilterSuggestion"]["filter"]
            .is_null()
    );
    let d = ok(
        &mut w,
        "{ projectFilterSuggestion(prompt: \"projects at risk led by Dev\") { filter } initiativeFilterSuggestion(prompt: \"active initiatives\") { filter } }",
        json!({}),
    );
    assert_eq!(
        d["projectFilterSuggestion"]["filter"],
        json!({"health": {"in": ["atRisk"]}, "lead": {"id": {"in": ["user_dev"]}}})
    );
    assert_eq!(
        d["initiativeFilterSuggestion"]["filter"],
        json!({"status": {"in": ["Active"]}})
    );
    let d = ok(
        &mut w,
        "{ issueTitleSuggestionFromCustomerRequest(request: \"Exports time out for big workspaces. We tried twice.\") { title lastSyncId } }",
        json!({}),
    );
    assert_eq!(
        d["issueTitleSuggestionFromCustomerRequest"]["title"],
        "Exports time out for big workspaces"
    );
    // ENG-1 is "Triage inbox for agent eval": two of agent-eval's three words, one of triage-bot's.
    let d = ok(
        &mut w,
        "{ issueRepositorySuggestions(issueId: \"ENG-1\", candidateRepositories: [{hostname: \"github.com\", repositoryFullName: \"acme/triage-bot\"}, {hostname: \"github.com\", repositoryFullName: \"zz/qq\"}, {hostname: \"github.com\", repositoryFullName: \"acme/agent-eval\"}]) { suggestions { repositoryFullName confidence } } }",
        json!({}),
    );
    let got: Vec<(&str, f64)> = d["issueRepositorySuggestions"]["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["repositoryFullName"].as_str().unwrap(),
                s["confidence"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("acme/agent-eval", 2.0 / 3.0),
            ("acme/triage-bot", 1.0 / 3.0)
        ]
    );
    assert_eq!(
        ok(&mut w, "{ pushSubscriptionTest { success } }", json!({}))["pushSubscriptionTest"]["success"],
        false,
        "no device to push to"
    );
    ok(
        &mut w,
        "mutation { pushSubscriptionCreate(input: {data: \"{}\", type: web}) { success } }",
        json!({}),
    );
    assert_eq!(
        ok(&mut w, "{ pushSubscriptionTest { success } }", json!({}))["pushSubscriptionTest"]["success"],
        true
    );
    assert_eq!(
        ok(
            &mut w,
            "{ pushSubscriptionTest(targetMobile: true) { success } }",
            json!({})
        )["pushSubscriptionTest"]["success"],
        false
    );
    let d = ok(
        &mut w,
        "{ availableUsers { email users { id role organization { urlKey } } lockedUsers { id } } }",
        json!({}),
    );
    assert_eq!(
        d["availableUsers"]["users"][0]["role"], "owner",
        "the seed's admin owns the workspace"
    );
    let inv = ok(
        &mut w,
        "mutation { organizationInviteCreate(input: {email: \"new@acme.test\", role: guest}) { organizationInvite { id } } }",
        json!({}),
    );
    let inv = inv["organizationInviteCreate"]["organizationInvite"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let d = ok(
        &mut w,
        "query($i: String!) { organizationInviteDetails(id: $i) { __typename ... on OrganizationInviteFullDetailsPayload { email role status accepted inviter organizationName } } }",
        json!({"i": inv}),
    );
    assert_eq!(
        d["organizationInviteDetails"]["__typename"],
        "OrganizationInviteFullDetailsPayload"
    );
    assert_eq!(
        (
            d["organizationInviteDetails"]["email"].as_str(),
            d["organizationInviteDetails"]["status"].as_str(),
            d["organizationInviteDetails"]["inviter"].as_str()
        ),
        (Some("new@acme.test"), Some("pending"), Some("Admin User"))
    );
    // Workspace metadata by URL key, SAML sign-in only for a verified SAML domain of a SAML workspace.
    let key =
        w.0.str_field("Organization", &w.0.org.clone(), "urlKey")
            .unwrap()
            .to_string();
    let d = ok(
        &mut w,
        "query($k: String!) { mine: organizationMeta(urlKey: $k) { allowedAuthServices } other: organizationMeta(urlKey: \"nobody-here\") { allowedAuthServices } }",
        json!({"k": key}),
    );
    assert_eq!(
        d,
        json!({"mine": {"allowedAuthServices": []}, "other": null})
    );
    assert!(
        refused(
            &mut w,
            "{ ssoUrlFromEmail(email: \"admin@pome-twin.test\") { samlSsoUrl success } }",
            json!({})
        )
        .0
        .contains("no SAML sign-in")
    );
    assert_eq!(
        refused(
            &mut w,
            "{ verifyGitHubEnterpriseServerInstallation(integrationId: \"nope\") { success } }",
            json!({})
        )
        .0,
        "Entity not found: Integration"
    );
}

#[test]
fn ninety_percent_of_linears_root_queries_and_mutations_are_served_issue_35() {
    let root = |t: &str| {
        crate::tables::fields(crate::tables::ty(t).unwrap())
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
    };
    let (q, m) = (root("Query"), root("Mutation"));
    let served_q = q.iter().filter(|n| crate::root::query_served(n)).count();
    let served_m = m.iter().filter(|n| crate::mutate::served(n)).count();
    assert!(
        served_q * 10 >= q.len() * 9,
        "{served_q} of {} queries",
        q.len()
    );
    assert!(
        served_m * 10 >= m.len() * 9,
        "{served_m} of {} mutations",
        m.len()
    );
}

#[test]
fn the_generic_writer_keeps_linears_rules_issue_35() {
    let mut w = world();
    // Required text may not be blank, on create or update.
    assert!(refused(&mut w, "mutation { issueLabelCreate(input: {name: \"  \", teamId: \"team_eng\"}) { success } }", json!({})).0.contains("name should not be empty"));
    assert!(
        refused(
            &mut w,
            "mutation { projectUpdate(id: \"nope\", input: {name: \"\"}) { success } }",
            json!({})
        )
        .0
        .contains("Entity not found: Project")
    );
    let p = ok(&mut w, "mutation { projectCreate(input: {name: \"P\", teamIds: [\"team_eng\"]}) { project { id } } }", json!({}))["projectCreate"]["project"]["id"].as_str().unwrap().to_string();
    assert!(
        refused(
            &mut w,
            "mutation($p: String!) { projectUpdate(id: $p, input: {name: \"\"}) { success } }",
            json!({"p": p})
        )
        .0
        .contains("name should not be empty")
    );
    // Nothing relates to itself, and a pair is kept once.
    assert!(refused(&mut w, "mutation { issueRelationCreate(input: {issueId: \"ENG-1\", relatedIssueId: \"ENG-1\", type: blocks}) { success } }", json!({})).0.contains("itself"));
    let rel = "mutation { issueRelationCreate(input: {issueId: \"ENG-1\", relatedIssueId: \"ENG-2\", type: blocks}) { success } }";
    ok(&mut w, rel, json!({}));
    assert!(refused(&mut w, rel, json!({})).0.contains("already exists"));
    assert!(refused(&mut w, "mutation { teamMembershipCreate(input: {teamId: \"team_eng\", userId: \"user_admin\"}) { success } }", json!({})).0.contains("already exists"), "the seed's admin is a member");
    // A reaction is one user's emoji on exactly one thing.
    assert!(
        refused(
            &mut w,
            "mutation { reactionCreate(input: {emoji: \"+1\"}) { success } }",
            json!({})
        )
        .0
        .contains("exactly one of")
    );
    let react =
        "mutation { reactionCreate(input: {emoji: \"+1\", issueId: \"ENG-1\"}) { success } }";
    ok(&mut w, react, json!({}));
    assert!(
        refused(&mut w, react, json!({}))
            .0
            .contains("already exists")
    );
    assert!(refused(&mut w, "mutation { emojiCreate(input: {name: \"Party Parrot\", url: \"https://e.test/p.gif\"}) { success } }", json!({})).0.contains("emoji name"));
    // A deleted label leaves its issues; a state with issues stays.
    let l = ok(&mut w, "mutation { issueLabelCreate(input: {name: \"flaky\", teamId: \"team_eng\"}) { issueLabel { id } } }", json!({}))["issueLabelCreate"]["issueLabel"]["id"].as_str().unwrap().to_string();
    ok(
        &mut w,
        "mutation($l: String!) { issueAddLabel(id: \"ENG-1\", labelId: $l) { success } }",
        json!({"l": l}),
    );
    ok(
        &mut w,
        "mutation($l: String!) { issueLabelDelete(id: $l) { success } }",
        json!({"l": l}),
    );
    assert_eq!(
        w.0.get("Issue", &w.0.issue_id("ENG-1").unwrap()).unwrap()["labelIds"],
        json!(["label_agent"]),
        "the seeded label stays"
    );
    let state =
        w.0.str_field("Issue", &w.0.issue_id("ENG-1").unwrap(), "stateId")
            .unwrap()
            .to_string();
    assert!(
        refused(
            &mut w,
            "mutation($s: String!) { workflowStateArchive(id: $s) { success } }",
            json!({"s": state})
        )
        .0
        .contains("with issues cannot be archived")
    );
}

#[test]
fn an_intake_address_is_made_and_rotated_and_gitlab_cannot_be_reached_issue_35() {
    let mut w = world();
    let d = ok(
        &mut w,
        "mutation { emailIntakeAddressCreate(input: {teamId: \"team_eng\"}) { emailIntakeAddress { id address enabled type repliesEnabled } } }",
        json!({}),
    );
    let a = d["emailIntakeAddressCreate"]["emailIntakeAddress"].clone();
    assert!(
        a["address"].as_str().unwrap().starts_with("eng-")
            && a["address"]
                .as_str()
                .unwrap()
                .ends_with("@intake.linear.app"),
        "{a}"
    );
    assert_eq!(
        (
            a["enabled"].as_bool(),
            a["type"].as_str(),
            a["repliesEnabled"].as_bool()
        ),
        (Some(true), Some("team"), Some(false))
    );
    let d = ok(
        &mut w,
        "mutation($i: String!) { emailIntakeAddressRotate(id: $i) { emailIntakeAddress { address } } }",
        json!({"i": a["id"]}),
    );
    assert_ne!(
        d["emailIntakeAddressRotate"]["emailIntakeAddress"]["address"],
        a["address"]
    );
    assert_eq!(
        refused(
            &mut w,
            "mutation { emailIntakeAddressRotate(id: \"nope\") { success } }",
            json!({})
        )
        .0,
        "Entity not found: EmailIntakeAddress"
    );
    let g = ok(
        &mut w,
        "mutation { integrationGitlabConnect(accessToken: \"glpat\", gitlabUrl: \"https://gitlab.acme.test\") { integration { id } } }",
        json!({}),
    );
    let d = ok(
        &mut w,
        "mutation($i: String!) { integrationGitlabTestConnection(integrationId: $i) { success error integration { service } } }",
        json!({"i": g["integrationGitlabConnect"]["integration"]["id"]}),
    );
    assert_eq!(
        d["integrationGitlabTestConnection"],
        json!({"success": false, "error": null, "integration": {"service": "gitlab"}})
    );
    let s = ok(
        &mut w,
        "mutation { integrationSlack(code: \"c\", redirectUri: \"https://a.test\") { integration { id } } }",
        json!({}),
    );
    assert!(refused(&mut w, "mutation($i: String!) { integrationGitlabTestConnection(integrationId: $i) { success } }", json!({"i": s["integrationSlack"]["integration"]["id"]})).0.contains("not gitlab"));
}

#[test]
fn spans_end_after_they_start_and_invites_and_subscriptions_are_for_one_thing_issue_35() {
    let mut w = world();
    let cycle = "mutation($a: DateTime!, $b: DateTime!) { cycleCreate(input: {teamId: \"team_eng\", startsAt: $a, endsAt: $b}) { cycle { id } } }";
    assert!(
        refused(
            &mut w,
            cycle,
            json!({"a": "2026-08-10T00:00:00Z", "b": "2026-08-01T00:00:00Z"})
        )
        .0
        .contains("endsAt must be after startsAt")
    );
    let c = ok(
        &mut w,
        cycle,
        json!({"a": "2026-08-01T00:00:00Z", "b": "2026-08-15T00:00:00Z"}),
    )["cycleCreate"]["cycle"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(refused(&mut w, "mutation($c: String!) { cycleUpdate(id: $c, input: {endsAt: \"2026-07-01T00:00:00Z\"}) { success } }", json!({"c": c})).0.contains("endsAt must be after startsAt"));
    assert!(refused(&mut w, "mutation { projectCreate(input: {name: \"P\", teamIds: [\"team_eng\"], startDate: \"2026-09-01\", targetDate: \"2026-08-01\"}) { success } }", json!({})).0.contains("targetDate must be after startDate"));
    // Invites: a real email, not a member's, once while pending.
    assert!(refused(&mut w, "mutation { organizationInviteCreate(input: {email: \"dev@pome-twin.test\"}) { success } }", json!({})).0.contains("already a member"));
    let inv =
        "mutation { organizationInviteCreate(input: {email: \"New@Acme.test\"}) { success } }";
    ok(&mut w, inv, json!({}));
    assert!(
        refused(
            &mut w,
            "mutation { organizationInviteCreate(input: {email: \"new@acme.test\"}) { success } }",
            json!({})
        )
        .0
        .contains("already been invited")
    );
    assert!(
        refused(
            &mut w,
            "mutation { organizationInviteCreate(input: {email: \"nobody\"}) { success } }",
            json!({})
        )
        .0
        .contains("must be an email")
    );
    // A subscription or Slack settings are for exactly one thing; a team has one triage rota.
    assert!(refused(&mut w, "mutation { notificationSubscriptionCreate(input: {teamId: \"team_eng\", cycleId: \"x\"}) { success } }", json!({})).0.contains("Entity not found: Cycle"));
    let c2 = json!({"c": c});
    assert!(refused(&mut w, "mutation($c: String!) { notificationSubscriptionCreate(input: {teamId: \"team_eng\", cycleId: $c}) { success } }", c2).0.contains("exactly one of"));
    ok(
        &mut w,
        "mutation { integrationsSettingsCreate(input: {teamId: \"team_eng\", slackIssueCreated: true}) { success } }",
        json!({}),
    );
    assert!(
        refused(
            &mut w,
            "mutation { integrationsSettingsCreate(input: {teamId: \"team_eng\"}) { success } }",
            json!({})
        )
        .0
        .contains("already exists")
    );
    ok(
        &mut w,
        "mutation { triageResponsibilityCreate(input: {teamId: \"team_eng\", action: \"notify\"}) { success } }",
        json!({}),
    );
    assert!(refused(&mut w, "mutation { triageResponsibilityCreate(input: {teamId: \"team_eng\", action: \"assign\"}) { success } }", json!({})).0.contains("already exists"));
}

#[test]
fn an_initiative_update_sets_its_health_and_members_edit_only_themselves_issue_35() {
    let mut w = world();
    let i = ok(
        &mut w,
        "mutation { initiativeCreate(input: {name: \"Grow\"}) { initiative { id } } }",
        json!({}),
    )["initiativeCreate"]["initiative"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let u = ok(
        &mut w,
        "mutation($i: String!) { initiativeUpdateCreate(input: {initiativeId: $i, body: \"Slipping\", health: atRisk}) { initiativeUpdate { id } } }",
        json!({"i": i}),
    );
    let u = u["initiativeUpdateCreate"]["initiativeUpdate"]["id"].clone();
    let d = ok(
        &mut w,
        "query($i: String!) { initiative(id: $i) { health healthUpdatedAt lastUpdate { id } } }",
        json!({"i": i}),
    );
    assert_eq!(
        (
            d["initiative"]["health"].as_str(),
            d["initiative"]["lastUpdate"]["id"].clone()
        ),
        (Some("atRisk"), u)
    );
    let mine = ask(
        &mut w,
        "mutation { userUpdate(id: \"user_dev\", input: {description: \"Dev\"}) { success } }",
        json!({}),
        Some("lin_dev"),
    );
    assert!(mine.get("errors").is_none(), "{mine}");
    let other = ask(
        &mut w,
        "mutation { userUpdate(id: \"user_admin\", input: {description: \"x\"}) { success } }",
        json!({}),
        Some("lin_dev"),
    );
    assert_eq!(
        other["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{other}"
    );
    ok(
        &mut w,
        "mutation { userUpdate(id: \"user_dev\", input: {description: \"set by an admin\"}) { success } }",
        json!({}),
    );
}
