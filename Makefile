# pome: build the twins (WebAssembly components), the host, and run or test it all.
#
#   make run    build everything, then serve on 127.0.0.1:8080 with embedded defaults
#   make test   every test: Rust unit and end-to-end tests, then the client-library suites
#   make bench  benchmarks on this machine; prints figures

CARGO        ?= cargo
WASM_TARGET  := wasm32-wasip2
# Twins are discovered, never listed: every crate under twins/ (and the test twins under
# tests/*-twin) whose library is a `cdylib` is a twin component.
TWIN_CRATES  := $(shell for f in twins/*/Cargo.toml tests/*-twin/Cargo.toml; do \
                  grep -q cdylib $$f && sed -n 's/^name *= *"\(.*\)"/\1/p' $$f | head -1; done)
VENV         := .venv
PYTHON       ?= python3

.PHONY: all run test bench twins host wasm-target venv node-deps test-rust test-python test-node clean-data

all: host

wasm-target:
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

# Twins are built in release: the host embeds them and compiles them once.
twins: wasm-target
	$(CARGO) build --release --target $(WASM_TARGET) $(addprefix -p ,$(TWIN_CRATES))

# One build serves every command: the tests, `make run` and `make bench` all use the release
# profile, so a newcomer compiles wasmtime once. `--workspace` makes cargo unify features over
# every crate, as `cargo test --workspace` does: built alone, `pome` gets a different feature
# set (the twins' hmac turns on digest's `mac`, under cranelift), and the tests would then
# compile wasmtime a second time.
host: twins
	$(CARGO) build --release --workspace --bin pome

run: host
	./target/release/pome serve

$(VENV)/.installed: tests/python/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt
	touch $@

# The Python client (clients/python), installed into the test venv as a user installs it;
# again whenever its sources change.
PY_CLIENT_SRC := clients/python/pyproject.toml clients/python/README.md $(wildcard clients/python/src/pome/*.py) clients/python/src/pome/py.typed
$(VENV)/.client-installed: $(VENV)/.installed $(PY_CLIENT_SRC)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check ./clients/python
	touch $@

venv: $(VENV)/.installed $(VENV)/.client-installed

# The official Node clients (stripe, @linear/sdk, @googleapis/gmail), pinned in
# tests/node/package.json and installed beside the tests.
tests/node/node_modules/.installed: tests/node/package.json
	cd tests/node && npm install --no-audit --no-fund --loglevel=error
	touch $@

node-deps: tests/node/node_modules/.installed

# PostgreSQL for the shared-store tests: Debian's package when it is missing (the tests start
# servers of their own, in temporary directories, as the `postgres` user when run as root).
.PHONY: postgres
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql)

# haproxy for tests/hosts.rs (three hosts behind a real load balancer), when missing.
.PHONY: haproxy
haproxy:
	@command -v haproxy >/dev/null || test -x /usr/sbin/haproxy || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy)

test-rust: host postgres haproxy
	$(CARGO) test --workspace --release

# Debian's `gh` for tests/python/test_gh_cli.py (gh pointed at the GitHub twin), when missing.
.PHONY: gh
gh:
	@command -v gh >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gh)

test-python: host venv gh
	$(VENV)/bin/python -m pytest -q tests/python

test-node: host node-deps
	cd tests/node && node --test

# The dashboard in a real browser: Debian's headless Chromium through chromedriver (selenium),
# against the release binary. Installs Chromium when it is missing.
.PHONY: test-browser
$(VENV)/.browser-installed: tests/browser/requirements.txt $(VENV)/.installed
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/browser/requirements.txt
	touch $@

test-browser: host venv $(VENV)/.browser-installed
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver)
	$(VENV)/bin/python -m pytest -q tests/browser

test: test-rust test-python test-node test-browser

bench: host postgres haproxy
	@command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq wrk)
	$(CARGO) run --release -p pome-bench
	# The neighbour of a hostile tenant: its latency alone and under every attack at once.
	# `--workspace` keeps the feature set of the test build, so nothing compiles twice.
	$(CARGO) test --release --workspace --test e2e -- --ignored --nocapture bench_the_neighbour
	# Several hosts: from kill -9 of one to the first 2xx on each sandbox it owned.
	$(CARGO) test --release --workspace --test e2e -- --ignored --nocapture bench_failover

clean-data:
	rm -rf pome-data
