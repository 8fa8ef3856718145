"""The dashboard in a real browser (headless Chromium) against the real server: sign in,
start a sandbox, watch a scripted agent's calls arrive on the live tape, finalize, follow a
failed criterion's evidence to its tape row, stop an ungraded sandbox through the discard
confirmation, and render hostile seed text inert."""

import json
import re
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from conftest import API_KEY, wait_until

CSP_MUST = ["default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"]


def test_every_page_asset_carries_a_strict_csp(server):
    for path in ["/ui/", "/ui/app.js", "/ui/app.css", "/ui/icon.svg"]:
        with urllib.request.urlopen(server.url + path) as resp:
            csp = resp.headers["content-security-policy"]
            assert csp, path
            for part in CSP_MUST:
                assert part in csp, (path, csp)
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
            assert resp.headers["x-content-type-options"] == "nosniff"
    html = urllib.request.urlopen(server.url + "/ui/").read().decode()
    # No inline script or style: the CSP would block them, and there are none to block.
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)
    assert "style=" not in html and "<style" not in html
    # `/` leads to the page.
    assert urllib.request.urlopen(server.url + "/").geturl().endswith("/ui/")


def test_live_tape_needs_the_team_key(server):
    status, sb = server.api("POST", "/v1/sandboxes", {"twins": ["slack"]})
    assert status == 201
    for headers in [{}, {"X-API-KEY": "pme_not_a_key_of_this_team"}]:
        req = urllib.request.Request(f"{server.url}/ui/stream/{sb['id']}", headers=headers)
        try:
            urllib.request.urlopen(req)
            raise AssertionError("the stream answered without a valid key")
        except urllib.error.HTTPError as e:
            assert e.code == 401, e.code
            assert json.load(e)["error"]["type"] == "invalid_auth"
    server.api("DELETE", f"/v1/sandboxes/{sb['id']}?confirm_discard={discard_token(server, sb['id'])}")


def discard_token(server, sid):
    status, body = server.api("DELETE", f"/v1/sandboxes/{sid}")
    assert status == 409, body
    return body["error"]["details"]["discard_token"]


def test_sign_in_refuses_a_wrong_key_and_keeps_the_key_in_session_storage(browser):
    browser.sign_in("pme_wrong_wrong_wrong_wrong")
    browser.text_in("#signin-error", "invalid API key")
    assert browser.js("return sessionStorage.getItem('pome.key')") is None
    browser.sign_in()
    browser.visible("article.twin[data-twin=github]")
    assert browser.js("return sessionStorage.getItem('pome.key')") == API_KEY
    assert browser.js("return localStorage.length") == 0
    assert "pme_" not in browser.hash() and "pme_" not in browser.d.current_url
    # Twins show version, surface and checks.
    card = browser.el("article.twin[data-twin=github]").text
    assert "served" in card and "unsupported" in card and "checks" in card


def test_start_watch_finalize_and_follow_evidence_to_the_tape_row(browser, server):
    server.put_task("triage", "triage")
    browser.sign_in()
    browser.visible("#start-form")
    # Start sandbox: the task sets the twins and the seed.
    browser.el("#start-task option[value=triage]")
    browser.js("const s = document.getElementById('start-task'); s.value = 'triage';")
    browser.click("#start-submit")
    browser.wait(lambda d: browser.hash().startswith("#/sandbox/"))
    sid = browser.hash().split("/")[-1]
    env = browser.el("pre.secret").text
    token = re.search(r"POME_AUTH_TOKEN=(\S+)", env).group(1)
    browser.text_in("#live-text", "live")
    # Heartbeat moves the idle clock and leaves the live tape connected.
    browser.click("#sandbox-page .act-heartbeat")
    browser.text_in("#toast", "Idle timer reset")
    assert browser.el("#live-text").text == "live"
    # Both clocks count down.
    clocks = [c.text for c in browser.all(".clock")]
    assert len(clocks) == 2 and all(re.match(r"^\d+:\d\d$", c) for c in clocks), clocks

    # The scripted agent works; each call shows up as a row while the page is open.
    assert server.twin(sid, token, "github", "GET", "/repos/acme/api/issues/1")[0] == 200
    browser.el("section.tape[data-twin=github] .trow[data-seq='1']", timeout=10)
    assert server.twin(sid, token, "github", "POST", "/repos/acme/api/issues/1/labels", {"labels": ["feature"]})[0] == 200
    browser.el("section.tape[data-twin=github] .trow[data-seq='2']", timeout=10)
    assert server.twin(sid, token, "github", "GET", "/repos/acme/api/traffic/popular/paths")[0] == 501
    row = browser.el("section.tape[data-twin=github] .trow[data-seq='3']", timeout=10)
    assert "501" in row.text and row.get_attribute("class").find("unsupported") >= 0
    browser.text_in("section.tape[data-twin=github] header", "3 rows")
    # A row opens with its state changes.
    browser.click("section.tape[data-twin=github] .trow[data-seq='2']")
    browser.text_in("section.tape[data-twin=github] .detail", "issues.add_labels")
    browser.text_in("section.tape[data-twin=github] .detail", "State changes (1)")

    # Finalize from the page: it lands on the run.
    browser.click("#sandbox-page .act-finalize")
    browser.wait(lambda d: browser.hash().startswith("#/run/"))
    browser.text_in("#run-verdict", "fail")
    assert browser.el("#run-score").text == "score 0"
    crit = browser.all("tr.crit")
    assert len(crit) == 3
    assert all("failed" in c.text for c in crit), [c.text for c in crit]
    # The unsupported call decided criterion 3: its evidence is tape row 3.
    link = browser.el("tr.crit[data-index='3'] a.evidence[data-kind=tape]")
    assert link.text == "github tape row 3"
    link.click()
    browser.wait(lambda d: "/tape/github/3" in browser.hash())
    selected = browser.el("section.tape[data-twin=github] .trow.selected")
    assert selected.get_attribute("data-seq") == "3"
    browser.text_in("#tape-detail-github", "row 3")
    browser.text_in("section.tape[data-twin=github] .detail", "is not implemented by the pome GitHub twin")
    # A state evidence link jumps to the diff at that path.
    browser.click("tr.crit[data-index='1'] a.evidence[data-kind=state]")
    browser.wait(lambda d: "/state/github/" in browser.hash())
    hl = browser.el("#diff-github tr.highlight")
    assert hl.get_attribute("data-path").startswith("repositories[0].issues[0].labels")
    browser.text_in("#diff-github .state-at", "feature")
    # The report.
    browser.click("#show-report")
    browser.text_in("#report", "## Criteria")


