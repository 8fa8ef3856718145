"""The GitHub twin, driven only through PyGithub: the work an agent does (triage with labels,
assignees, comments and close reasons; branch → commit → pull request → review → status →
merge; git data multi-file commits; releases; search; pagination) and the error paths as
PyGithub's own exception types (missing repository, permission-denied merge, stale sha,
validation failures)."""

import base64
import json
import pathlib

import pytest
from github import Auth, Github, GithubException, InputGitTreeElement, UnknownObjectException

HERE = pathlib.Path(__file__).resolve().parent
TASKS = HERE.parent / "tasks-compat"


def gh_for(sb, token=None):
    # PyGithub throttles itself (0.25 s between requests, 1 s between writes) to be polite to
    # github.com; a twin needs none of that.
    return Github(base_url=sb.url("github"), auth=Auth.Token(sb.token if token is None else token), retry=None,
                  seconds_between_requests=0, seconds_between_writes=0)


@pytest.fixture
def sb(new_sandbox):
    return new_sandbox(["github"])


@pytest.fixture
def gh(sb):
    return gh_for(sb)


# A world for review and merge work: alice opens pull requests the agent reviews; `locked`
# is a repository where the agent only has triage, so it cannot merge.
TEAM_SEED = {
    "_meta": {"version": 1, "source_hash": "sha256:test"},
    "users": [
        {"login": "acme", "type": "Organization", "name": "ACME"},
        {"login": "alice", "name": "Alice Chen", "email": "alice@acme.test"},
        {"login": "bob", "name": "Bob Ortiz"},
        {"login": "pome-agent", "name": "Pome Agent"},
        {"login": "drive-by", "name": "Drive By"},
    ],
    "repositories": [
        {
            "owner": "acme", "name": "api", "description": "ACME API service", "default_branch": "main",
            "collaborators": ["alice", "bob", "pome-agent"],
            "required_status_checks": ["ci/test"],
            "labels": [
                {"name": "bug", "color": "d73a4a", "description": "Something isn't working"},
                {"name": "feature", "color": "a2eeef"},
                {"name": "needs-triage", "color": "ededed"},
            ],
            "files": [
                {"path": "README.md", "content": "# api\n"},
                {"path": "src/orders.py", "content": "def total(items):\n    return sum(items)\n"},
                {"path": "src/orders.py", "branch": "fix-total", "content": "def total(items):\n    return sum(i for i in items if i)\n"},
                {"path": "src/auth.py", "branch": "sneaky", "content": "def check(user):\n    return True\n"},
            ],
            "issues": [
                {"number": 1, "title": "Orders total crashes on None", "body": "TypeError in total()", "author": "bob", "labels": ["needs-triage"]},
                {"number": 2, "title": "Add CSV export", "body": "Please", "author": "bob"},
            ],
            "pull_requests": [
                {"number": 3, "title": "Skip None in total", "body": "Fixes #1", "head": "fix-total", "base": "main", "author": "alice",
                 "statuses": [{"context": "ci/test", "state": "success", "description": "passed"}]},
                {"number": 4, "title": "Refactor auth", "body": "no behaviour change", "head": "sneaky", "base": "main", "author": "drive-by",
                 "statuses": [{"context": "ci/test", "state": "failure", "description": "2 failed"}]},
            ],
        },
        {
            "owner": "acme", "name": "locked", "agent_permission": "triage", "collaborators": ["alice"],
            "files": [{"path": "a.txt", "content": "1\n"}, {"path": "a.txt", "branch": "b", "content": "2\n"}],
            "pull_requests": [{"number": 1, "title": "Change a", "head": "b", "author": "alice"}],
        },
    ],
}


@pytest.fixture
def team(new_sandbox):
    sb = new_sandbox(["github"], seed=TEAM_SEED)
    return sb, gh_for(sb)


# --- identity and repositories --------------------------------------------------------------

def test_authenticated_user_and_repo(gh, sb):
    me = gh.get_user()
    assert me.login == "pome-agent"
    repo = gh.get_repo("acme/api")
    assert repo.full_name == "acme/api" and repo.default_branch == "main"
    assert repo.url.startswith(sb.url("github"))
    assert repo.permissions.push
    assert [r.full_name for r in me.get_repos()] == ["acme/api"]
    assert gh.get_organization("acme").login == "acme"


