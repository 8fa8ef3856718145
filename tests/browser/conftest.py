"""Fixtures for the dashboard's browser tests: the real `pome serve` binary on a real socket,
and Debian's headless Chromium driven through chromedriver (selenium). Nothing is mocked:
the page talks to the server's own /v1 API, and a scripted "agent" makes plain HTTP calls to
the twins while the browser watches."""

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

ROOT = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
API_KEY = "pme_browser_tests_0123456789"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class Server:
    def __init__(self, url):
        self.url = url

    def api(self, method, path, body=None, key=API_KEY):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                     headers={"X-API-KEY": key, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def twin(self, sandbox_id, token, twin, method, path, body=None):
        """One call as the agent would make it: the sandbox bearer token, the twin's own path."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}/s/{sandbox_id}/{twin}{path}", data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def put_task(self, task_id, name, with_seed=True):
        source = (HERE / "tasks" / f"{name}.md").read_text()
        body = {"id": task_id, "source": source}
        seed = HERE / "tasks" / f"{name}.seed.json"
        if with_seed and seed.exists():
            body["seed"] = json.loads(seed.read_text())
        status, resp = self.api("POST", "/v1/tasks", body)
        assert status == 201, resp
        return resp


def start_server(data, *extra):
    """`pome serve` on a free port over `data`; returns the process and a Server."""
    binary = ROOT / "target" / "release" / "pome"
    assert binary.exists(), f"{binary} is missing: build it with `cargo build --release -p pome`"
    env = dict(os.environ, POME_API_KEY=API_KEY, POME_LOG="warn")
    proc = subprocess.Popen([str(binary), "serve", "--listen", "127.0.0.1:0", "--data", data, *extra],
                            stdout=subprocess.PIPE, stderr=None, env=env, text=True)
    for line in proc.stdout:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, Server(m.group(1))
    raise AssertionError("pome serve did not start")


@pytest.fixture(scope="session")
def server():
    data = tempfile.mkdtemp(prefix="pome-browser-")
    proc, srv = start_server(data, "--quota", "500", "--max-stores", "600")
    yield srv
    proc.terminate()
    proc.wait(timeout=20)
    shutil.rmtree(data, ignore_errors=True)


def chromium_options(width=1280, height=900):
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install -y chromium chromium-driver (make test-browser does)"
    assert os.path.exists(CHROMEDRIVER), f"{CHROMEDRIVER} is missing: apt-get install -y chromium-driver"
    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--window-size={width},{height}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return opts


class Browser:
    """A fresh Chromium (its own --user-data-dir) with helpers for the dashboard."""

    def __init__(self, server, width=1280, height=900):
        self.server = server
        self.profile = tempfile.mkdtemp(prefix="pome-chromium-")
        opts = chromium_options(width, height)
        opts.add_argument(f"--user-data-dir={self.profile}")
        self.d = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER))
        self.d.set_window_size(width, height)

    def quit(self):
        self.d.quit()
        shutil.rmtree(self.profile, ignore_errors=True)

    def wait(self, cond, timeout=15):
        return WebDriverWait(self.d, timeout, poll_frequency=0.1).until(cond)

    def el(self, css, timeout=15):
        return self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, css)), timeout)

    def visible(self, css, timeout=15):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), timeout)

    def click(self, css, timeout=15):
        el = self.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, css)), timeout)
        self.d.execute_script("arguments[0].scrollIntoView({block:'center'})", el)
        el.click()
        return el

    def all(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def text_in(self, css, text, timeout=15):
        return self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text), timeout)

    def sign_in(self, key=API_KEY):
        self.d.get(self.server.url + "/ui/")
        box = self.visible("#key")
        box.clear()
        box.send_keys(key)
        self.click("#signin-form button[type=submit]")

    def go(self, hash_):
        self.d.execute_script("location.hash = arguments[0]", hash_)

    def hash(self):
        return self.d.execute_script("return location.hash")

    def js(self, script, *args):
        return self.d.execute_script(script, *args)


@pytest.fixture
def browser(server):
    b = Browser(server)
    yield b
    b.quit()


@pytest.fixture
def phone(server):
    b = Browser(server, width=390, height=844)
    yield b
    b.quit()


def wait_until(fn, timeout=15, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