def test_stop_an_ungraded_sandbox_through_the_confirmation(browser, server):
    browser.sign_in()
    browser.visible("#start-form")
    browser.click("label[for=pick-slack]")
    browser.click("#start-submit")
    browser.wait(lambda d: browser.hash().startswith("#/sandbox/"))
    sid = browser.hash().split("/")[-1]
    browser.go("#/sandboxes")
    row = f"tr[data-sandbox={sid}]"
    browser.el(row)
    # Cancel keeps it.
    browser.click(f"{row} .act-stop")
    browser.text_in(".dialog", "discards its run")
    browser.click("#dialog-cancel")
    assert server.api("GET", f"/v1/sandboxes/{sid}")[1]["state"] == "open"
    # Confirm discards it.
    browser.click(f"{row} .act-stop")
    browser.click("#dialog-confirm")
    wait_until(lambda: not browser.all(row), what="the row to leave the list")
    status, body = server.api("GET", f"/v1/sandboxes/{sid}")
    assert status != 200 or body.get("state") != "open", body


PAYLOAD = ('<script>window.__pwned = "script"</script>'
           '<img src=x onerror="window.__pwned = \'img\'">'
           '[click me](javascript:window.__pwned=1) https://evil.example/login')


def hostile_seed():
    seed = json.load(open(__file__.replace("test_dashboard.py", "tasks/triage.seed.json")))
    issue = seed["repositories"][0]["issues"][0]
    issue["title"] = '<img src=x onerror="window.__pwned=\'title\'">Orders broken'
    issue["body"] = PAYLOAD
    return seed


def test_hostile_seed_text_renders_inert(browser, server):
    status, sb = server.api("POST", "/v1/sandboxes", {"twins": ["github"], "seed": hostile_seed()})
    assert status == 201, sb
    browser.sign_in()
    browser.visible("#start-form")
    browser.go("#/sandbox/" + sb["id"])
    browser.text_in("#live-text", "live")
    assert server.twin(sb["id"], sb["agent_token"], "github", "GET", "/repos/acme/api/issues/1")[0] == 200
    assert server.twin(sb["id"], sb["agent_token"], "github", "POST", "/repos/acme/api/issues/1/comments", {"body": PAYLOAD})[0] == 201
    browser.click("section.tape[data-twin=github] .trow[data-seq='1']")
    body = browser.visible("section.tape[data-twin=github] .resp-body").text
    assert "<script>window.__pwned" in body and "<img src=x onerror" in body
    browser.click("section.tape[data-twin=github] .trow[data-seq='2']")
    assert "<script>" in browser.visible("section.tape[data-twin=github] .req-body").text
    # Finalize and look at the run: the state holds the payload too.
    _, fin = server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")
    browser.go("#/run/" + fin["run_id"])
    browser.el("#run-page")
    browser.click("#diff-github details summary")
    browser.text_in("#diff-github details pre", "<script>window.__pwned")
    # Nothing ran, no element was made from the payload, and links in it are text.
    assert browser.js("return window.__pwned") is None
    assert browser.js("return document.querySelectorAll('img').length") == 1  # the header icon
    assert browser.js("return document.querySelectorAll('script').length") == 1  # app.js
    assert browser.js("return [...document.querySelectorAll('a')].filter(a => /evil|javascript/.test(a.href)).length") == 0