def test_missing_repo_is_unknown_object(gh):
    with pytest.raises(UnknownObjectException) as e:
        gh.get_repo("acme/does-not-exist")
    assert e.value.status == 404
    assert e.value.data["message"] == "Not Found"


def test_bad_token_is_bad_credentials(sb):
    from github import BadCredentialsException
    with pytest.raises(BadCredentialsException) as e:
        gh_for(sb, token="not-the-token").get_user().login
    assert e.value.data["message"] == "Bad credentials"


# --- triage ---------------------------------------------------------------------------------

def test_triage_labels_assignees_comment_close(team):
    sb, gh = team
    repo = gh.get_repo("acme/api")
    issue = repo.get_issue(1)
    assert issue.state == "open" and [l.name for l in issue.labels] == ["needs-triage"]
    issue.add_to_labels("bug")
    issue.remove_from_labels("needs-triage")
    issue.add_to_assignees("alice")
    comment = issue.create_comment("Reproduced: total() fails on None. Assigning to @alice.")
    assert comment.user.login == "pome-agent"
    issue = repo.get_issue(1)
    assert [l.name for l in issue.labels] == ["bug"]
    assert [a.login for a in issue.assignees] == ["alice"]
    assert issue.comments == 1
    assert [c.body for c in issue.get_comments()] == [comment.body]

    dup = repo.get_issue(2)
    dup.edit(state="closed", state_reason="not_planned")
    dup = repo.get_issue(2)
    assert dup.state == "closed" and dup.state_reason == "not_planned"
    assert dup.closed_by.login == "pome-agent"
    events = [e.event for e in repo.get_issue(1).get_events()]
    assert events == ["labeled", "unlabeled", "assigned"]

    # Graders see it in the state export, and every call on the tape with its action.
    state = sb.state("github")
    api = next(r for r in state["repositories"] if r["full_name"] == "acme/api")
    assert next(i for i in api["issues"] if i["number"] == 1)["assignees"] == ["alice"]
    actions = [row["action"] for row in sb.events("github")]
    assert "issues.add_labels" in actions and "issues.create_comment" in actions


def test_create_issue_and_labels(gh):
    repo = gh.get_repo("acme/api")
    label = repo.create_label("p1", "b60205", "urgent")
    assert label.color == "b60205"
    with pytest.raises(GithubException) as e:
        repo.create_label("p1", "b60205")
    assert e.value.status == 422 and e.value.data["errors"][0]["code"] == "already_exists"
    issue = repo.create_issue(title="Checkout is slow", body="p95 is 3s", labels=["p1"], assignees=["bob"])
    assert issue.number == 4 and issue.labels[0].name == "p1" and issue.assignee.login == "bob"
    with pytest.raises(GithubException) as e:
        repo.create_issue(title="x", assignees=["nobody-at-all"])
    assert e.value.status == 422 and e.value.data["message"] == "Validation Failed"
    assert {"p1", "bug"} <= {l.name for l in repo.get_labels()}


def test_pagination_follows_link_headers(gh):
    repo = gh.get_repo("acme/api")
    for i in range(35):
        repo.create_issue(title=f"load {i}")
    issues = repo.get_issues(state="open")
    titles = [i.title for i in issues]
    # 35 new + issue #1 + pull request #3 (GitHub lists pull requests among issues).
    assert len(titles) == 37
    assert titles[0] == "load 34"
    assert issues.totalCount == 37


def test_milestones_and_lock(gh):
    repo = gh.get_repo("acme/api")
    ms = repo.create_milestone("v2", description="next")
    issue = repo.get_issue(1)
    issue.edit(milestone=ms)
    assert repo.get_issue(1).milestone.title == "v2"
    assert repo.get_milestone(ms.number).open_issues == 1
    issue.lock("resolved")
    assert repo.get_issue(1).locked


# --- code: branch → commit → pull request → review → status → merge ---------------------------

