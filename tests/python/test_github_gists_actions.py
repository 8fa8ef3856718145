"""The GitHub twin's gists and Actions, driven only through PyGithub: an agent shares a
snippet as a gist (create, edit with a rename and a deletion, revisions, comments, stars,
forks of someone else's gist), and works with a repository's CI (workflows, dispatching a run
on a branch, runs with their jobs and steps, cancel and re-run, artifacts, logs)."""

import urllib.request

import pytest
from github import Auth, Github, GithubException, InputFileContent, UnknownObjectException

CI = """name: CI
on:
  push:
  workflow_dispatch:
jobs:
  test:
    name: Unit tests
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Run tests
        run: make test
"""

SEED = {
    "users": [
        {"login": "acme", "type": "Organization"},
        {"login": "alice", "name": "Alice"},
        {"login": "bob", "name": "Bob"},
        {"login": "pome-agent"},
    ],
    "repositories": [{
        "owner": "acme", "name": "api",
        "files": [
            {"path": "README.md", "content": "# api\n"},
            {"path": "README.md", "branch": "fix", "content": "# api, fixed\n"},
            {"path": ".github/workflows/ci.yml", "content": CI},
        ],
        "workflow_runs": [{"workflow": "ci.yml", "branch": "fix", "actor": "alice", "conclusion": "failure",
                           "artifacts": [{"name": "junit", "files": {"junit.xml": "<testsuite failures='1'/>\n"}}]}],
    }],
    "gists": [{"owner": "alice", "description": "retry helper", "public": True,
               "files": {"retry.py": "def retry(f):\n    return f()\n"},
               "comments": [{"author": "bob", "body": "handy"}]}],
}


@pytest.fixture
def sb(new_sandbox):
    return new_sandbox(["github"], seed=SEED)


@pytest.fixture
def gh(sb):
    return Github(base_url=sb.url("github"), auth=Auth.Token(sb.token), retry=None,
                  seconds_between_requests=0, seconds_between_writes=0)


def fetch(sb, url):
    req = urllib.request.Request(url, headers={"Authorization": f"token {sb.token}"})
    with urllib.request.urlopen(req) as resp:
        return resp.status, resp.read().decode()


def test_an_agent_shares_and_revises_a_gist(sb, gh):
    me = gh.get_user()
    gist = me.create_gist(False, {"check.sh": InputFileContent("make test\n"), "notes.md": InputFileContent("# notes\n")}, "CI helpers")
    assert len(gist.id) == 32
    assert not gist.public
    assert gist.owner.login == "pome-agent"
    assert gist.files["check.sh"].content == "make test\n"
    assert gist.files["notes.md"].language == "Markdown"
    first = gist.history[0].version

    gist.edit(description="CI helper", files={"check.sh": InputFileContent("make test lint\n", new_name="ci.sh"), "notes.md": None})
    assert gist.description == "CI helper"
    assert sorted(gist.files) == ["ci.sh"]
    assert [h.version for h in gist.history][1] == first

    again = gh.get_gist(gist.id)
    assert again.files["ci.sh"].content == "make test lint\n"
    status, text = fetch(sb, again.files["ci.sh"].raw_url)
    assert (status, text) == (200, "make test lint\n")
    assert [g.id for g in me.get_gists()] == [gist.id]
    assert gist.id not in [g.id for g in gh.get_gists()], "a secret gist is not public"

    gist.delete()
    with pytest.raises(UnknownObjectException):
        gh.get_gist(gist.id)


def test_an_agent_comments_stars_and_forks_someone_elses_gist(gh):
    alices = gh.get_user("alice").get_gists()[0]
    assert alices.description == "retry helper"
    assert [c.body for c in alices.get_comments()] == ["handy"]
    comment = alices.create_comment("used it, thanks")
    comment.edit("used it in acme/api, thanks")
    assert alices.get_comment(comment.id).body == "used it in acme/api, thanks"
    assert gh.get_gist(alices.id).comments == 2

    assert not alices.is_starred()
    alices.set_starred()
    assert alices.is_starred()
    assert [g.id for g in gh.get_user().get_starred_gists()] == [alices.id]
    alices.reset_starred()
    assert not alices.is_starred()

    fork = alices.create_fork()
    assert fork.owner.login == "pome-agent"
    assert gh.get_gist(fork.id).fork_of.id == alices.id
    assert gh.get_gist(fork.id).files["retry.py"].content.startswith("def retry")
    with pytest.raises(GithubException) as e:
        fork.create_fork()
    assert e.value.status == 422
    # Only the owner may change a gist.
    with pytest.raises(UnknownObjectException):
        alices.edit(description="mine now")


def test_an_agent_reads_why_ci_failed_and_re_runs_it(sb, gh):
    repo = gh.get_repo("acme/api")
    [workflow] = repo.get_workflows()
    assert (workflow.name, workflow.path, workflow.state) == ("CI", ".github/workflows/ci.yml", "active")
    [run] = repo.get_workflow_runs(status="failure")
    fix = repo.get_branch("fix").commit.sha
    assert (run.head_branch, run.head_sha, run.conclusion, run.actor.login) == ("fix", fix, "failure", "alice")
    [job] = run.jobs()
    assert (job.name, job.conclusion) == ("Unit tests", "failure")
    assert [s.name for s in job.steps] == ["Set up job", "Run actions/checkout@v4", "Run tests", "Complete job"]
    assert [s.conclusion for s in job.steps][2] == "failure"
    # Logs are a redirect to a file the twin serves.
    status, log = fetch(sb, job.logs_url())
    assert status == 200 and "##[error]Process completed with exit code 1." in log
    [artifact] = run.get_artifacts()
    assert artifact.name == "junit"
    assert repo.get_artifacts()[0].id == artifact.id

    assert run.rerun_failed_jobs()
    run = repo.get_workflow_run(run.id)
    assert (run.run_attempt, run.status, run.conclusion) == (2, "queued", None)
    assert run.cancel()
    run = repo.get_workflow_run(run.id)
    assert (run.status, run.conclusion) == ("completed", "cancelled")
    assert run.rerun()
    assert repo.get_workflow_run(run.id).run_attempt == 3


def test_an_agent_dispatches_a_workflow_on_a_branch(gh):
    repo = gh.get_repo("acme/api")
    workflow = repo.get_workflow("ci.yml")
    assert workflow.create_dispatch("fix", {"suite": "full"})
    runs = list(workflow.get_runs(event="workflow_dispatch"))
    assert len(runs) == 1
    run = runs[0]
    assert (run.head_branch, run.head_sha, run.status, run.run_number) == ("fix", repo.get_branch("fix").commit.sha, "queued", 2)
    assert run.triggering_actor.login == "pome-agent"
    assert not workflow.create_dispatch("no-such-branch")
    workflow.disable()
    assert repo.get_workflow("ci.yml").state == "disabled_manually"
    assert not workflow.create_dispatch("main")
    workflow.enable()
    assert workflow.create_dispatch("main")
    assert repo.get_workflow_runs(branch="main").totalCount == 1
    run.delete()
    with pytest.raises(UnknownObjectException):
        repo.get_workflow_run(run.id)
