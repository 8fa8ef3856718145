"""`gh` works unchanged (#34, item 2): Debian's `gh`, pointed at the GitHub twin the way it is
pointed at a GitHub Enterprise host (GH_HOST, GH_ENTERPRISE_TOKEN), runs a scripted session.

gh insists on HTTPS for such a host and takes a host, not a URL, so each target serves TLS
with a certificate of the test's own CA (gh trusts it through SSL_CERT_FILE):

- `pome twin start github --tls-cert … --tls-key …`: the twin at the root of its own port,
  GH_HOST=127.0.0.1:<port>;
- `pome serve --tls-cert … --public-host pome.localhost`: a sandbox's twin by host name,
  GH_HOST=<sandbox>.github.pome.localhost:<port>. Such a name does not resolve here, so gh
  reaches it through a CONNECT proxy of the test's own (HTTPS_PROXY) that sends every tunnel
  to the server's port: the name is still the one gh's TLS and Host header carry.

gh talks REST under /api/v3 and GraphQL at /api/graphql. Assertions read gh's output and the
world (REST through the same host)."""

import json
import os
import pathlib
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
API_KEY = "pme_gh_cli_tests_key_000"
PUBLIC_HOST = "pome.localhost"


def binary():
    path = pathlib.Path(os.environ.get("POME_BIN") or ROOT / "target" / "release" / "pome")
    assert path.exists(), f"{path} is missing: run `make host`"
    return path


@pytest.fixture(scope="module")
def gh():
    path = shutil.which("gh")
    assert path, "gh is not installed: `make test-python` installs Debian's gh (apt-get install gh)"
    return path


@pytest.fixture(scope="module")
def pki():
    """A CA of the test's own and a server certificate it signed, for 127.0.0.1 and the
    host names of sandboxes' GitHub twins."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="pome-gh-pki-"))

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "ca.key",
            "-out", "ca.pem", "-days", "2", "-subj", "/CN=pome test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=pome")
    (d / "ext.cnf").write_text(f"subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:*.github.{PUBLIC_HOST}\n"
                               "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    return d


def start(args, pattern, env=None):
    """Start pome with `args`; the process and the match of `pattern` in what it prints."""
    proc = subprocess.Popen([str(binary()), *args], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, POME_LOG="warn", **(env or {})))
    for line in proc.stdout:
        m = re.search(pattern, line)
        if m:
            return proc, m
    proc.kill()
    raise AssertionError(f"pome {args[0]} did not start")


class Proxy:
    """An HTTP CONNECT proxy that tunnels every `*.localhost` name to one local port: how a
    name that does not resolve here reaches the server, unchanged in TLS and Host."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.tunnel, args=(client,), daemon=True).start()

    def tunnel(self, client):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                return client.close()
            head += chunk
        method, target = head.split(b" ")[:2]
        host = target.decode().rsplit(":", 1)[0]
        if method != b"CONNECT" or not host.endswith(".localhost"):
            client.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            return client.close()
        upstream = socket.create_connection(("127.0.0.1", self.port))
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pump(a, b):
            try:
                while data := a.recv(65536):
                    b.sendall(data)
            except OSError:
                pass
            finally:
                for s in (a, b):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
        pump(client, upstream)

    def close(self):
        self.sock.close()


class Target:
    """Where gh is pointed: its GH_HOST, the token it sends, and REST on the same host for
    reading the world."""

    def __init__(self, host, token, ca, proxy=None):
        self.host, self.token, self.ca, self.proxy = host, token, ca, proxy
        self.config = tempfile.mkdtemp(prefix="pome-gh-config-")

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GH_", "GITHUB_")) and k.lower() not in ("https_proxy", "http_proxy", "no_proxy")}
        env.update(GH_HOST=self.host, GH_ENTERPRISE_TOKEN=self.token, SSL_CERT_FILE=str(self.ca), GH_CONFIG_DIR=self.config,
                   GH_PROMPT_DISABLED="1", NO_COLOR="1", GH_NO_UPDATE_NOTIFIER="1", GH_PAGER="cat", PAGER="cat", HOME=self.config)
        if self.proxy:
            env["HTTPS_PROXY"] = self.proxy.url
        return env

    def gh(self, *args, ok=True):
        """Run `gh args…`; its standard output (a failure shows gh's standard error)."""
        done = subprocess.run(["gh", *args], env=self.env(), capture_output=True, text=True, timeout=60)
        if ok:
            assert done.returncode == 0, f"gh {' '.join(args)} exited {done.returncode}:\n{done.stderr}\n{done.stdout}"
        return done.stdout

    def rest(self, path):
        """GET `path` from the twin's REST API through gh's own `gh api` (same host, token, CA)."""
        return json.loads(self.gh("api", path))


