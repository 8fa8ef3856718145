"""Release assets through PyGithub (#34): `GitRelease.upload_asset` and
`upload_asset_from_memory` at the release's `upload_url`, `get_assets`, `download_asset`
(PyGithub asks the asset's URL for `application/octet-stream` and follows the 302 to the file
the twin serves at `browser_download_url`), `update_asset`, `delete_asset`, and the twin's
size limit as PyGithub's `GithubException`."""

import hashlib
import io

import pytest
from github import GithubException, UnknownObjectException

from test_github_pygithub import gh_for


@pytest.fixture
def gh(new_sandbox):
    return gh_for(new_sandbox(["github"]))


def test_upload_list_download_rename_delete(gh, tmp_path):
    repo = gh.get_repo("acme/api")
    rel = repo.create_git_release("v1.0.0", "One", "first")
    data = bytes(range(256)) * 40
    path = tmp_path / "tool-linux.tar.gz"
    path.write_bytes(data)

    asset = rel.upload_asset(str(path), label="Linux build", content_type="application/gzip")
    assert (asset.name, asset.label, asset.content_type, asset.size) == ("tool-linux.tar.gz", "Linux build", "application/gzip", len(data))
    assert asset.state == "uploaded" and asset.download_count == 0
    assert asset.uploader.login == "pome-agent"
    assert asset.digest == "sha256:" + hashlib.sha256(data).hexdigest()
    assert asset.browser_download_url.endswith("/acme/api/releases/download/v1.0.0/tool-linux.tar.gz")

    sums = rel.upload_asset_from_memory(io.BytesIO(b"abc  tool\n"), 10, "SHA256SUMS", content_type="text/plain")
    assert sums.size == 10

    assert [a.name for a in rel.get_assets()] == ["tool-linux.tar.gz", "SHA256SUMS"]
    assert [a.id for a in repo.get_release(rel.id).assets] == [asset.id, sums.id]
    assert repo.get_release_asset(asset.id).name == "tool-linux.tar.gz"

    out = tmp_path / "down.tar.gz"
    asset.download_asset(str(out))
    assert out.read_bytes() == data
    assert repo.get_release_asset(asset.id).download_count == 1

    # A name the release already has is refused; a free one renames.
    with pytest.raises(GithubException) as e:
        sums.update_asset("tool-linux.tar.gz")
    assert e.value.status == 422 and e.value.data["errors"][0]["code"] == "already_exists"
    renamed = sums.update_asset("checksums.txt", label="sums")
    assert (renamed.name, renamed.label) == ("checksums.txt", "sums")

    assert asset.delete_asset()
    with pytest.raises(UnknownObjectException):
        repo.get_release_asset(asset.id)
    assert [a.name for a in rel.get_assets()] == ["checksums.txt"]


def test_an_asset_over_the_limit_is_a_validation_failure(gh):
    rel = gh.get_repo("acme/api").create_git_release("v2.0.0", "Two", "")
    big = 8 * 1024 * 1024 + 1
    with pytest.raises(GithubException) as e:
        rel.upload_asset_from_memory(io.BytesIO(b"\0" * big), big, "big.bin")
    assert e.value.status == 422
    assert e.value.data["errors"][0]["field"] == "size"
    assert list(rel.get_assets()) == []
