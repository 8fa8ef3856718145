"""Issue #35, Linear: what a raw GraphQL client meets past the happy path. Limits that limit
(Linear's rate limits per credential, over the sandbox's clock), no invented values, accents.
Every answer is checked against Linear's schema with graphql-core."""

from test_linear_graphql import Linear, check_response, task_seed

HEAVY = "{ teams(first: 16) { nodes { id issues(first: 250) { nodes { id title priority } } } } }"


def lower(headers):
    return {k.lower(): v for k, v in headers.items()}


def test_complexity_is_the_querys_and_runs_out_into_ratelimited(new_sandbox):
    sb = new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json"))
    gql = Linear(sb)
    status, headers, body = gql.raw("{ viewer { id name } }")
    assert status == 200, body
    h = lower(headers)
    assert h["x-complexity"] == "2"
    assert h["x-ratelimit-complexity-limit"] == "3000000" and h["x-ratelimit-requests-limit"] == "5000"
    left = int(h["x-ratelimit-complexity-remaining"])
    for n in range(400):
        status, headers, body = gql.raw(HEAVY)
        h = lower(headers)
        if status != 200:
            break
        assert 5000 < int(h["x-complexity"]) <= 10000
        now = int(h["x-ratelimit-complexity-remaining"])
        assert now < left, (now, left)
        left = now
    else:
        raise AssertionError("3,000,000 points never ran out")
    assert status == 400
    assert body["errors"][0]["extensions"]["code"] == "RATELIMITED" and body["errors"][0]["extensions"]["type"] == "ratelimited"
    assert int(h["x-ratelimit-complexity-remaining"]) < int(h["x-complexity"])
    # What is left still serves a small query, and rateLimitStatus says what the headers say.
    q = "{ rateLimitStatus { kind limits { type allowedAmount remainingAmount requestedAmount reset period } } }"
    status, headers, body = gql.raw(q)
    assert status == 200, body
    check_response(q, body["data"])
    h = lower(headers)
    s = body["data"]["rateLimitStatus"]
    assert s["kind"] == "api key"
    limits = {l["type"]: l for l in s["limits"]}
    assert limits["requestLimit"]["remainingAmount"] == float(h["x-ratelimit-requests-remaining"])
    assert limits["complexityLimit"]["remainingAmount"] == float(h["x-ratelimit-complexity-remaining"])
    assert limits["complexityLimit"]["reset"] == float(h["x-ratelimit-complexity-reset"])
    assert limits["complexityLimit"]["requestedAmount"] == float(h["x-complexity"])


def test_a_seeded_oauth_token_has_its_own_smaller_complexity_budget(new_sandbox):
    seed = task_seed("24-linear-issue-triage.seed.json")
    seed["tokens"].append({"token": "lin_oauth_seeded_app", "type": "oauth", "user": "dev@pome-twin.test"})
    sb = new_sandbox(["linear"], seed)
    status, headers, _ = Linear(sb, token="Bearer lin_oauth_seeded_app").raw("{ viewer { id } }")
    h = lower(headers)
    assert status == 200 and h["x-ratelimit-complexity-limit"] == "2000000" and h["x-ratelimit-requests-remaining"] == "4999"
    # The agent's own key has spent nothing.
    _, headers, _ = Linear(sb).raw("{ viewer { id } }")
    assert lower(headers)["x-ratelimit-requests-remaining"] == "4999"