def test_branch_commit_pr_review_status_merge(team):
    sb, gh = team
    repo = gh.get_repo("acme/api")
    main = repo.get_branch("main")
    repo.create_git_ref("refs/heads/csv-export", main.commit.sha)
    created = repo.create_file("src/export.py", "Add CSV export", "def export(rows):\n    return rows\n", branch="csv-export")
    blob_sha = created["content"].sha
    updated = repo.update_file("src/export.py", "Handle empty rows", "def export(rows):\n    return rows or []\n", blob_sha, branch="csv-export")
    assert updated["commit"].sha != created["commit"].sha
    content = repo.get_contents("src/export.py", ref="csv-export")
    assert content.decoded_content == b"def export(rows):\n    return rows or []\n"

    pr = repo.create_pull(title="Add CSV export", body="Closes #2", head="csv-export", base="main")
    assert pr.number == 5 and pr.mergeable and pr.commits == 2
    assert [f.filename for f in pr.get_files()] == ["src/export.py"]
    # The agent cannot approve its own pull request.
    with pytest.raises(GithubException) as e:
        pr.create_review(event="APPROVE")
    assert e.value.status == 422
    pr.create_review(body="Self-review: tests added", event="COMMENT")
    # Required check missing → blocked; a green status unblocks.
    assert repo.get_pull(5).mergeable_state == "blocked"
    repo.get_commit(pr.head.sha).create_status(state="success", context="ci/test", description="ok")
    assert repo.get_commit(pr.head.sha).get_combined_status().state == "success"
    assert repo.get_pull(5).mergeable_state == "clean"
    result = pr.merge(merge_method="squash", sha=pr.head.sha)
    assert result.merged
    pr = repo.get_pull(5)
    assert pr.merged and pr.state == "closed" and pr.merged_by.login == "pome-agent"
    # "Closes #2" closed the issue on merge into the default branch.
    assert repo.get_issue(2).state == "closed"
    assert repo.get_contents("src/export.py").decoded_content.startswith(b"def export")
    state = sb.state("github")
    api = next(r for r in state["repositories"] if r["full_name"] == "acme/api")
    assert next(p for p in api["pull_requests"] if p["number"] == 5)["merged"] is True


def test_review_someone_elses_pr_and_merge(team):
    _, gh = team
    repo = gh.get_repo("acme/api")
    pr = repo.get_pull(3)
    assert pr.user.login == "alice" and pr.mergeable_state == "clean"
    files = list(pr.get_files())
    assert files[0].filename == "src/orders.py" and "+    return sum(i for i in items if i)" in files[0].patch
    review = pr.create_review(body="LGTM", event="APPROVE")
    assert review.state == "APPROVED"
    assert [r.state for r in pr.get_reviews()] == ["APPROVED"]
    pr.create_issue_comment("Merging: approved and CI green.")
    assert pr.merge(merge_method="merge").merged
    assert repo.get_issue(1).state == "closed"  # "Fixes #1"
    head = repo.get_commit("main")
    assert len(head.parents) == 2


def test_failing_required_check_blocks_merge(team):
    _, gh = team
    pr = gh.get_repo("acme/api").get_pull(4)
    assert pr.mergeable_state == "blocked"
    with pytest.raises(GithubException) as e:
        pr.merge()
    assert e.value.status == 405
    pr.create_review(body="This makes check() always succeed: an auth bypass.", event="REQUEST_CHANGES")
    assert not gh.get_repo("acme/api").get_pull(4).merged


def test_permission_denied_merge(team):
    _, gh = team
    pr = gh.get_repo("acme/locked").get_pull(1)
    with pytest.raises(GithubException) as e:
        pr.merge()
    assert e.value.status == 403
    assert not gh.get_repo("acme/locked").get_pull(1).merged


def test_stale_sha_is_a_conflict(team):
    _, gh = team
    repo = gh.get_repo("acme/api")
    pr = repo.get_pull(3)
    with pytest.raises(GithubException) as e:
        pr.merge(sha="0" * 40)
    assert e.value.status == 409
    f = repo.get_contents("README.md")
    with pytest.raises(GithubException) as e:
        repo.update_file("README.md", "edit", "new", "1" * 40)
    assert e.value.status == 409
    repo.update_file("README.md", "edit", "new\n", f.sha)
    assert repo.get_contents("README.md").decoded_content == b"new\n"


def test_git_data_multi_file_commit(gh):
    repo = gh.get_repo("acme/api")
    ref = repo.get_git_ref("heads/main")
    base = repo.get_git_commit(ref.object.sha)
    blob = repo.create_git_blob("print('one')\n", "utf-8")
    tree = repo.create_git_tree(
        [
            InputGitTreeElement("pkg/one.py", "100644", "blob", sha=blob.sha),
            InputGitTreeElement("pkg/two.py", "100644", "blob", content="print('two')\n"),
        ],
        base_tree=base.tree,
    )
    commit = repo.create_git_commit("Add pkg", tree, [base])
    ref.edit(commit.sha)
    assert repo.get_branch("main").commit.sha == commit.sha
    paths = [e.path for e in repo.get_git_tree("main", recursive=True).tree]
    assert {"pkg/one.py", "pkg/two.py", "README.md"} <= set(paths)
    cmp = repo.compare(base.sha, commit.sha)
    assert cmp.status == "ahead" and cmp.ahead_by == 1 and len(cmp.files) == 2
    with pytest.raises(GithubException) as e:
        ref.edit(base.sha)
    assert e.value.status == 422  # not a fast-forward
    assert [c.sha for c in repo.get_commits(path="pkg/one.py")] == [commit.sha]


