"""GitHub's GraphQL API on the GitHub twin (#34, item 1), as raw HTTP: the same objects REST
answers (global ids round-trip, titles and counts agree), GitHub's connections, its error
shapes (NOT_FOUND with path and locations, validation errors, pagination limits), and
mutations that write what REST then reads and tape the REST action."""

import json
import urllib.error
import urllib.request

import pytest


def http(sb, method, path, body=None, token=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{sb.url('github')}{path}", data=data, method=method,
                                 headers={"Authorization": f"bearer {sb.token if token is None else token}",
                                          "Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def gql(sb, query, variables=None, path="/graphql"):
    status, body = http(sb, "POST", path, {"query": query, "variables": variables or {}})
    assert status == 200, body
    return body


@pytest.fixture
def sb(new_sandbox):
    return new_sandbox(["github"])


def test_viewer_and_repository_are_the_objects_rest_answers(sb):
    _, user = http(sb, "GET", "/user")
    _, repo = http(sb, "GET", "/repos/acme/api")
    body = gql(sb, 'query($o: String!, $n: String!) { viewer { login id } repository(owner: $o, name: $n) { id databaseId nameWithOwner isPrivate } }',
               {"o": "acme", "n": "api"})
    assert body["data"]["viewer"] == {"login": user["login"], "id": user["node_id"]}
    assert body["data"]["repository"] == {"id": repo["node_id"], "databaseId": repo["id"], "nameWithOwner": "acme/api", "isPrivate": repo["private"]}


def test_issue_titles_counts_and_node_ids_match_rest(sb):
    _, rest = http(sb, "GET", "/repos/acme/api/issues?state=all&per_page=100")
    issues = [i for i in rest if "pull_request" not in i]
    body = gql(sb, '{ repository(owner: "acme", name: "api") { issues(first: 100) { totalCount nodes { id number title state labels(first: 10) { nodes { name } } } } } }')
    conn = body["data"]["repository"]["issues"]
    assert conn["totalCount"] == len(issues)
    by_number = {n["number"]: n for n in conn["nodes"]}
    for i in issues:
        node = by_number[i["number"]]
        assert (node["id"], node["title"], node["state"]) == (i["node_id"], i["title"], i["state"].upper())
        assert [l["name"] for l in node["labels"]["nodes"]] == [l["name"] for l in i["labels"]]
    # A REST node_id is a GraphQL global id.
    first = issues[0]
    body = gql(sb, 'query($id: ID!) { node(id: $id) { __typename ... on Issue { number title } } }', {"id": first["node_id"]})
    assert body["data"]["node"] == {"__typename": "Issue", "number": first["number"], "title": first["title"]}


def test_pages_follow_end_cursors(sb):
    q = 'query($after: String) { repository(owner: "acme", name: "api") { issues(first: 1, after: $after) { nodes { number } pageInfo { hasNextPage endCursor } } } }'
    seen, after = [], None
    while True:
        page = gql(sb, q, {"after": after})["data"]["repository"]["issues"]
        seen += [n["number"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    _, rest = http(sb, "GET", "/repos/acme/api/issues?state=all&per_page=100")
    assert seen == sorted(i["number"] for i in rest if "pull_request" not in i)


def test_not_found_is_githubs_shape(sb):
    body = gql(sb, '{\n  repository(owner: "acme", name: "missing") {\n    id\n  }\n}')
    assert body == {
        "errors": [{"type": "NOT_FOUND", "path": ["repository"], "locations": [{"line": 2, "column": 3}],
                    "message": "Could not resolve to a Repository with the name 'acme/missing'."}],
        "data": {"repository": None},
    }


def test_validation_and_pagination_errors(sb):
    body = gql(sb, '{ viewer { nope } }')
    assert "data" not in body
    assert body["errors"][0]["extensions"] == {"code": "undefinedField", "typeName": "User", "fieldName": "nope"}
    assert body["errors"][0]["message"] == "Field 'nope' doesn't exist on type 'User'"
    assert body["errors"][0]["locations"] == [{"line": 1, "column": 12}]
    body = gql(sb, '{ repository(owner: "acme", name: "api") { issues { nodes { id } } } }')
    assert body["data"] is None
    assert body["errors"][0]["type"] == "MISSING_PAGINATION_BOUNDARIES"
    assert body["errors"][0]["path"] == ["repository", "issues"]
    body = gql(sb, '{ repository(owner: "acme", name: "api") { issues(first: 500) { nodes { id } } } }')
    assert body["errors"][0]["message"] == "Requesting 500 records on the `issues` connection exceeds the `first` limit of 100 records."


def test_unauthenticated_is_refused_as_rest_is(sb):
    status, body = http(sb, "POST", "/graphql", {"query": "{ viewer { login } }"}, token="ghp_wrong")
    assert status == 401
    assert body["message"] == "Bad credentials"


def test_enterprise_path_and_rate_limit(sb):
    body = gql(sb, "{ rateLimit { limit cost remaining } viewer { login } }", path="/api/graphql")
    assert body["data"]["rateLimit"] == {"limit": 5000, "cost": 1, "remaining": 4999}


def test_mutations_write_what_rest_reads_and_tape_rest_actions(sb):
    _, repo = http(sb, "GET", "/repos/acme/api")
    body = gql(sb, 'mutation($r: ID!) { createIssue(input: {repositoryId: $r, title: "Made in GraphQL", body: "text"}) { issue { id number } } }',
               {"r": repo["node_id"]})
    issue = body["data"]["createIssue"]["issue"]
    _, rest = http(sb, "GET", f"/repos/acme/api/issues/{issue['number']}")
    assert (rest["title"], rest["body"], rest["node_id"]) == ("Made in GraphQL", "text", issue["id"])
    gql(sb, 'mutation($id: ID!) { addComment(input: {subjectId: $id, body: "via graphql"}) { subject { id } } }', {"id": issue["id"]})
    gql(sb, 'mutation($id: ID!) { closeIssue(input: {issueId: $id}) { issue { state } } }', {"id": issue["id"]})
    _, rest = http(sb, "GET", f"/repos/acme/api/issues/{issue['number']}")
    assert (rest["state"], rest["comments"]) == ("closed", 1)
    # The tape names the REST actions the mutations ran, in order, between the GraphQL reads.
    actions = [row["action"] for row in sb.events("github")]
    wrote = [a for a in actions if a.startswith("issues.") and a != "issues.get"]
    assert wrote == ["issues.create", "issues.create_comment", "issues.update"]