def test_a_page_over_250_is_refused_not_clamped(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json")))
    status, _, body = gql.raw("{ issues(first: 251) { nodes { id } } }")
    assert body["errors"][0]["extensions"]["code"] == "INVALID_INPUT", body
    assert "first must not be greater than 250" in body["errors"][0]["message"]
    assert gql("{ issues(first: 250) { nodes { id } } }")["issues"]["nodes"]


# --- the surface: more root fields served, each with Linear's rules ---------------------------

def seed_with_cycles():
    seed = task_seed("24-linear-issue-triage.seed.json")
    return dict(seed, clock="2026-07-15T12:00:00Z", cycles=[
        {"id": "c1", "team": "ENG", "number": 1, "startsAt": "2026-07-06T00:00:00Z", "endsAt": "2026-07-20T00:00:00Z"},
        {"id": "c2", "team": "ENG", "number": 2, "startsAt": "2026-07-20T00:00:00Z", "endsAt": "2026-08-03T00:00:00Z"},
    ])


def refused(gql, query, variables=None):
    status, _, body = gql.raw(query, variables)
    assert body.get("errors"), body
    return body["errors"][0]


def test_cycle_team_customer_and_project_mutations_follow_linears_rules(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=seed_with_cycles()))
    # Cycles: the upcoming one starts today and the one under way ends then; shifting moves
    # the cycle and every later one.
    assert refused(gql, 'mutation { cycleStartUpcomingCycleToday(id: "c1") { success } }')["extensions"]["code"] == "INVALID_INPUT"
    d = gql('mutation { cycleStartUpcomingCycleToday(id: "c2") { success cycle { id startsAt isActive } } }')
    assert d["cycleStartUpcomingCycleToday"]["cycle"]["startsAt"] == "2026-07-15T00:00:00.000Z"
    d = gql('mutation { cycleShiftAll(input: {id: "c2", daysToShift: 7}) { success cycle { startsAt endsAt } } }')
    assert d["cycleShiftAll"]["cycle"] == {"startsAt": "2026-07-22T00:00:00.000Z", "endsAt": "2026-08-10T00:00:00.000Z"}
    gql('mutation { issueUpdate(id: "ENG-1", input: {cycleId: "c2"}) { success } }')
    d = gql('mutation { teamCyclesDelete(id: "ENG") { success team { id cyclesEnabled } } }')
    assert d["teamCyclesDelete"]["team"]["cyclesEnabled"] is False
    assert gql('{ cycles { nodes { id } } issue(id: "ENG-1") { cycle { id } } }') == {"cycles": {"nodes": []}, "issue": {"cycle": None}}

    # Customers: a need from an attachment, then a merge moves it and archives the source.
    a = gql('mutation { customerCreate(input: {name: "Acme", domains: ["acme.test"]}) { customer { id } } }')["customerCreate"]["customer"]["id"]
    b = gql('mutation { customerCreate(input: {name: "Acme Inc"}) { customer { id } } }')["customerCreate"]["customer"]["id"]
    att = gql('mutation { attachmentCreate(input: {issueId: "ENG-2", url: "https://support.test/t/9", title: "T"}) { attachment { id } } }')["attachmentCreate"]["attachment"]["id"]
    need = gql("mutation($a: String!) { customerNeedCreateFromAttachment(input: {attachmentId: $a}) { success need { id issue { identifier } } } }", {"a": att})
    assert need["customerNeedCreateFromAttachment"]["need"]["issue"]["identifier"] == "ENG-2"
    gql("mutation($n: String!, $c: String!) { customerNeedUpdate(id: $n, input: {customerId: $c}) { success } }",
        {"n": need["customerNeedCreateFromAttachment"]["need"]["id"], "c": a})
    d = gql("mutation($a: String!, $b: String!) { customerMerge(sourceCustomerId: $a, targetCustomerId: $b) { success customer { id domains approximateNeedCount } } }", {"a": a, "b": b})
    assert d["customerMerge"]["customer"] == {"id": b, "domains": ["acme.test"], "approximateNeedCount": 1}
    assert refused(gql, 'mutation { customerMerge(sourceCustomerId: "nope", targetCustomerId: "nope2") { success } }')["message"] == "Entity not found: Customer"

    # Projects: every project of a status moves to another.
    gql('mutation { projectCreate(input: {name: "Apollo", teamIds: ["team_eng"]}) { success } }')
    assert gql('{ projectStatusProjectCount(id: "project_status_backlog") { count privateCount archivedTeamCount } }') == \
        {"projectStatusProjectCount": {"count": 1.0, "privateCount": 0.0, "archivedTeamCount": 0.0}}
    gql('mutation { projectReassignStatus(originalProjectStatusId: "project_status_backlog", newProjectStatusId: "project_status_planned") { success } }')
    assert gql('{ projects { nodes { status { id } } } }')["projects"]["nodes"] == [{"status": {"id": "project_status_planned"}}]