def test_check_runs(gh):
    repo = gh.get_repo("acme/api")
    sha = repo.get_branch("main").commit.sha
    run = repo.create_check_run("lint", sha, status="in_progress")
    run.edit(conclusion="success", output={"title": "Lint", "summary": "clean"})
    runs = list(repo.get_commit(sha).get_check_runs())
    assert [(r.name, r.conclusion) for r in runs] == [("lint", "success")]


def test_release(gh):
    repo = gh.get_repo("acme/api")
    rel = repo.create_git_release("v1.0.0", "First release", "Initial version")
    assert rel.tag_name == "v1.0.0"
    assert repo.get_latest_release().id == rel.id
    assert repo.get_release("v1.0.0").title == "First release"
    assert [t.name for t in repo.get_tags()] == ["v1.0.0"]
    rel.update_release("First release!", "notes")
    assert repo.get_release(rel.id).body == "notes"
    rel.delete_release()
    with pytest.raises(UnknownObjectException):
        repo.get_latest_release()


def test_search(team):
    _, gh = team
    found = gh.search_issues("repo:acme/api is:issue is:open label:needs-triage")
    assert [i.number for i in found] == [1]
    prs = gh.search_issues("repo:acme/api is:pr is:open author:alice")
    assert [p.number for p in prs] == [3]
    assert [i.number for i in gh.search_issues("CSV in:title repo:acme/api")] == [2]
    code = gh.search_code("sum repo:acme/api")
    assert [c.path for c in code] == ["src/orders.py"]
    assert [r.full_name for r in gh.search_repositories("ACME org:acme")] == ["acme/api"]
    assert [u.login for u in gh.search_users("alice")] == ["alice"]


def test_collaborators_and_permissions(team):
    _, gh = team
    repo = gh.get_repo("acme/api")
    logins = sorted(c.login for c in repo.get_collaborators())
    assert logins == ["alice", "bob", "pome-agent"]
    assert repo.has_in_collaborators("alice") and not repo.has_in_collaborators("drive-by")
    assert repo.get_collaborator_permission("drive-by") == "read"
    locked = gh.get_repo("acme/locked")
    assert locked.permissions.triage and not locked.permissions.push


def test_every_task_seed_boots(new_sandbox):
    """Every GitHub seed the product family's tasks use boots a sandbox the client can read."""
    seeds = sorted(TASKS.glob("*/*.seed.json"))
    count = 0
    for path in seeds:
        seed = json.loads(path.read_text())
        gseed = seed if "repositories" in seed else seed.get("github")
        if gseed is None:
            continue
        sb = new_sandbox(["github"], seed=gseed)
        gh = gh_for(sb)
        for repo in gseed["repositories"]:
            r = gh.get_repo(f"{repo['owner']}/{repo['name']}")
            assert r.name == repo["name"]
            for pr in repo.get("pull_requests", []):
                if "number" in pr:
                    assert r.get_pull(pr["number"]).head.ref == pr["head"]
        count += 1
    assert count >= 15


# --- the rest of what agents reach for -----------------------------------------------------

def test_browse_code_and_history(team):
    _, gh = team
    repo = gh.get_repo("acme/api")
    root = repo.get_contents("")
    assert sorted(c.path for c in root) == ["README.md", "src"]
    assert [c.type for c in repo.get_contents("src")] == ["file"]
    assert repo.get_readme().decoded_content == b"# api\n"
    assert sorted(b.name for b in repo.get_branches()) == ["fix-total", "main", "sneaky"]
    refs = [r.ref for r in repo.get_git_matching_refs("heads/f")]
    assert refs == ["refs/heads/fix-total"]
    commits = list(repo.get_commits(sha="fix-total"))
    assert len(commits) == 2 and commits[0].commit.message == "Skip None in total"
    assert commits[0].author.login == "alice"
    # The seed's initial commit is by the first collaborator; alice's fix is not on main yet.
    assert [c.commit.message for c in repo.get_commits(author="alice")] == ["Initial commit"]
    full = repo.get_commit(commits[0].sha)
    assert [f.filename for f in full.files] == ["src/orders.py"] and full.stats.total == 2
    pulls = repo.get_pulls(state="open", base="main")
    assert [p.number for p in pulls] == [4, 3]
    assert [p.number for p in repo.get_pulls(head="acme:fix-total")] == [3]


