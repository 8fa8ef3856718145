"""The task page's comparison of the task's two latest agent versions: pass rates with their
intervals, the difference and whether it is beyond noise, the criteria that changed most;
the same numbers `pome compare` prints for those versions, and the page's Wilson and Newcombe
arithmetic equal to pome_grade::stats' on shared cases."""

import json
import os
import re
import subprocess

from conftest import API_KEY, HERE, ROOT

ASSIGNED = "Issue #1 in `acme/api` is assigned to `alice`"


def record(server, task, version, passing, trials):
    """`trials` graded runs of `task` under agent `version`: the issue labelled, and assigned
    too when `passing`."""
    for _ in range(trials):
        status, sb = server.api("POST", "/v1/sandboxes", {"task_id": task, "agent_version": version})
        assert status == 201, sb
        for path, body in [("/labels", {"labels": ["bug"]})] + ([("/assignees", {"assignees": ["alice"]})] if passing else []):
            assert server.twin(sb["id"], sb["agent_token"], "github", "POST", "/repos/acme/api/issues/1" + path, body)[0] in (200, 201)
        status, run = server.api("POST", f"/v1/sandboxes/{sb['id']}/finalize")
        assert status == 200 and run["verdict"] == ("pass" if passing else "fail"), run


def pome_compare(server, *args):
    binary = os.environ.get("POME_BIN") or str(ROOT / "target" / "release" / "pome")
    env = dict(os.environ, POME_API_URL=server.url, POME_API_KEY=API_KEY, POME_LOG="warn")
    r = subprocess.run([binary, "compare", *args], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_the_task_page_compares_the_two_latest_agent_versions_as_pome_compare_does(browser, server):
    server.put_task("compare-triage", "triage")
    record(server, "compare-triage", "cmp-v0", True, 2)  # an older version: not one of the two latest
    record(server, "compare-triage", "cmp-v1", True, 3)
    record(server, "compare-triage", "cmp-v2", False, 3)

    browser.sign_in()
    browser.go("#/task/compare-triage")
    browser.text_in("#version-compare h2", "cmp-v1 → cmp-v2")
    cells = {c.get_attribute("data-side"): c for c in browser.all("#version-compare td.rate")}
    diff = browser.el("#compare-difference")

    # What the page says, word for word as `pome compare` prints it for the same versions.
    text = pome_compare(server, "version:cmp-v1", "version:cmp-v2", "--task", "compare-triage")
    row = re.split(r"\s{2,}", next(line for line in text.splitlines() if line.startswith("compare-triage ")))
    assert (cells["a"].text, cells["b"].text) == (row[1], row[2]) == ("3/3 100% [44–100]", "0/3 0% [0–56]")
    assert diff.find_element("css selector", "strong").text == row[3] == "-100 pts [-100, -21]"
    assert row[4] == "beyond noise" and "worse" in diff.text and "beyond noise" in diff.text

    # And number for number, unrounded.
    j = json.loads(pome_compare(server, "--json", "version:cmp-v1", "version:cmp-v2", "--task", "compare-triage"))["tasks"][0]
    for side in "ab":
        for k in ["passed", "trials", "rate", "low", "high"]:
            assert abs(float(cells[side].get_attribute(f"data-{k}")) - j[side][k]) < 1e-12, (side, k)
    for k in ["delta", "low", "high"]:
        assert abs(float(diff.get_attribute(f"data-{k}")) - j["difference"][k]) < 1e-12, k
    assert diff.get_attribute("data-beyond") == "true" and j["difference"]["beyond_noise"] is True

    # The criterion that changed outcome, as the CLI lists it; the label criterion did not.
    changes = [[td.text for td in tr.find_elements("css selector", "td")] for tr in browser.all("#version-compare tr.criterion-change")]
    assert changes == [[ASSIGNED, "3/3", "0/3", "-100 pts"]]
    assert [(c["text"], c["a"]["passed"], c["b"]["passed"]) for c in j["criteria"]] == [(ASSIGNED, 3, 0)]


def test_a_task_with_one_agent_version_says_there_is_nothing_to_compare_yet(browser, server):
    server.put_task("compare-single", "triage")
    record(server, "compare-single", "solo", True, 1)
    browser.sign_in()
    browser.go("#/task/compare-single")
    browser.text_in("#version-compare", "Only agent version solo has graded runs of this task")
    assert not browser.all("#compare-difference")


def test_the_pages_wilson_and_newcombe_equal_pome_grade_stats_on_the_shared_cases(browser, server):
    """tests/browser/stats_cases.json is checked against the Rust (host/cli/src/compare.rs's
    unit test) and here against the page's JavaScript."""
    cases = json.loads((HERE / "stats_cases.json").read_text())["cases"]
    browser.sign_in()
    browser.el("#nav:not([hidden])")
    got = browser.js("""return arguments[0].map((c) => {
        const a = rateOf(c.a_passed, c.a_trials), b = rateOf(c.b_passed, c.b_trials);
        return { a, b, d: difference(a, b) };
    });""", cases)
    assert len(got) == len(cases) >= 8
    for c, g in zip(cases, got):
        pairs = [(g["a"]["low"], "a_low"), (g["a"]["high"], "a_high"), (g["b"]["low"], "b_low"), (g["b"]["high"], "b_high"),
                 (g["d"]["delta"], "delta"), (g["d"]["low"], "low"), (g["d"]["high"], "high")]
        for value, key in pairs:
            assert abs(value - c[key]) < 1e-12, (c, key, value)
        assert g["d"]["beyond_noise"] == c["beyond_noise"], c