def test_semantic_search_and_the_newly_served_queries_answer_from_the_world(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json")))
    gql('mutation { issueCreate(input: {teamId: "team_eng", title: "Safari checkout times out"}) { success } }')
    d = gql('{ semanticSearch(query: "checkout safari", maxResults: 5) { enabled results { id type issue { id title } project { id } } } }')
    top = d["semanticSearch"]["results"][0]
    assert (top["type"], top["issue"]["title"], top["project"]) == ("issue", "Safari checkout times out", None)
    d = gql('{ authenticationSessions { id } slaConfigurations(teamId: "ENG") { id name } partnerOfferDetails(slug: "acme") { id } '
            'integrations { nodes { id service } } externalUsers { nodes { id name } } }')
    assert d == {"authenticationSessions": [], "slaConfigurations": [], "partnerOfferDetails": None,
                 "integrations": {"nodes": []}, "externalUsers": {"nodes": []}}
    assert refused(gql, '{ integration(id: "nope") { id } }')["message"] == "Entity not found: Integration"


def test_agent_sessions_on_issues_and_root_comments(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json")))
    d = gql('mutation { agentSessionCreateOnIssue(input: {issueId: "ENG-1", externalUrls: [{label: "Run", url: "https://agent.test/r/1"}]}) '
            '{ success agentSession { id status type issue { identifier } externalLinks { label url } } } }')
    s = d["agentSessionCreateOnIssue"]["agentSession"]
    assert (s["status"], s["type"], s["issue"]["identifier"]) == ("pending", "commentThread", "ENG-1")
    d = gql("mutation($s: String!) { agentSessionUpdateExternalUrl(id: $s, input: {removedExternalUrls: [\"https://agent.test/r/1\"]}) "
            "{ agentSession { externalLinks { url } } } }", {"s": s["id"]})
    assert d["agentSessionUpdateExternalUrl"]["agentSession"]["externalLinks"] == []
    c = gql('mutation { commentCreate(input: {issueId: "ENG-2", body: "root"}) { comment { id } } }')["commentCreate"]["comment"]["id"]
    r = gql("mutation($c: String!) { commentCreate(input: {issueId: \"ENG-2\", body: \"reply\", parentId: $c}) { comment { id } } }", {"c": c})
    assert refused(gql, "mutation($c: String!) { agentSessionCreateOnComment(input: {commentId: $c}) { success } }",
                   {"c": r["commentCreate"]["comment"]["id"]})["extensions"]["code"] == "INVALID_INPUT"
    d = gql("mutation($c: String!) { agentSessionCreateOnComment(input: {commentId: $c}) { agentSession { issue { identifier } } } }", {"c": c})
    assert d["agentSessionCreateOnComment"]["agentSession"]["issue"]["identifier"] == "ENG-2"


# --- the families of src/families/ and the queries of src/lookups.rs ---------------------------

def test_integrations_connect_list_and_go_as_linear_keeps_them(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json")))
    d = gql('mutation { integrationSlack(code: "c", redirectUri: "https://app.test/cb", requestedScopes: ["chat:write"]) '
            '{ success lastSyncId integration { id service createdAt creator { id } organization { id } team { id } } } }')
    i = d["integrationSlack"]["integration"]
    assert (i["service"], i["team"]) == ("slack", None)
    assert gql("{ integrations { nodes { id service } } }")["integrations"]["nodes"] == [{"id": i["id"], "service": "slack"}]
    q = "query($i: String!) { integrationHasScopes(integrationId: $i, scopes: [\"chat:write\", \"users:read\"]) { hasAllScopes missingScopes } }"
    assert gql(q, {"i": i["id"]})["integrationHasScopes"] == {"hasAllScopes": False, "missingScopes": ["users:read"]}
    d = gql('mutation { integrationSlackPost(code: "c", redirectUri: "https://app.test/cb", teamId: "ENG") { success addBot integration { service team { key } } } }')
    assert d["integrationSlackPost"]["integration"] == {"service": "slackPost", "team": {"key": "ENG"}}
    assert refused(gql, 'mutation { integrationSlackPost(code: "c", redirectUri: "https://app.test/cb", teamId: "NOPE") { success } }')["message"] == "Entity not found: Team"
    assert refused(gql, 'mutation { integrationFigma(code: "", redirectUri: "https://app.test/cb") { success } }')["extensions"]["code"] == "INVALID_INPUT"
    gql('mutation { integrationGithubConnect(code: "c", installationId: "7") { success } }')
    assert refused(gql, 'mutation { integrationGithubConnect(code: "c", installationId: "8") { success } }')["extensions"]["code"] == "INVALID_INPUT"
    gql("mutation($i: String!) { integrationArchive(id: $i) { success } }", {"i": i["id"]})
    assert [a["service"] for a in gql("{ archivedIntegrations { id service archivedAt codeAccess } }")["archivedIntegrations"]] == ["slack"]
    gql("mutation($i: String!) { integrationDelete(id: $i) { success } }", {"i": i["id"]})
    assert refused(gql, "query($i: String!) { integration(id: $i) { id } }", {"i": i["id"]})["message"] == "Entity not found: Integration"

    # OAuth applications: the secret is answered once, and rotated.
    d = gql('mutation { oauthApplicationCreate(input: {name: "Bot", developer: "Acme", developerUrl: "https://acme.test", redirectUris: ["https://acme.test/cb"]}) '
            '{ success clientSecret webhookSecret application { id clientId name developer developerUrl distribution grantTypes redirectUris webhookEnabled webhookResourceTypes createdAt updatedAt } } }')
    app = d["oauthApplicationCreate"]["application"]
    assert (app["distribution"], app["grantTypes"], app["webhookEnabled"]) == ("private", ["authorization_code"], False)
    info = gql("query($c: String!) { applicationInfo(clientId: $c) { id clientId name developer developerUrl description imageUrl } }", {"c": app["clientId"]})
    assert info["applicationInfo"]["name"] == "Bot"
    rotated = gql("mutation($i: String!) { oauthApplicationRotateSecret(id: $i) { success clientSecret } }", {"i": app["id"]})
    assert rotated["oauthApplicationRotateSecret"]["clientSecret"] != d["oauthApplicationCreate"]["clientSecret"]
    gql("mutation($i: String!) { oauthApplicationArchive(id: $i) { success } }", {"i": app["id"]})
    assert gql("{ oauthApplications { id } }")["oauthApplications"] == []


def test_accounts_releases_and_suggestions_follow_linears_rules(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json")))
    flag = "mutation($o: UserFlagUpdateOperation!) { userFlagUpdate(flag: completedOnboarding, operation: $o) { success flag value lastSyncId } }"
    assert gql(flag, {"o": "incr"})["userFlagUpdate"]["value"] == 1
    gql(flag, {"o": "lock"})
    locked = gql(flag, {"o": "incr"})["userFlagUpdate"]
    assert (locked["success"], locked["value"]) == (False, 1)
    assert refused(gql, 'mutation { organizationDelete(input: {deletionCode: "123456"}) { success } }')["extensions"]["code"] == "INVALID_INPUT"
    gql('mutation { organizationStartTrialForPlan(input: {planType: "business"}) { success } }')
    assert refused(gql, "mutation { organizationStartTrial { success } }")["extensions"]["code"] == "INVALID_INPUT"
    assert refused(gql, 'mutation { logoutSession(sessionId: "s") { success } }')["message"] == "Entity not found: AuthenticationSession"

    p = gql('mutation { releasePipelineCreate(input: {name: "Web"}) { releasePipeline { id } } }')["releasePipelineCreate"]["releasePipeline"]["id"]
    for n, (name, kind) in enumerate([("Staging", "started"), ("Live", "completed")]):
        gql("mutation($p: String!, $n: String!, $t: ReleaseStageType!, $o: Float!) { releaseStageCreate(input: {pipelineId: $p, name: $n, type: $t, position: $o, color: \"#000\"}) { success } }",
            {"p": p, "n": name, "t": kind, "o": n})
    d = gql("mutation($p: String!) { releaseSync(input: {pipelineId: $p, commitSha: \"abc\", version: \"2.0\", issueReferences: [{identifier: \"ENG-2\", commitSha: \"abc\"}]}) "
            "{ success release { id version commitSha stage { name } issues { nodes { identifier } } } } }", {"p": p})
    assert d["releaseSync"]["release"]["issues"]["nodes"] == [{"identifier": "ENG-2"}]
    d = gql("mutation($p: String!) { releaseComplete(input: {pipelineId: $p, version: \"2.0\"}) { release { completedAt stage { name type } } } }", {"p": p})
    assert d["releaseComplete"]["release"]["stage"] == {"name": "Live", "type": "completed"}

    d = gql('{ issueFilterSuggestion(prompt: "high priority issues in In Progress") { filter logId } }')
    f = d["issueFilterSuggestion"]["filter"]
    assert f["priority"] == {"in": [2]} and f["state"]["id"]["in"]
    gql('mutation { issueUpdate(id: "ENG-2", input: {priority: 2, stateId: "state_progress"}) { success } }')
    found = gql("query($f: IssueFilter) { issues(filter: $f) { nodes { identifier } } }", {"f": f})
    assert found["issues"]["nodes"] == [{"identifier": "ENG-2"}]
    d = gql('{ issueTitleSuggestionFromCustomerRequest(request: "Search is slow! Please help.") { title logId lastSyncId } }')
    assert d["issueTitleSuggestionFromCustomerRequest"]["title"] == "Search is slow"