def test_reviews_requests_comments_and_timeline(team):
    _, gh = team
    repo = gh.get_repo("acme/api")
    pr = repo.get_pull(3)
    pr.create_review_request(reviewers=["bob"])
    users, teams = pr.get_review_requests()
    assert [u.login for u in users] == ["bob"] and list(teams) == []
    head = repo.get_commit(pr.head.sha)
    c = pr.create_review_comment("Could this be a generator?", head, "src/orders.py", line=2)
    assert c.path == "src/orders.py" and c.commit_id == pr.head.sha
    reply = pr.create_review_comment_reply(c.id, "It is one already.")
    assert reply.in_reply_to_id == c.id
    assert [x.body for x in pr.get_review_comments()] == ["Could this be a generator?", "It is one already."]
    with pytest.raises(GithubException) as e:
        pr.create_review_comment("nope", head, "not/in/diff.py", line=1)
    assert e.value.status == 422
    pending = pr.create_review(body="still reading")
    assert pending.state == "PENDING"
    issue = repo.get_issue(3)
    issue.create_comment("ping")
    kinds = [e.event for e in issue.get_timeline()]
    assert "review_requested" in kinds and "commented" in kinds


def test_update_branch_and_rebase_merge(team):
    _, gh = team
    repo = gh.get_repo("acme/api")
    readme = repo.get_contents("README.md")
    repo.update_file("README.md", "Docs", "# api\n\nOrders.\n", readme.sha)
    pr = repo.get_pull(3)
    assert pr.mergeable_state == "behind"
    assert pr.update_branch()
    pr = repo.get_pull(3)
    # The merge of main made a new head commit: the required check has to run again.
    assert pr.mergeable_state == "blocked" and pr.commits == 2  # the fix and the merge of main
    repo.get_commit(pr.head.sha).create_status(state="success", context="ci/test")
    assert repo.get_pull(3).mergeable_state == "clean"
    assert pr.merge(merge_method="rebase").merged
    assert repo.get_contents("src/orders.py").decoded_content == b"def total(items):\n    return sum(i for i in items if i)\n"
    assert repo.get_contents("README.md").decoded_content == b"# api\n\nOrders.\n"


def test_repositories_create_edit_fork_delete(gh, sb):
    me = gh.get_user()
    repo = me.create_repo("notes", description="scratch", auto_init=True, private=True)
    assert repo.private and repo.owner.login == "pome-agent" and repo.get_contents("README.md")
    repo.edit(description="agent notes", has_issues=True)
    assert gh.get_repo("pome-agent/notes").description == "agent notes"
    repo.create_file("todo.md", "todo", "- [ ] ship\n")
    fork = gh.get_repo("acme/api").create_fork()
    assert fork.full_name == "pome-agent/api" and fork.fork and fork.parent.full_name == "acme/api"
    assert fork.get_contents("README.md").decoded_content.startswith(b"# api")
    repo.delete()
    with pytest.raises(UnknownObjectException):
        gh.get_repo("pome-agent/notes")
    assert {r.full_name for r in gh.get_user().get_repos()} == {"acme/api", "pome-agent/api"}


def test_delete_file_and_comment_edits(gh):
    repo = gh.get_repo("acme/api")
    f = repo.get_contents("src/app.py")
    repo.delete_file("src/app.py", "remove app", f.sha)
    with pytest.raises(UnknownObjectException):
        repo.get_contents("src/app.py")
    issue = repo.get_issue(1)
    comment = issue.create_comment("first")
    comment.edit("second")
    comment.create_reaction("+1")
    assert [r.content for r in comment.get_reactions()] == ["+1"]
    assert issue.get_comment(comment.id).body == "second"
    comment.delete()
    assert issue.get_comments().totalCount == 0
    issue.edit(state="closed")
    issue.edit(state="open")
    issue = repo.get_issue(1)
    assert issue.state == "open" and issue.state_reason == "reopened"
