"""The control plane's routes, each written once: the request to send and how to read its
answer. The sync and async clients both execute these, so the two cannot drift apart.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from . import models
from .errors import ConfigurationError

DEFAULT_API_URL = "http://127.0.0.1:8080"
#: How long one control-plane call may take. Finalize gets longer: `[model]` criteria are
#: judged by a model, which may take minutes.
DEFAULT_TIMEOUT = 60.0
FINALIZE_TIMEOUT = 600.0
USER_AGENT = "pome-python/0.1.0"


def resolve(api_url: str | None, api_key: str | None) -> tuple[str, str]:
    """The server and key, as the CLI finds them: arguments first, then `POME_API_URL` and
    `POME_API_KEY`, and the CLI's default URL."""
    url = api_url or os.environ.get("POME_API_URL") or DEFAULT_API_URL
    key = api_key or os.environ.get("POME_API_KEY") or ""
    if not key:
        raise ConfigurationError(
            "no API key: set POME_API_KEY (printed by `pome serve` on first start) or pass api_key=")
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"the API URL must start with http:// or https://, not {url!r} (POME_API_URL or api_url=)")
    return url.rstrip("/"), key


def http_options(api_url: str, api_key: str, timeout: float) -> dict[str, Any]:
    """What both clients give their `httpx` client."""
    return {
        "base_url": api_url + "/",
        "headers": {"X-API-KEY": api_key, "User-Agent": USER_AGENT, "Accept": "application/json"},
        "timeout": timeout,
    }


T = TypeVar("T")


