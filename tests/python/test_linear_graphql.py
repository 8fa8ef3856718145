"""The Linear twin over raw GraphQL (urllib), the way a script or an MCP server talks to Linear.
Every answer is checked against Linear's schema (tests/specs/linear/schema.graphql) for exactly
what the document selected: each selected field present, nothing else, each value of its type.
graphql-core is the independent judge of the schema and of which documents are valid."""

import hashlib
import json
import pathlib
import urllib.error
import urllib.request

import pytest
from graphql import (GraphQLEnumType, GraphQLInterfaceType, GraphQLList, GraphQLNonNull, GraphQLObjectType,
                     GraphQLScalarType, GraphQLUnionType, build_client_schema, build_schema, get_introspection_query,
                     parse, validate)
from graphql.language import FieldNode, FragmentSpreadNode, InlineFragmentNode, OperationDefinitionNode

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = build_schema((ROOT / "tests" / "specs" / "linear" / "schema.graphql").read_text())
TASKS = ROOT / "tests" / "tasks-compat" / "bundled"


def task_seed(name):
    seed = json.loads((TASKS / name).read_text())
    return seed.get("linear", seed)


class Linear:
    def __init__(self, sandbox, token=None):
        self.sandbox = sandbox
        self.url = sandbox.url("linear") + "/graphql"
        self.token = token or sandbox.token

    def raw(self, query, variables=None):
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(self.url, data=body, method="POST",
                                     headers={"Authorization": self.token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, dict(resp.headers), json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), json.load(e)

    def __call__(self, query, variables=None):
        status, _, body = self.raw(query, variables)
        assert status == 200 and "errors" not in body, body
        check_response(query, body["data"])
        return body["data"]


# --- the response checker -------------------------------------------------------------------

def fragments(doc):
    return {d.name.value: d for d in doc.definitions if d.kind == "fragment_definition"}


def applies(cond, concrete):
    if cond is None:
        return True
    t = SCHEMA.get_type(cond.name.value)
    if t is concrete:
        return True
    if isinstance(t, (GraphQLInterfaceType, GraphQLUnionType)) and isinstance(concrete, GraphQLObjectType):
        return SCHEMA.is_sub_type(t, concrete)
    return False


def collect(selection_set, concrete, frags, out):
    """Selected fields by response key, for an object of type `concrete`."""
    for sel in selection_set.selections:
        directed = bool(sel.directives)
        if isinstance(sel, FieldNode):
            key = sel.alias.value if sel.alias else sel.name.value
            out.setdefault(key, []).append((sel, directed))
        elif isinstance(sel, InlineFragmentNode):
            if applies(sel.type_condition, concrete):
                collect(sel.selection_set, concrete, frags, out)
        elif isinstance(sel, FragmentSpreadNode):
            f = frags[sel.name.value]
            if applies(f.type_condition, concrete):
                collect(f.selection_set, concrete, frags, out)
    return out


def check_value(value, t, nodes, frags, path):
    if isinstance(t, GraphQLNonNull):
        assert value is not None, f"{path}: null for non-null {t}"
        return check_value(value, t.of_type, nodes, frags, path)
    if value is None:
        return
    if isinstance(t, GraphQLList):
        assert isinstance(value, list), f"{path}: expected a list, got {value!r}"
        for i, v in enumerate(value):
            check_value(v, t.of_type, nodes, frags, f"{path}[{i}]")
        return
    if isinstance(t, GraphQLEnumType):
        assert value in t.values, f"{path}: {value!r} is not a {t.name}"
        return
    if isinstance(t, GraphQLScalarType):
        expect = {"String": str, "ID": str, "Boolean": bool, "Int": int, "Float": (int, float),
                  "DateTime": str, "TimelessDate": str, "TimelessDateOrDuration": str, "DateTimeOrDuration": str}.get(t.name)
        if expect is not None:
            assert isinstance(value, expect) and not (expect is not bool and isinstance(value, bool)), \
                f"{path}: {value!r} is not a {t.name}"
        return
    assert isinstance(value, dict), f"{path}: expected an object, got {value!r}"
    concrete = t
    if isinstance(t, (GraphQLInterfaceType, GraphQLUnionType)):
        names = [v for n in nodes for s in n.selection_set.selections
                 if isinstance(s, FieldNode) and s.name.value == "__typename" for v in [value.get(s.alias.value if s.alias else "__typename")]]
        if names and names[0]:
            concrete = SCHEMA.get_type(names[0])
            assert SCHEMA.is_sub_type(t, concrete), f"{path}: {names[0]} is not a {t.name}"
    selected = {}
    for n in nodes:
        collect(n.selection_set, concrete, frags, selected)
    check_object(value, concrete, selected, frags, path)


def check_object(value, t, selected, frags, path):
    for key, fields in selected.items():
        node, directed = fields[0]
        if key not in value:
            assert directed, f"{path}.{key}: selected but missing"
            continue
        name = node.name.value
        if name == "__typename":
            assert value[key] == t.name or not isinstance(t, GraphQLObjectType), f"{path}.{key}: {value[key]} is not {t.name}"
            continue
        if name.startswith("__"):
            continue
        ft = t.fields[name].type
        subs = [f for f, _ in fields if f.selection_set]
        check_value(value[key], ft, subs, frags, f"{path}.{key}")
    extra = set(value) - set(selected)
    if isinstance(t, GraphQLObjectType):
        assert not extra, f"{path}: not selected: {extra}"


def check_response(query, data):
    doc = parse(query)
    assert not validate(SCHEMA, doc), validate(SCHEMA, doc)
    op = next(d for d in doc.definitions if isinstance(d, OperationDefinitionNode))
    root = SCHEMA.mutation_type if op.operation.value == "mutation" else SCHEMA.query_type
    frags = fragments(doc)
    check_object(data, root, collect(op.selection_set, root, frags, {}), frags, "data")


# --- tests ----------------------------------------------------------------------------------

ISSUE = """fragment I on Issue { id identifier number title url branchName priority priorityLabel estimate
  createdAt updatedAt state { id name type } team { id key } assignee { id email displayName }
  labels { nodes { id name color } } parent { identifier } }"""


def test_task_24_triage_over_raw_graphql(new_sandbox):
    sb = new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json"))
    gql = Linear(sb)
    data = gql(ISSUE + " query { viewer { id name } issues(filter: {state: {type: {eq: \"backlog\"}}}) { nodes { ...I } pageInfo { hasNextPage endCursor startCursor hasPreviousPage } } }")
    [issue] = data["issues"]["nodes"]
    assert issue["identifier"] == "ENG-1" and issue["url"].startswith(sb.url("linear") + "/pome-twin/issue/ENG-1/")
    states = gql("{ workflowStates(filter: {team: {key: {eq: \"ENG\"}}}) { nodes { id name type position } } }")["workflowStates"]["nodes"]
    progress = next(s for s in states if s["name"] == "In Progress")
    out = gql(ISSUE + " mutation($id: String!, $s: String!) { issueUpdate(id: $id, input: {stateId: $s}) { success lastSyncId issue { ...I } } }",
              {"id": issue["identifier"], "s": progress["id"]})
    assert out["issueUpdate"]["issue"]["state"]["name"] == "In Progress"
    sync = out["issueUpdate"]["lastSyncId"]
    out = gql("mutation($i: CommentCreateInput!) { commentCreate(input: $i) { success lastSyncId comment { id body url user { id } issue { id } parent { id } } } }",
              {"i": {"issueId": issue["id"], "body": "Triage in progress."}})
    assert out["commentCreate"]["lastSyncId"] > sync
    state = sb.state("linear")
    assert state["entities"]["Issue"][issue["id"]]["stateId"] == progress["id"]
    rows = sb.events("linear")
    assert any(r.get("action") == "issueUpdate" for r in (rows if isinstance(rows, list) else rows.get("events", rows.get("data", []))))


def test_introspection_rebuilds_linears_schema(new_sandbox):
    gql = Linear(new_sandbox(["linear"]))
    status, _, body = gql.raw(get_introspection_query(descriptions=True))
    assert status == 200 and "errors" not in body
    client = build_client_schema(body["data"])
    assert set(client.type_map) == set(SCHEMA.type_map)
    assert set(client.query_type.fields) == set(SCHEMA.query_type.fields)
    assert client.get_type("Issue").fields["identifier"].description == SCHEMA.get_type("Issue").fields["identifier"].description


@pytest.mark.parametrize("query", [
    "{ issues { nodes { nope } } }",
    "{ issue { id } }",
    "query($id: String!) { issue(id: $id) { id } }",
    "{ issue(id: 3) { id title } }",
    "{ viewer { ...Missing } }",
    "mutation { issueCreate(input: {title: \"no team\"}) { success } }",
])
def test_invalid_documents_fail_as_graphql_core_says(new_sandbox, query):
    gql = Linear(new_sandbox(["linear"]))
    try:
        expected_invalid = bool(validate(SCHEMA, parse(query))) or "$id" in query
    except Exception:
        expected_invalid = True
    assert expected_invalid
    status, _, body = gql.raw(query)
    assert status == 400, body
    assert body["errors"][0]["extensions"]["code"] in ("GRAPHQL_VALIDATION_FAILED", "GRAPHQL_PARSE_FAILED", "BAD_USER_INPUT"), body
    assert "data" not in body or body["data"] is None


def placeholder(arg_type):
    t = arg_type.of_type if isinstance(arg_type, GraphQLNonNull) else arg_type
    if isinstance(t, GraphQLList):
        return "[]"
    if isinstance(t, GraphQLEnumType):
        return next(iter(t.values))
    if isinstance(t, GraphQLScalarType):
        return {"Int": "1", "Float": "1", "Boolean": "false"}.get(t.name, '"x"')
    return None


# Fields the twin computes from others rather than stores (`maybe_computed` in
# twins/linear/src/exec.rs): every other non-null field an answer gives must be one the world holds.
COMPUTED = {
    "id", "url", "priorityLabel", "searchableContent", "slugId", "isMe", "displayName", "progress", "scope",
    "hasBlockingRelations", "hasBlockedByRelations", "hasRelatedRelations", "hasDuplicateRelations", "isActive",
    "isFuture", "isPast", "isNext", "isPrevious", "status", "issueCount", "createdIssueCount", "userCount",
    "reactionData", "customerTicketCount", "commentCount", "customerCount", "approximateNeedCount", "modelName",
    "visibility", "ledInitiativeCount", "cycleCalenderUrl", "scopeHistory", "completedScopeHistory",
    "inProgressScopeHistory", "issueCountHistory", "completedIssueCountHistory", "isStale",
}


def unwrap(t):
    while isinstance(t, (GraphQLNonNull, GraphQLList)):
        t = t.of_type
    return t


def scalar_selection(t):
    """`__typename` and every scalar or enum field of object type `t` that takes no required
    argument and is not a list."""
    names = ["__typename"]
    for fn, f in t.fields.items():
        inner = f.type.of_type if isinstance(f.type, GraphQLNonNull) else f.type
        if isinstance(inner, GraphQLList) or not isinstance(inner, (GraphQLScalarType, GraphQLEnumType)):
            continue
        if any(isinstance(a.type, GraphQLNonNull) for a in f.args.values()):
            continue
        names.append(fn)
    return " ".join(names)


def selection_for(t):
    if isinstance(t, (GraphQLScalarType, GraphQLEnumType)):
        return ""
    if isinstance(t, GraphQLObjectType) and t.name.endswith("Connection") and "nodes" in t.fields:
        node = unwrap(t.fields["nodes"].type)
        inner = scalar_selection(node) if isinstance(node, GraphQLObjectType) else "__typename"
        return " { nodes { %s } }" % inner
    if isinstance(t, GraphQLObjectType):
        return " { %s }" % scalar_selection(t)
    return " { __typename }"


def held_or_computed(value, state, where):
    """Each entity object in `value` gives, for each non-null field, a value its stored entity
    holds, or one the twin computes: never one made up at read time."""
    if isinstance(value, list):
        for i, v in enumerate(value):
            held_or_computed(v, state, f"{where}[{i}]")
        return
    if not isinstance(value, dict):
        return
    t = SCHEMA.get_type(value.get("__typename") or "")
    stored = state.get(value.get("__typename"), {}).get(value.get("id")) if isinstance(t, GraphQLObjectType) else None
    for k, v in value.items():
        if stored is not None and k != "__typename" and v is not None and isinstance(t.fields[k].type, GraphQLNonNull) \
                and isinstance(unwrap(t.fields[k].type), (GraphQLScalarType, GraphQLEnumType)):
            assert k in stored or k in COMPUTED, f"{where}.{k} = {v!r}: the world holds no {t.name}.{k} and the twin does not compute it"
        held_or_computed(v, state, f"{where}.{k}")


def test_every_root_query_answers_or_says_it_is_not_served(new_sandbox):
    sb = new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json"))
    gql = Linear(sb)
    state = sb.state("linear")["entities"]
    answered, unsupported, tried, fields = 0, 0, 0, 0
    not_served, partial = [], []
    for name, field in SCHEMA.query_type.fields.items():
        args = []
        for an, a in field.args.items():
            if isinstance(a.type, GraphQLNonNull):
                p = placeholder(a.type)
                if p is None:
                    break
                args.append(f"{an}: {p}")
        else:
            sel = selection_for(unwrap(field.type))
            query = "{ %s%s%s }" % (name, f"({', '.join(args)})" if args else "", sel)
            tried += 1
            status, _, body = gql.raw(query)
            if "errors" not in body:
                check_response(query, body["data"])
                held_or_computed(body["data"], state, "data")
                answered += 1
                fields += sel.count(" ")
                continue
            codes = {e["extensions"].get("code") for e in body["errors"]}
            assert codes <= {"UNSUPPORTED", "INVALID_INPUT"}, (name, body)
            # Not served at all (the root field itself), or served with a selected field the
            # world holds no value for.
            if any(e["extensions"].get("code") == "UNSUPPORTED" and len(e.get("path", [])) == 1 for e in body["errors"]):
                not_served.append(name)
            elif "UNSUPPORTED" in codes:
                partial.append(name)
            for e in body["errors"]:
                if e["extensions"].get("code") == "UNSUPPORTED" and len(e.get("path", [])) > 1:
                    assert "is not supported by the pome Linear twin" in e["message"], e
            if body.get("data"):
                check_response(query, body["data"])
                held_or_computed(body["data"], state, "data")
            unsupported += "UNSUPPORTED" in codes
    # Lookups of the placeholder id "x" answer Linear's "Entity not found" (served, correctly).
    assert tried == len(SCHEMA.query_type.fields) and answered >= 75, (tried, answered, unsupported)
    # Issue #35: at least 90 % of Linear's root queries are served.
    assert tried - len(not_served) >= 0.9 * tried, (len(not_served), not_served)
    # A served query answers every scalar field it was asked for; only these answer one the
    # world holds no value for (settings and counts no seed gives), so a query served shallowly,
    # as an object without its fields, fails here.
    assert set(partial) <= {"administrableTeams", "comments", "organization", "teams", "userSettings"}, partial
    assert fields >= 1300, fields
    print(f"root queries: {tried} tried, {tried - len(not_served)} served, {answered} answered whole, {len(partial)} with a field the world does not hold; {fields} fields selected in whole answers")


def test_a_bad_token_is_linears_authentication_error(new_sandbox):
    gql = Linear(new_sandbox(["linear"]), token="lin_api_not_a_key")
    status, _, body = gql.raw("{ viewer { id } }")
    assert status == 400
    assert body["errors"][0]["extensions"]["code"] == "AUTHENTICATION_ERROR"
    assert body["errors"][0]["extensions"]["type"] == "authentication error"


def test_an_api_key_from_the_seed_acts_as_its_user_and_never_reaches_the_tape(new_sandbox):
    seed = task_seed("24-linear-issue-triage.seed.json")
    seed["tokens"] = [{"token": "lin_api_seeded_dev_key", "user": "dev@pome-twin.test"}]
    sb = new_sandbox(["linear"], seed)
    for form in ("lin_api_seeded_dev_key", "Bearer lin_api_seeded_dev_key"):
        assert Linear(sb, token=form)("{ viewer { email } }")["viewer"]["email"] == "dev@pome-twin.test"
    status, _, body = Linear(sb, token="lin_api_seeded_dev_kez").raw("{ viewer { id } }")
    assert status == 400 and body["errors"][0]["extensions"]["code"] == "AUTHENTICATION_ERROR"
    # A client cannot pass itself off with a digest of its own: the host sends the digest of
    # the credential it was given, and only that.
    forged = urllib.request.Request(sb.url("linear") + "/graphql", data=b'{"query": "{ viewer { id } }"}', method="POST", headers={
        "Content-Type": "application/json", "Authorization": "lin_api_wrong",
        "x-pome-credential-sha256": hashlib.sha256(b"lin_api_seeded_dev_key").hexdigest()})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(forged)
    assert json.load(refused.value)["errors"][0]["extensions"]["code"] == "AUTHENTICATION_ERROR"
    assert "lin_api_seeded_dev_key" not in json.dumps(sb.events("linear"))


def test_bearer_tokens_work_too_and_rate_limit_headers_are_sent(new_sandbox):
    sb = new_sandbox(["linear"])
    gql = Linear(sb, token=f"Bearer {sb.token}")
    status, headers, body = gql.raw("{ viewer { id } }")
    assert status == 200, body
    lower = {k.lower(): v for k, v in headers.items()}
    assert int(lower["x-ratelimit-requests-remaining"]) < int(lower["x-ratelimit-requests-limit"])


def test_pagination_and_filters_over_raw_graphql(new_sandbox):
    gql = Linear(new_sandbox(["linear"], seed=task_seed("24-linear-issue-triage.seed.json")))
    for i in range(5):
        gql("mutation($t: String!) { issueCreate(input: {teamId: \"team_eng\", title: $t, priority: 4}) { success } }", {"t": f"Load {i}"})
    seen, after = [], None
    while True:
        page = gql("query($a: String) { issues(first: 2, after: $a, filter: {priority: {eq: 4}}) { edges { cursor node { identifier } } pageInfo { hasNextPage endCursor } } }", {"a": after})["issues"]
        seen += [e["node"]["identifier"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert sorted(seen) == sorted(f"ENG-{n}" for n in range(3, 8))
    found = gql("{ searchIssues(term: \"load 3\") { totalCount nodes { identifier title } } }")["searchIssues"]
    assert [n["title"] for n in found["nodes"]] == ["Load 3"]


# --- grading through the host: scripted good and defective agents -------------------------

def run_task(pome_server, name, steps):
    """Store task `name` with its seed, run `steps(gql)` in a sandbox made from it, finalize,
    and return {criterion sentence: status}."""
    md = (TASKS / f"{name}.md").read_text()
    seed = json.loads((TASKS / f"{name}.seed.json").read_text())
    task_id = f"{name}-{steps.__name__}"
    status, _ = pome_server.api("POST", "/v1/tasks", {"id": task_id, "source": md, "seed": seed})
    assert status in (200, 201)
    status, body = pome_server.api("POST", "/v1/sandboxes", {"task_id": task_id})
    assert status == 201, body
    from conftest import Sandbox
    sb = Sandbox(pome_server, body)
    steps(Linear(sb))
    status, verdict = sb.finalize()
    assert status == 200, verdict
    out = {}

    def walk(x):
        if isinstance(x, dict):
            if "status" in x and isinstance(x.get("criterion", x.get("text", x.get("sentence"))), str):
                out[x.get("criterion", x.get("text", x.get("sentence")))] = x["status"]
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(verdict)
    assert out, verdict
    return out


def code(results, fragment):
    [status] = [s for c, s in results.items() if fragment in c]
    return status


def good_24(gql):
    gql('mutation { issueUpdate(id: "ENG-1", input: {stateId: "state_progress"}) { success } }')
    gql('mutation { commentCreate(input: {issueId: "ENG-1", body: "Starting triage now."}) { success } }')


def skips_state_24(gql):
    gql('mutation { commentCreate(input: {issueId: "ENG-1", body: "Starting triage now."}) { success } }')


def good_25(gql):
    root = gql('{ comments { nodes { id parent { id } } } }')["comments"]["nodes"][0]["id"]
    gql('mutation($p: String) { commentCreate(input: {issueId: "ENG-1", parentId: $p, body: "Triaging."}) { success } }', {"p": root})
    label = gql('mutation { issueLabelCreate(input: {name: "Needs triage", teamId: "team_eng"}) { issueLabel { id } } }')["issueLabelCreate"]["issueLabel"]["id"]
    gql('mutation($l: [String!]) { issueUpdate(id: "ENG-1", input: {addedLabelIds: $l, estimate: 2}) { success } }', {"l": [label]})


def top_level_comment_25(gql):
    gql('mutation { commentCreate(input: {issueId: "ENG-1", body: "Triaging."}) { success } }')
    label = gql('mutation { issueLabelCreate(input: {name: "Needs triage", teamId: "team_eng"}) { issueLabel { id } } }')["issueLabelCreate"]["issueLabel"]["id"]
    gql('mutation($l: [String!]) { issueUpdate(id: "ENG-1", input: {addedLabelIds: $l, estimate: 2}) { success } }', {"l": [label]})


def good_26(gql):
    gql('mutation { issueCreate(input: {teamId: "team_eng", title: "Orders 500 after deploy", stateId: "state_progress", labelIds: ["label_agent"]}) { success } }')
    gql('mutation { commentCreate(input: {issueId: "ENG-1", body: "Tracks acme/api GitHub issue #1."}) { success } }')


def forgets_label_26(gql):
    gql('mutation { issueCreate(input: {teamId: "team_eng", title: "Orders 500 after deploy", stateId: "state_progress"}) { success } }')
    gql('mutation { commentCreate(input: {issueId: "ENG-1", body: "Tracks acme/api GitHub issue #1."}) { success } }')


@pytest.mark.parametrize("name,good,bad,broken", [
    ("24-linear-issue-triage", good_24, skips_state_24, "is in state"),
    ("25-linear-comment-label-triage", good_25, top_level_comment_25, "threaded reply to a seeded comment"),
    ("26-github-linear-handoff", good_26, forgets_label_26, "has label"),
])
def test_a_good_agent_passes_every_code_criterion_and_a_defective_one_fails_its_own(pome_server, name, good, bad, broken):
    results = run_task(pome_server, name, good)
    codes = {c: s for c, s in results.items() if s != "skipped"}
    assert codes and all(s == "passed" for s in codes.values()), results
    results = run_task(pome_server, name, bad)
    assert code(results, broken) == "failed", results
    assert sum(s == "failed" for s in results.values()) == 1, results