@pytest.fixture(scope="module")
def twin_start(pki, gh):
    data = tempfile.mkdtemp(prefix="pome-gh-twin-")
    proc, m = start(["twin", "start", "github", "--port", "0", "--data", data,
                     "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")],
                    r"github twin at https://127\.0\.0\.1:(\d+)")
    port = m.group(1)
    token = None
    for line in proc.stdout:
        if line.startswith("token:"):
            token = line.split()[1]
            break
    yield Target(f"127.0.0.1:{port}", token, pki / "ca.pem")
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def tls_server(pki, gh):
    data = tempfile.mkdtemp(prefix="pome-gh-serve-")
    proc, m = start(["serve", "--listen", "127.0.0.1:0", "--data", data, "--public-host", PUBLIC_HOST,
                     "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")],
                    r"listening on (https://127\.0\.0\.1:(\d+))", env={"POME_API_KEY": API_KEY})
    yield m.group(1), int(m.group(2))
    proc.terminate()
    proc.wait(timeout=20)


def test_tls_handshakes_are_bounded_by_the_header_timeout_and_the_connection_cap(pki):
    """A client that opens a connection and never finishes the TLS handshake holds its place
    only for the header timeout, and at the connection cap a real client takes its place."""
    data = tempfile.mkdtemp(prefix="pome-gh-limits-")
    proc, m = start(["serve", "--listen", "127.0.0.1:0", "--data", data, "--header-timeout", "1s", "--max-connections", "2",
                     "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key")],
                    r"listening on (https://127\.0\.0\.1:(\d+))", env={"POME_API_KEY": API_KEY})
    try:
        url, port = m.group(1), int(m.group(2))
        stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        # Both places are held by handshakes that never start; a real client still gets in.
        status, _ = api(url, pki / "ca.pem", "GET", "/v1/usage")
        assert status == 200
        # And a stalled handshake is closed once the header timeout has passed.
        survivor = stalled[1]
        survivor.settimeout(5)
        started = __import__("time").monotonic()
        assert survivor.recv(1) == b""
        assert __import__("time").monotonic() - started < 4
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def api(url, ca, method, path, body=None):
    ctx = ssl.create_default_context(cafile=str(ca))
    req = urllib.request.Request(f"{url}{path}", data=None if body is None else json.dumps(body).encode(), method=method,
                                 headers={"X-API-KEY": API_KEY, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx) as resp:
        return resp.status, json.load(resp)


@pytest.fixture(scope="module")
def sandbox(tls_server, pki):
    url, port = tls_server
    status, body = api(url, pki / "ca.pem", "POST", "/v1/sandboxes", {"twins": ["github"]})
    assert status == 201, body
    proxy = Proxy(port)
    yield Target(f"{body['id']}.github.{PUBLIC_HOST}:{port}", body["agent_token"], pki / "ca.pem", proxy), body
    proxy.close()


@pytest.fixture(scope="module", params=["twin_start", "sandbox"])
def target(request):
    if request.param == "sandbox":
        return request.getfixturevalue("sandbox")[0]
    return request.getfixturevalue("twin_start")


def test_the_create_response_names_the_twin_by_host_name(sandbox, tls_server):
    url, port = tls_server
    _, body = sandbox
    github = body["per_twin"]["github"]
    assert github["host_url"] == f"https://{body['id']}.github.{PUBLIC_HOST}:{port}"
    # The path URLs are https too: the server knows the client came over TLS.
    assert github["base_url"] == f"{url}/s/{body['id']}/github"


def test_the_twin_by_host_name_is_the_twin_by_path(sandbox, tls_server, pki):
    """The same sandbox answers at its host name's root and under /s/<id>/github."""
    target, body = sandbox
    by_host = target.rest("/repos/acme/api")
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    req = urllib.request.Request(f"{body['per_twin']['github']['base_url']}/repos/acme/api", headers={"Authorization": f"Bearer {target.token}"})
    with urllib.request.urlopen(req, context=ctx) as resp:
        by_path = json.load(resp)
    assert by_host["node_id"] == by_path["node_id"]
    # URLs the twin hands out keep gh on the host it was given.
    assert by_host["url"].startswith(f"https://{target.host}/")


def test_gh_api(target):
    """`gh api` reaches REST under /api/v3 and GraphQL at /api/graphql."""
    user = json.loads(target.gh("api", "user"))
    assert user["login"] == "pome-agent"
    repo = json.loads(target.gh("api", "repos/acme/api"))
    assert repo["full_name"] == "acme/api"
    viewer = json.loads(target.gh("api", "graphql", "-f", "query={ viewer { login } }"))
    assert viewer == {"data": {"viewer": {"login": "pome-agent"}}}


def test_gh_issue_list(target):
    out = target.gh("issue", "list", "-R", "acme/api")
    rest = [i for i in target.rest("repos/acme/api/issues?state=open&per_page=100") if "pull_request" not in i]
    rows = [line.split("\t") for line in out.splitlines()]
    assert [int(r[0]) for r in rows] == [i["number"] for i in rest][:30]
    assert [r[2] for r in rows] == [i["title"] for i in rest][:30]


def test_gh_repo_view(target):
    out = target.gh("repo", "view", "acme/api")
    assert "name:\tacme/api" in out
    assert "description:\tACME API service" in out
    # The README, as the repository's default branch holds it.
    assert "The ACME API service." in out


def test_gh_issue_view(target):
    out = target.gh("issue", "view", "1", "-R", "acme/api")
    assert "title:\tLogin returns 500 on wrong password" in out
    assert "author:\talice" in out
    assert "labels:\tbug" in out
    assert "Expected 401, got 500." in out


def test_gh_issue_create_edit_comment_close_reopen(target):
    url = target.gh("issue", "create", "-R", "acme/api", "-t", "Flaky login test", "-b", "It fails one run in ten.").strip()
    m = re.fullmatch(r"https://" + re.escape(target.host) + r"/acme/api/issues/(\d+)", url)
    assert m, url
    n = m.group(1)
    issue = target.rest(f"repos/acme/api/issues/{n}")
    assert (issue["title"], issue["body"], issue["user"]["login"], issue["state"]) == ("Flaky login test", "It fails one run in ten.", "pome-agent", "open")

    target.gh("issue", "edit", n, "-R", "acme/api", "--title", "Flaky login test on CI", "--add-label", "bug")
    issue = target.rest(f"repos/acme/api/issues/{n}")
    assert issue["title"] == "Flaky login test on CI"
    assert [l["name"] for l in issue["labels"]] == ["bug"]

    out = target.gh("issue", "comment", n, "-R", "acme/api", "-b", "Seen again today.")
    assert re.search(rf"/acme/api/issues/{n}#issuecomment-\d+", out), out
    comments = target.rest(f"repos/acme/api/issues/{n}/comments")
    assert [(c["user"]["login"], c["body"]) for c in comments] == [("pome-agent", "Seen again today.")]

    target.gh("issue", "close", n, "-R", "acme/api")
    assert target.rest(f"repos/acme/api/issues/{n}")["state"] == "closed"
    target.gh("issue", "reopen", n, "-R", "acme/api")
    assert target.rest(f"repos/acme/api/issues/{n}")["state"] == "open"
    listed = target.gh("issue", "list", "-R", "acme/api")
    assert f"{n}\tOPEN\tFlaky login test on CI\tbug" in listed


def test_gh_label_list_and_create(target):
    listed = target.gh("label", "list", "-R", "acme/api")
    assert "bug\tSomething isn't working\t#d73a4a" in listed
    target.gh("label", "create", "triage", "-R", "acme/api", "-c", "ff0000", "-d", "Needs a first look")
    label = target.rest("repos/acme/api/labels/triage")
    assert (label["name"], label["color"], label["description"]) == ("triage", "ff0000", "Needs a first look")
    assert "triage\tNeeds a first look\t#ff0000" in target.gh("label", "list", "-R", "acme/api")


def test_gh_release_create_and_list(target):
    url = target.gh("release", "create", "v9.0", "-R", "acme/api", "-t", "Nine", "-n", "What changed.").strip()
    assert url.endswith("/acme/api/releases/tag/v9.0"), url
    release = target.rest("repos/acme/api/releases/tags/v9.0")
    assert (release["name"], release["body"], release["draft"], release["author"]["login"]) == ("Nine", "What changed.", False, "pome-agent")
    rows = [line.split("\t") for line in target.gh("release", "list", "-R", "acme/api").splitlines()]
    assert ["Nine", "Latest", "v9.0"] == rows[0][:3]


def test_gh_search_issues(target):
    out = target.gh("search", "issues", "wrong password", "--repo", "acme/api")
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(r[0], r[1], r[3]) for r in rows] == [("acme/api", "1", "Login returns 500 on wrong password")]


