"""The control plane's routes, each written once: the request to send and how to read its
answer. The sync and async clients both execute these, so the two cannot drift apart.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

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


@dataclass(frozen=True)
class Request:
    """One call: method, path under the API URL, query, JSON body, and the reader of its
    answer (which gets the `httpx.Response` once it is known to be a success)."""

    method: str
    path: str
    read: Callable[[httpx.Response], Any]
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    timeout: float | None = None
    #: Headers besides the client's own.
    headers: dict[str, str] = field(default_factory=dict)


def _json(cls: Any) -> Callable[[httpx.Response], Any]:
    return lambda r: cls.from_json(r.json())


def _list(cls: Any) -> Callable[[httpx.Response], Any]:
    return lambda r: [cls.from_json(d) for d in r.json()["data"]]


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
) -> Request:
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
    return Request("POST", "v1/sandboxes", _json(models.Sandbox), body=body)


def list_sandboxes() -> Request:
    return Request("GET", "v1/sandboxes", _list(models.Sandbox))


def get_sandbox(id: str) -> Request:
    return Request("GET", f"v1/sandboxes/{_seg(id)}", _json(models.Sandbox))


def heartbeat(id: str) -> Request:
    return Request("POST", f"v1/sandboxes/{_seg(id)}/heartbeat", _json(models.Heartbeat))


def finalize(id: str) -> Request:
    return Request("POST", f"v1/sandboxes/{_seg(id)}/finalize", _json(models.Finalized), timeout=FINALIZE_TIMEOUT)


def stop_sandbox(id: str, confirm_discard: str | None = None) -> Request:
    return Request("DELETE", f"v1/sandboxes/{_seg(id)}", _json(models.Discarded),
                   params=_drop_none({"confirm_discard": confirm_discard}))


# -- usage, keys -------------------------------------------------------------------------

def usage() -> Request:
    return Request("GET", "v1/usage", _json(models.Usage))


def create_key() -> Request:
    return Request("POST", "v1/keys", _json(models.NewApiKey))


def list_keys() -> Request:
    return Request("GET", "v1/keys", _list(models.ApiKey))


def revoke_key(id: str) -> Request:
    return Request("DELETE", f"v1/keys/{_seg(id)}", lambda r: None)


# -- runs ----------------------------------------------------------------------------------

def list_runs(
    *,
    group_id: str | None = None,
    task: str | None = None,
    verdict: str | None = None,
    limit: int | None = None,
    starting_after: str | None = None,
) -> Request:
    params = _drop_none({"group_id": group_id, "task": task, "verdict": verdict, "limit": limit,
                         "starting_after": starting_after})
    return Request("GET", "v1/runs", _json(models.RunPage), params=params)


def get_run(id: str) -> Request:
    return Request("GET", f"v1/runs/{_seg(id)}", _json(models.Run))


def run_report(id: str) -> Request:
    return Request("GET", f"v1/runs/{_seg(id)}/report", lambda r: r.text)


# -- seeds, twins ------------------------------------------------------------------------

def put_seed(name: str, twin: str, seed: dict) -> Request:
    return Request("POST", "v1/seeds", _json(models.Seed), body={"name": name, "twin": twin, "seed": seed})


def list_seeds() -> Request:
    return Request("GET", "v1/seeds", _list(models.Seed))


def list_twins() -> Request:
    return Request("GET", "v1/twins", _list(models.Twin))


# -- tasks ---------------------------------------------------------------------------------

def create_task(source: str, *, id: str | None = None, seed: Any = None) -> Request:
    return Request("POST", "v1/tasks", _json(models.Task), body=_drop_none({"id": id, "source": source, "seed": seed}))


def list_tasks() -> Request:
    return Request("GET", "v1/tasks", _list(models.Task))


def get_task(id: str) -> Request:
    return Request("GET", f"v1/tasks/{_seg(id)}", _json(models.Task))


def validate_task(source: str, *, file: str | None = None, seed: Any = None) -> Request:
    return Request("POST", "v1/tasks/validate", _json(models.TaskValidation),
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

    def store(self) -> Request:
        return create_task(self.source, id=self.id, seed=self.seed)


# -- twin routes (the agent's side, with the agent token) --------------------------------

def twin_get(url: str, token: str) -> Request:
    """A GET on a twin's reserved route (`_pome/state`, `_pome/events`) with the sandbox's
    bearer token; `url` is absolute."""
    return Request("GET", url, lambda r: r.json(), headers={"Authorization": f"Bearer {token}"})