def test_runs_filter_page_and_trial_groups(browser, server):
    server.put_task("triage", "triage")
    # Three trials in one group (one passes), then enough ungraded runs to need a second page.
    for i in range(3):
        _, sb = server.api("POST", "/v1/sandboxes", {"task_id": "triage", "group_id": "grp_browser"})
        if i == 0:
            server.twin(sb["id"], sb["agent_token"], "github", "POST", "/repos/acme/api/issues/1/labels", {"labels": ["bug"]})
            server.twin(sb["id"], sb["agent_token"], "github", "POST", "/repos/acme/api/issues/1/assignees", {"assignees": ["alice"]})
        assert server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")[0] == 200
    for _ in range(55):
        _, sb = server.api("POST", "/v1/sandboxes", {"twins": ["slack"]})
        assert server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")[0] == 200
    browser.sign_in()
    browser.visible("#start-form")
    browser.go("#/runs")
    browser.text_in("#runs-timing", "50 runs on this page")
    browser.click("#runs-next")
    browser.wait(lambda d: "starting_after=" in browser.hash())
    wait_until(lambda: browser.all("tr[data-run]") and len(browser.all("tr[data-run]")) >= 8, what="the second page")
    # Filter by verdict.
    browser.go("#/runs?verdict=pass")
    wait_until(lambda: browser.all("tr[data-run]") and all("pass" in r.text for r in browser.all("tr[data-run]")), what="pass runs")
    # A trial group: pass rate and pass^k.
    browser.go("#/runs?group_id=grp_browser")
    browser.text_in("#group-rate", "33%")
    assert "1 of 3 trials passed" in browser.el("#group-summary").text
    # A task's groups over time.
    browser.go("#/runs?task=triage")
    browser.el("svg.plot polyline")


def test_tasks_show_bindings_unmatched_stand_out_and_validate(browser, server):
    server.put_task("unmatched", "unmatched", with_seed=False)
    browser.sign_in()
    browser.visible("#start-form")
    browser.go("#/task/unmatched")
    bad = browser.el("tr.unmatched")
    assert "moon" in bad.text and "unmatched" in bad.text
    assert "github.issue_has_label" in browser.el("#view").text
    browser.go("#/tasks")
    area = browser.visible("#validate-source")
    area.send_keys(open(__file__.replace("test_dashboard.py", "tasks/unmatched.md")).read())
    browser.click("#validate-submit")
    browser.text_in("#validate-result", "not valid")
    assert browser.el("#validate-result tr.unmatched")


def test_usage_reads_the_same_counter(browser, server):
    browser.sign_in()
    browser.visible("#start-form")
    browser.go("#/usage")
    used = browser.el("#usage-used")
    assert int(used.text) == server.api("GET", "/v1/usage")[1]["sessions_used"]


def test_phone_width_and_keyboard(phone, server):
    phone.sign_in()
    phone.visible("#start-form")
    for page in ["#/twins", "#/sandboxes", "#/runs", "#/tasks", "#/usage"]:
        phone.go(page)
        phone.el("#view h1")
        wide = phone.js("return document.documentElement.scrollWidth - window.innerWidth")
        assert wide <= 1, (page, wide)
    # Keyboard: the nav links are reachable by Tab and follow with Enter.
    phone.go("#/twins")
    phone.el("#start-form")
    # Start where a keyboard user starts: the page's first stop, the skip link.
    phone.js("document.querySelector('.skip').focus()")
    assert phone.d.switch_to.active_element.get_attribute("textContent") == "Skip to content"
    seen = []
    for _ in range(10):
        ActionChains(phone.d).send_keys(Keys.TAB).perform()
        active = phone.d.switch_to.active_element
        seen.append(active.get_attribute("textContent").strip())
        if seen[-1] == "Usage":
            ActionChains(phone.d).send_keys(Keys.ENTER).perform()
            break
    assert seen[-1] == "Usage", seen
    phone.wait(lambda d: phone.hash() == "#/usage")


def test_a_100000_row_tape_keeps_only_the_rows_in_view_in_the_page(browser, server):
    browser.sign_in()
    browser.visible("#start-form")
    took = browser.js("""
        const rows = [];
        for (let i = 1; i <= 100000; i++) rows.push({seq: i, method: 'GET', path: '/repos/acme/api/issues/' + i, status: 200,
            latency_ms: 0.2, fidelity: 'semantic', state_delta: [], request_headers: [], response_body: '{}'});
        const t0 = performance.now();
        const v = new TapeView('big', rows);
        document.getElementById('view').replaceChildren(v.el);
        v.jump(99999);
        return performance.now() - t0;
    """)
    assert took < 1000, took
    browser.el("section.tape[data-twin=big] .trow.selected[data-seq='99999']")
    in_dom = len(browser.all("section.tape[data-twin=big] .trow"))
    assert 0 < in_dom < 100, in_dom
    browser.text_in("section.tape[data-twin=big] header", "100000 rows")