def test_gh_pr_list_view_diff_checks(target):
    rows = [line.split("\t") for line in target.gh("pr", "list", "-R", "acme/api").splitlines()]
    assert ["3", "Add a health check", "add-health-check"] in [r[:3] for r in rows]
    view = target.gh("pr", "view", "3", "-R", "acme/api")
    assert "title:\tAdd a health check" in view
    assert "author:\tbob" in view
    assert "Adds `health()` for the load balancer." in view
    diff = target.gh("pr", "diff", "3", "-R", "acme/api")
    assert "+def health():" in diff
    checks = target.gh("pr", "checks", "3", "-R", "acme/api")
    assert re.search(r"^ci/test\tpass\t", checks, re.M), checks


def test_gh_pr_create(target):
    main = target.rest("repos/acme/api/git/ref/heads/main")["object"]["sha"]
    target.gh("api", "repos/acme/api/git/refs", "-f", "ref=refs/heads/docs-limits", "-f", f"sha={main}")
    target.gh("api", "-X", "PUT", "repos/acme/api/contents/LIMITS.md", "-f", "message=Document the limits",
              "-f", "content=TGltaXRzOiA1MDAwIGFuIGhvdXIuCg==", "-f", "branch=docs-limits")
    url = target.gh("pr", "create", "-R", "acme/api", "-H", "docs-limits", "-B", "main", "-t", "Document the limits", "-b", "Closes #2.").strip()
    m = re.search(r"/acme/api/pull/(\d+)$", url)
    assert m, url
    pull = target.rest(f"repos/acme/api/pulls/{m.group(1)}")
    assert (pull["title"], pull["body"], pull["head"]["ref"], pull["base"]["ref"], pull["user"]["login"]) == ("Document the limits", "Closes #2.", "docs-limits", "main", "pome-agent")


def test_gh_pr_review_and_merge(target):
    target.gh("pr", "review", "3", "-R", "acme/api", "--approve", "-b", "Looks right.")
    reviews = target.rest("repos/acme/api/pulls/3/reviews")
    assert [(r["user"]["login"], r["state"], r["body"]) for r in reviews] == [("pome-agent", "APPROVED", "Looks right.")]
    target.gh("pr", "merge", "3", "-R", "acme/api", "--merge")
    pull = target.rest("repos/acme/api/pulls/3")
    assert pull["merged"] is True
    assert pull["merged_by"]["login"] == "pome-agent"
    main = target.rest("repos/acme/api/contents/src/app.py?ref=main")
    assert "def health():" in __import__("base64").b64decode(main["content"]).decode()
