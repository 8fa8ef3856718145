"""Branch protection through PyGithub (#34): `Branch.edit_protection`, `get_protection`, the
required status checks, reviews, admin enforcement, signatures and push restrictions
sub-routes, and the merge the rule then refuses until a pull request is approved."""

import pytest
from github import GithubException

from test_github_pygithub import gh_for

SEED = {
    "users": [{"login": "acme", "type": "Organization"}, {"login": "alice"}, {"login": "bob"}, {"login": "pome-agent"}],
    "teams": [{"org": "acme", "name": "Core", "slug": "core", "members": ["alice"]}],
    "repositories": [{
        "owner": "acme", "name": "api", "required_status_checks": [],
        "collaborators": ["alice", "bob", {"login": "pome-agent", "permission": "admin"}],
        "files": [{"path": "README.md", "content": "x\n"}, {"path": "a.txt", "branch": "fix", "content": "a\n"}],
        "pull_requests": [{"number": 1, "title": "Fix", "head": "fix", "author": "alice"}],
    }],
}


@pytest.fixture
def repo(new_sandbox):
    return gh_for(new_sandbox(["github"], seed=SEED)).get_repo("acme/api")


def test_protection_and_its_parts(repo):
    main = repo.get_branch("main")
    assert not main.protected
    p = main.edit_protection(strict=True, contexts=["ci/test"], enforce_admins=True, required_approving_review_count=1,
                             dismissal_users=["alice"], user_push_restrictions=["alice"], team_push_restrictions=["core"],
                             required_linear_history=True)
    assert p.required_status_checks.contexts == ["ci/test"] and p.required_status_checks.strict
    assert p.enforce_admins and p.required_linear_history
    assert p.required_pull_request_reviews.required_approving_review_count == 1
    assert [u.login for u in p.get_user_push_restrictions()] == ["alice"]
    assert [t.slug for t in p.get_team_push_restrictions()] == ["core"]
    main = repo.get_branch("main")
    assert main.protected

    main.edit_required_status_checks(strict=False, contexts=["ci/test", "lint"])
    checks = main.get_required_status_checks()
    assert (checks.strict, checks.contexts) == (False, ["ci/test", "lint"])
    main.edit_required_pull_request_reviews(required_approving_review_count=2, dismiss_stale_reviews=True)
    reviews = main.get_required_pull_request_reviews()
    assert (reviews.required_approving_review_count, reviews.dismiss_stale_reviews) == (2, True)

    assert main.get_admin_enforcement()
    main.remove_admin_enforcement()
    assert not main.get_admin_enforcement()
    main.set_admin_enforcement()
    assert main.get_admin_enforcement()

    assert not main.get_required_signatures()
    main.add_required_signatures()
    assert main.get_required_signatures()
    main.remove_required_signatures()
    assert not main.get_required_signatures()

    main.add_user_push_restrictions("bob")
    assert [u.login for u in main.get_user_push_restrictions()] == ["alice", "bob"]
    main.remove_user_push_restrictions("alice")
    main.replace_team_push_restrictions()
    assert [u.login for u in main.get_user_push_restrictions()] == ["bob"]
    assert list(main.get_team_push_restrictions()) == []
    with pytest.raises(GithubException) as e:
        main.add_team_push_restrictions("nope")
    assert e.value.status == 422
    main.remove_push_restrictions()

    main.remove_required_pull_request_reviews()
    main.remove_required_status_checks()
    main.remove_protection()
    assert not repo.get_branch("main").protected


def test_required_reviews_block_the_merge_until_approved(repo):
    repo.get_branch("main").edit_protection(required_approving_review_count=1)
    pr = repo.get_pull(1)
    assert pr.mergeable_state == "blocked"
    with pytest.raises(GithubException) as e:
        pr.merge()
    assert e.value.status == 405
    assert e.value.data["message"] == "At least 1 approving review is required by reviewers with write access."
    pr.create_review(event="APPROVE")
    assert pr.merge().merged
