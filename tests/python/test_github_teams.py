"""Teams and their repositories through PyGithub against the GitHub twin: an organisation's
teams created, renamed and deleted, memberships with roles, and the access a team's
repositories give its members."""

from github import Auth, Github, GithubException

SEED = {
    "users": [{"login": "acme", "type": "Organization"}, {"login": "alice"}, {"login": "carol"}, {"login": "pome-agent"}],
    "repositories": [{"owner": "acme", "name": "api", "collaborators": ["alice", {"login": "pome-agent", "permission": "admin"}],
                      "files": [{"path": "README.md", "content": "# api\n"}]}],
}


def client(sb):
    return Github(base_url=sb.url("github"), auth=Auth.Token(sb.token), retry=None, seconds_between_requests=0, seconds_between_writes=0)


def test_teams_memberships_and_repositories_through_pygithub(new_sandbox):
    sb = new_sandbox(["github"], seed=SEED)
    gh = client(sb)
    org = gh.get_organization("acme")
    repo = org.get_repo("api")
    team = org.create_team("Platform Team", repo_names=[repo], privacy="closed", description="infra")
    assert team.slug == "platform-team" and team.repos_count == 1 and team.members_count == 1
    assert [t.slug for t in org.get_teams()] == ["platform-team"]
    team.edit("Platform", description="infrastructure")
    assert org.get_team_by_slug("platform").description == "infrastructure"
    team = org.get_team_by_slug("platform")
    carol = gh.get_user("carol")
    team.add_membership(carol, role="maintainer")
    assert team.get_team_membership(carol).role == "maintainer"
    assert [u.login for u in team.get_members(role="maintainer")] == ["pome-agent", "carol"]
    team.update_team_repository(repo, "push")
    assert team.get_repo_permission(repo).push is True
    assert [r.full_name for r in team.get_repos()] == ["acme/api"]
    assert [t.slug for t in repo.get_teams()] == ["platform"]
    assert repo.get_collaborator_permission(carol) == "write", "carol pushes through the team"
    team.remove_from_repos(repo)
    assert repo.get_collaborator_permission(carol) == "read"
    team.remove_membership(carol)
    assert [u.login for u in team.get_members()] == ["pome-agent"]
    assert [t.slug for t in gh.get_user().get_teams()] == ["platform"]
    team.delete()
    try:
        org.get_team_by_slug("platform")
        raise AssertionError("the team should be gone")
    except GithubException as e:
        assert e.status == 404
    state = sb.state("github")
    assert state["teams"] == []
