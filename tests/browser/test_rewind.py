"""Branch and rewind in the dashboard (#37, item 5), in a real browser against the real
server: the world after a tape row and its diff, a fork taken at a row, and a run page's
position slider showing the world as it stood."""

import json

from conftest import wait_until

SEED = json.load(open(__file__.replace("test_rewind.py", "tasks/triage.seed.json")))
TAPE = "section.tape[data-twin=github]"


def test_world_after_a_row_fork_here_and_the_run_slider(browser, server):
    status, sb = server.api("POST", "/v1/sandboxes", {"twins": ["github"], "seed": SEED})
    assert status == 201, sb
    sid, token = sb["id"], sb["agent_token"]
    for title in ["rewind one", "rewind two", "rewind three"]:
        status, body = server.twin(sid, token, "github", "POST", "/repos/acme/api/issues", {"title": title})
        assert status == 201, body

    browser.sign_in()
    browser.visible("#start-form")
    browser.go("#/sandbox/" + sid)
    browser.click(f"{TAPE} .trow[data-seq='2']")
    browser.click(f"{TAPE} .act-world")
    browser.text_in(f"{TAPE} .world .world-state", "rewind two")
    world = browser.el(f"{TAPE} .world").text
    assert "rewind three" not in browser.el(f"{TAPE} .world .world-state").text
    assert "rewind two" in browser.el(f"{TAPE} .world .world-diff").text, world

    browser.click(f"{TAPE} .act-fork")
    link = browser.el(f"{TAPE} .forked a.fork-link")
    fork_id = link.text
    forks = wait_until(lambda: [s for s in server.api("GET", "/v1/sandboxes")[1]["data"] if s["id"] == fork_id], what="the fork listed")
    assert forks[0]["forked_from"]["at"] == {"github": 2}, forks[0]
    assert forks[0]["forked_from"]["sandbox_id"] == sid

    status, fin = server.api("POST", f"/v1/sandboxes/{sid}/finalize")
    assert status == 200, fin
    browser.go("#/run/" + fin["run_id"])
    slider = browser.el("#slider-github")
    assert slider.get_attribute("max") == "3"
    browser.js("const s = arguments[0]; s.value = '1'; s.dispatchEvent(new Event('input'));", slider)
    shown = lambda: browser.js("const e = document.querySelector('.position[data-twin=github] .slider-world'); return e ? e.textContent : ''")
    try:
        wait_until(lambda: "rewind one" in shown() and "rewind two" not in shown(), what="the world after row 1")
    except AssertionError:
        raise AssertionError(shown()[:2000])
    browser.text_in(".position[data-twin=github] .slider-pos", "after row 1 of 3")