@dataclass(frozen=True)
class Request(Generic[T]):
    """One call: method, path under the API URL, query, JSON body, and the reader of its
    answer (which gets the `httpx.Response` once it is known to be a success)."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    timeout: float | None = None
    #: Headers besides the client's own.
    headers: dict[str, str] = field(default_factory=dict)


def _json(make: Callable[[Any], T]) -> Callable[[httpx.Response], T]:
    """The answer as one model (`make` is its `from_json`)."""
    return lambda r: make(r.json())


def _list(make: Callable[[Any], T]) -> Callable[[httpx.Response], list[T]]:
    """A `{"object": "list", "data": [...]}` answer as a list of models."""
    return lambda r: [make(d) for d in r.json()["data"]]


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _seg(s: str) -> str:
    """An id as one path segment (an id never holds `/` or `?`, but a caller's typo might)."""
    return urllib.parse.quote(s, safe="")


# -- sandboxes ---------------------------------------------------------------------------

def create_sandbox(
    twins: str | Sequence[str] | None = None,
    *,
    seed: Any = None,
    task_id: str | None = None,
    task_source: str | None = None,
    idempotency_key: str | None = None,
    group_id: str | None = None,
    agent_id: str | None = None,
    agent_version: str | None = None,
) -> Request[models.Sandbox]:
    body = _drop_none({
        "twins": [twins] if isinstance(twins, str) else (list(twins) if twins is not None else None),
        "seed": seed,
        "task_id": task_id,
        # The wire carries the markdown in base64.
        "task_source": base64.b64encode(task_source.encode()).decode() if task_source is not None else None,
        "idempotency_key": idempotency_key,
        "group_id": group_id,
        "agent_id": agent_id,
        "agent_version": agent_version,
    })
    return Request("POST", "v1/sandboxes", _json(models.Sandbox.from_json), body=body)


def list_sandboxes() -> Request[list[models.Sandbox]]:
    return Request("GET", "v1/sandboxes", _list(models.Sandbox.from_json))


def get_sandbox(id: str) -> Request[models.Sandbox]:
    return Request("GET", f"v1/sandboxes/{_seg(id)}", _json(models.Sandbox.from_json))


def heartbeat(id: str) -> Request[models.Heartbeat]:
    return Request("POST", f"v1/sandboxes/{_seg(id)}/heartbeat", _json(models.Heartbeat.from_json))


def finalize(id: str) -> Request[models.Finalized]:
    return Request("POST", f"v1/sandboxes/{_seg(id)}/finalize", _json(models.Finalized.from_json), timeout=FINALIZE_TIMEOUT)


def stop_sandbox(id: str, confirm_discard: str | None = None) -> Request[models.Discarded]:
    return Request("DELETE", f"v1/sandboxes/{_seg(id)}", _json(models.Discarded.from_json),
                   params=_drop_none({"confirm_discard": confirm_discard}))


# -- branch and rewind (forks, the world after any row) -------------------------------------

def _fork_body(at: dict[str, int] | None, agent_id: str | None, agent_version: str | None,
               group_id: str | None, task_id: str | None) -> dict[str, Any]:
    return _drop_none({"at": dict(at) if at is not None else None, "agent_id": agent_id,
                       "agent_version": agent_version, "group_id": group_id, "task_id": task_id})


def fork_sandbox(id: str, *, at: dict[str, int] | None = None, agent_id: str | None = None,
                 agent_version: str | None = None, group_id: str | None = None,
                 task_id: str | None = None) -> Request[models.Sandbox]:
    return Request("POST", f"v1/sandboxes/{_seg(id)}/fork", _json(models.Sandbox.from_json),
                   body=_fork_body(at, agent_id, agent_version, group_id, task_id))


def fork_run(id: str, *, at: dict[str, int] | None = None, agent_id: str | None = None,
             agent_version: str | None = None, group_id: str | None = None,
             task_id: str | None = None) -> Request[models.Sandbox]:
    return Request("POST", f"v1/runs/{_seg(id)}/fork", _json(models.Sandbox.from_json),
                   body=_fork_body(at, agent_id, agent_version, group_id, task_id))


def _state_json(r: httpx.Response) -> dict[str, Any]:
    state: dict[str, Any] = r.json()
    return state


def state(kind: str, id: str, twin: str | None = None, *, at: int | None = None) -> Request[dict[str, Any]]:
    """`kind` is `sandboxes` or `runs`."""
    return Request("GET", f"v1/{kind}/{_seg(id)}/state", _state_json, params=_drop_none({"twin": twin, "at": at}))


def seed(kind: str, id: str, twin: str | None = None, *, at: int | None = None) -> Request[dict[str, Any]]:
    """The world after `at` rows as a seed document that boots it; `kind` as for `state`."""
    return Request("GET", f"v1/{kind}/{_seg(id)}/seed", _state_json, params=_drop_none({"twin": twin, "at": at}))


def diff(kind: str, id: str, twin: str | None = None, *, from_: int | None = None,
         to: int | None = None) -> Request[models.Diff]:
    return Request("GET", f"v1/{kind}/{_seg(id)}/diff", _json(models.Diff.from_json),
                   params=_drop_none({"twin": twin, "from": from_, "to": to}))


# -- usage, keys -------------------------------------------------------------------------

def usage() -> Request[models.Usage]:
    return Request("GET", "v1/usage", _json(models.Usage.from_json))


def create_key() -> Request[models.NewApiKey]:
    return Request("POST", "v1/keys", _json(models.NewApiKey.from_json))


def list_keys() -> Request[list[models.ApiKey]]:
    return Request("GET", "v1/keys", _list(models.ApiKey.from_json))


def revoke_key(id: str) -> Request[None]:
    return Request("DELETE", f"v1/keys/{_seg(id)}", lambda r: None)


# -- runs ----------------------------------------------------------------------------------

def list_runs(
    *,
    group_id: str | None = None,
    task: str | None = None,
    verdict: str | None = None,
    agent_version: str | None = None,
    limit: int | None = None,
    starting_after: str | None = None,
) -> Request[models.RunPage]:
    params = _drop_none({"group_id": group_id, "task": task, "verdict": verdict, "agent_version": agent_version,
                         "limit": limit, "starting_after": starting_after})
    return Request("GET", "v1/runs", _json(models.RunPage.from_json), params=params)


def get_run(id: str) -> Request[models.Run]:
    return Request("GET", f"v1/runs/{_seg(id)}", _json(models.Run.from_json))


def run_report(id: str) -> Request[str]:
    return Request("GET", f"v1/runs/{_seg(id)}/report", lambda r: r.text)


# -- seeds, twins ------------------------------------------------------------------------

def put_seed(name: str, twin: str, seed: dict[str, Any]) -> Request[models.Seed]:
    return Request("POST", "v1/seeds", _json(models.Seed.from_json), body={"name": name, "twin": twin, "seed": seed})


def list_seeds() -> Request[list[models.Seed]]:
    return Request("GET", "v1/seeds", _list(models.Seed.from_json))


def list_twins() -> Request[list[models.Twin]]:
    return Request("GET", "v1/twins", _list(models.Twin.from_json))


# -- tasks ---------------------------------------------------------------------------------

def create_task(source: str, *, id: str | None = None, seed: Any = None) -> Request[models.Task]:
    return Request("POST", "v1/tasks", _json(models.Task.from_json), body=_drop_none({"id": id, "source": source, "seed": seed}))


def list_tasks() -> Request[list[models.Task]]:
    return Request("GET", "v1/tasks", _list(models.Task.from_json))


def get_task(id: str) -> Request[models.Task]:
    return Request("GET", f"v1/tasks/{_seg(id)}", _json(models.Task.from_json))


def validate_task(source: str, *, file: str | None = None, seed: Any = None) -> Request[models.TaskValidation]:
    return Request("POST", "v1/tasks/validate", _json(models.TaskValidation.from_json),
                   body=_drop_none({"source": source, "file": file, "seed": seed}))


@dataclass(frozen=True)
class TaskFile:
    """A task file read from disk as `pome run` reads it: its id is the file's stem, and a
    `<stem>.seed.json` beside it is its seed."""

    id: str
    source: str
    seed: Any

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> TaskFile:
        p = pathlib.Path(path)
        try:
            source = p.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigurationError(f"cannot read task file {p}: {e}") from e
        sidecar = p.with_name(f"{p.stem}.seed.json")
        seed = None
        if sidecar.exists():
            try:
                seed = json.loads(sidecar.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise ConfigurationError(f"the seed sidecar {sidecar} is not readable JSON: {e}") from e
        return cls(id=p.stem, source=source, seed=seed)

    def store(self) -> Request[models.Task]:
        return create_task(self.source, id=self.id, seed=self.seed)


# -- twin routes (the agent's side, with the agent token) --------------------------------

def twin_get(url: str, token: str, params: dict[str, Any] | None = None) -> Request[Any]:
    """A GET on a twin's reserved route (`_pome/state`, `_pome/events`) with the sandbox's
    bearer token; `url` is absolute."""
    return Request("GET", url, lambda r: r.json(), params=_drop_none(params or {}),
                   headers={"Authorization": f"Bearer {token}"})
