"""The synchronous client, and the open sandbox a `with` block works in.

    import pome

    with pome.sandbox(["github", "slack"]) as sb:
        gh = github.Github(base_url=sb.twins["github"].api_url, auth=github.Auth.Token(sb.agent_token))
        ...
    print(sb.run.verdict)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from . import _api, models
from ._api import T
from .errors import APIConnectionError, ConflictError, PomeError, raise_for


def _send(http: httpx.Client, req: _api.Request[T]) -> T:
    request = http.build_request(
        req.method, req.path, params=req.params or None, json=req.body,
        timeout=req.timeout if req.timeout is not None else httpx.USE_CLIENT_DEFAULT,
    )
    _fit(request, req)
    try:
        response = http.send(request)
    except httpx.TimeoutException as e:
        raise APIConnectionError(f"{req.method} {request.url} took too long ({e}); the server may be overloaded") from e
    except httpx.TransportError as e:
        raise APIConnectionError(
            f"cannot reach the pome server at {request.url.scheme}://{request.url.netloc.decode()} ({e}); "
            "start one with `pome serve` or set POME_API_URL") from e
    raise_for(response)
    return req.read(response)


def _fit(request: httpx.Request, req: _api.Request[Any]) -> None:
    """The request's own headers; a twin route (an absolute URL) gets the agent's bearer and
    never the team's API key."""
    if req.path.startswith(("http://", "https://")):
        del request.headers["X-API-KEY"]
    request.headers.update(req.headers)


class Client:
    """The control plane of one pome server, for one team's API key.

    Configured like the CLI: `api_url` and `api_key` when given, else `POME_API_URL`
    (default `http://127.0.0.1:8080`) and `POME_API_KEY`. Every method raises a subclass of
    `pome.APIError` named by the error's `type` (`NotFoundError`, `ValidationFailedError`,
    ...), or `APIConnectionError` when the server cannot be reached."""

    def __init__(self, api_url: str | None = None, api_key: str | None = None, *,
                 timeout: float = _api.DEFAULT_TIMEOUT) -> None:
        self.api_url, self.api_key = _api.resolve(api_url, api_key)
        self._http = httpx.Client(**_api.http_options(self.api_url, self.api_key, timeout))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _call(self, req: _api.Request[T]) -> T:
        return _send(self._http, req)

    # -- sandboxes -----------------------------------------------------------------------

    def create_sandbox(
        self,
        twins: str | Sequence[str] | None = None,
        *,
        seed: Any = None,
        task_id: str | None = None,
        task_source: str | None = None,
        idempotency_key: str | None = None,
        group_id: str | None = None,
        agent_id: str | None = None,
        agent_version: str | None = None,
    ) -> models.Sandbox:
        """Create a sandbox of one to three twins (primary first). `seed` is a flat seed for
        one twin, an envelope `{twin: seed}` for several, or a saved seed's name. A task
        (`task_id` of a stored task, or `task_source`, its markdown) names the twins and the
        seed itself."""
        return self._call(_api.create_sandbox(
            twins, seed=seed, task_id=task_id, task_source=task_source, idempotency_key=idempotency_key,
            group_id=group_id, agent_id=agent_id, agent_version=agent_version))

    def list_sandboxes(self) -> list[models.Sandbox]:
        """The team's open sandboxes (without their tokens)."""
        return self._call(_api.list_sandboxes())

    def get_sandbox(self, id: str) -> models.Sandbox:
        return self._call(_api.get_sandbox(id))

    def heartbeat(self, id: str) -> models.Heartbeat:
        """Reset the sandbox's idle timer."""
        return self._call(_api.heartbeat(id))

    def finalize(self, id: str) -> models.Finalized:
        """Read every twin's tape and state, grade, store the run and close the sandbox.
        Finalizing again answers the same run."""
        return self._call(_api.finalize(id))

    def stop_sandbox(self, id: str, *, confirm_discard: str | None = None) -> models.Discarded:
        """Stop a sandbox without a run. An ungraded sandbox is refused with a `ConflictError`
        whose `details["discard_token"]` is the `confirm_discard` to repeat with."""
        return self._call(_api.stop_sandbox(id, confirm_discard))

    def discard(self, id: str) -> models.Discarded:
        """Stop a sandbox and throw its run away: `stop_sandbox`, then again with the token
        the refusal carries."""
        try:
            return self.stop_sandbox(id)
        except ConflictError as e:
            token = (e.details or {}).get("discard_token")
            if not token:
                raise
            return self.stop_sandbox(id, confirm_discard=token)

    def sandbox(
        self,
        twins: str | Sequence[str] | None = None,
        *,
        seed: Any = None,
        task: str | os.PathLike[str] | None = None,
        task_id: str | None = None,
        group_id: str | None = None,
        agent_id: str | None = None,
        agent_version: str | None = None,
        fetch_run: bool = True,
    ) -> OpenSandbox:
        """A sandbox for a `with` block: created on entry, finalized on exit (also when the
        block raises), with the run in `sb.run`. `task` is a task file's path (its
        `<stem>.seed.json` beside it is its seed): it is stored, and the sandbox boots from
        it. `fetch_run=False` keeps only the finalize answer (`sb.finalized`), without the
        run's tapes and states."""
        create = dict(twins=twins, seed=seed, task_id=task_id, group_id=group_id, agent_id=agent_id,
                      agent_version=agent_version)
        return OpenSandbox(self, create, task, fetch_run=fetch_run)

    # -- usage and keys ------------------------------------------------------------------

    def usage(self) -> models.Usage:
        return self._call(_api.usage())

    def create_key(self) -> models.NewApiKey:
        """A new key for the team; its `key` is shown only in this answer."""
        return self._call(_api.create_key())

    def list_keys(self) -> list[models.ApiKey]:
        return self._call(_api.list_keys())

    def revoke_key(self, id: str) -> None:
        """Revoke a key at once. The key making the call cannot revoke itself."""
        self._call(_api.revoke_key(id))

    # -- runs ----------------------------------------------------------------------------

    def list_runs(self, *, group_id: str | None = None, task: str | None = None, verdict: str | None = None,
                  agent_version: str | None = None, limit: int | None = None,
                  starting_after: str | None = None) -> models.RunPage:
        """One page of the team's runs, newest first; `verdict` is pass, fail, incomplete
        or ungraded."""
        return self._call(_api.list_runs(group_id=group_id, task=task, verdict=verdict, agent_version=agent_version, limit=limit,
                                         starting_after=starting_after))

    def iter_runs(self, *, group_id: str | None = None, task: str | None = None, verdict: str | None = None,
                  agent_version: str | None = None,
                  page_size: int | None = None) -> Iterator[models.RunSummary]:
        """Every run that matches, page after page."""
        after = None
        while True:
            page = self.list_runs(group_id=group_id, task=task, verdict=verdict, agent_version=agent_version, limit=page_size, starting_after=after)
            yield from page.data
            if not page.has_more or not page.next_cursor:
                return
            after = page.next_cursor

    def get_run(self, id: str) -> models.Run:
        return self._call(_api.get_run(id))

    def run_report(self, id: str) -> str:
        """The run as markdown: verdict, criteria with evidence, each twin's calls."""
        return self._call(_api.run_report(id))

    # -- branch and rewind ---------------------------------------------------------------

    def fork_sandbox(self, id: str, *, at: dict[str, int] | None = None, agent_id: str | None = None,
                     agent_version: str | None = None, group_id: str | None = None,
                     task_id: str | None = None) -> models.Sandbox:
        """A new sandbox whose worlds are the open sandbox `id`'s as they stood after row
        `at[twin]` of each twin's tape (0: the seed's world; a twin not named forks at its
        newest row). Its tapes begin with the inherited rows (`inherited=True`); it keeps
        the parent's task, agent and group unless given others, and has its own token,
        clocks and quota slot (`forked_from` says where it began). A position past the tape
        is a `ValidationFailedError`; a third rebuild while the team has two running is a
        `RateLimitedError`."""
        return self._call(_api.fork_sandbox(id, at=at, agent_id=agent_id, agent_version=agent_version,
                                            group_id=group_id, task_id=task_id))

    def fork_run(self, id: str, *, at: dict[str, int] | None = None, agent_id: str | None = None,
                 agent_version: str | None = None, group_id: str | None = None,
                 task_id: str | None = None) -> models.Sandbox:
        """A new sandbox from the finished run `id`'s recorded seeds and tapes, after row
        `at[twin]` of each (default: the run's end); see `fork_sandbox`."""
        return self._call(_api.fork_run(id, at=at, agent_id=agent_id, agent_version=agent_version,
                                        group_id=group_id, task_id=task_id))

    def sandbox_state(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        """The twin's state export (default: the primary twin) after `at` rows of its tape
        (0: the seed's world; default: now)."""
        return self._call(_api.state("sandboxes", id, twin, at=at))

    def run_state(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        """The run's twin's state export after `at` rows (default: its final world)."""
        return self._call(_api.state("runs", id, twin, at=at))

    def sandbox_seed(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        """The twin's world after `at` rows (default: now) as a seed document that boots
        exactly that world; save it with `put_seed` or pass it as a sandbox's `seed`."""
        return self._call(_api.seed("sandboxes", id, twin, at=at))

    def run_seed(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        """The same for a finished run (default: its final world)."""
        return self._call(_api.seed("runs", id, twin, at=at))

    def sandbox_diff(self, id: str, twin: str | None = None, *, from_: int | None = None,
                     to: int | None = None) -> models.Diff:
        """What changed in the twin's world between rows `from_` (default 0, the seed's
        world) and `to` (default: now)."""
        return self._call(_api.diff("sandboxes", id, twin, from_=from_, to=to))

    def run_diff(self, id: str, twin: str | None = None, *, from_: int | None = None,
                 to: int | None = None) -> models.Diff:
        """`sandbox_diff` over a finished run (`to` defaults to its end)."""
        return self._call(_api.diff("runs", id, twin, from_=from_, to=to))

    # -- seeds, twins, tasks -------------------------------------------------------------

    def put_seed(self, name: str, twin: str, seed: dict[str, Any]) -> models.Seed:
        """Save a named seed (the twin's `init` validates it first)."""
        return self._call(_api.put_seed(name, twin, seed))

    def list_seeds(self) -> list[models.Seed]:
        return self._call(_api.list_seeds())

    def list_twins(self) -> list[models.Twin]:
        return self._call(_api.list_twins())

    def create_task(self, source: str, *, id: str | None = None, seed: Any = None) -> models.Task:
        """Store a task from its markdown (and its sidecar seed, when it has one)."""
        return self._call(_api.create_task(source, id=id, seed=seed))

    def upload_task(self, path: str | os.PathLike[str]) -> models.Task:
        """Store a task file as `pome run` does: id from its file name, seed from the
        `<stem>.seed.json` beside it."""
        return self._call(_api.TaskFile.read(path).store())

    def list_tasks(self) -> list[models.Task]:
        return self._call(_api.list_tasks())

    def get_task(self, id: str) -> models.Task:
        return self._call(_api.get_task(id))

    def validate_task(self, source: str, *, file: str | None = None, seed: Any = None) -> models.TaskValidation:
        """Parse and bind a task without storing it."""
        return self._call(_api.validate_task(source, file=file, seed=seed))


class _Open:
    """What an open sandbox holds, sync or async: its identity, where its twins answer, and
    (once finalized) its result."""

    sandbox: models.Sandbox
    #: The finalize answer (verdict and criteria), once finalized.
    finalized: models.Finalized | None = None
    #: The whole run (verdict, criteria, tapes, states), once finalized.
    run: models.Run | None = None
    _done = False

    @property
    def id(self) -> str:
        return self.sandbox.id

    @property
    def agent_token(self) -> str:
        """The bearer token every twin of this sandbox takes."""
        return self.sandbox.agent_token or ""

    @property
    def twins(self) -> dict[str, models.TwinEndpoints]:
        """Each twin's URLs by name: `sb.twins["github"].api_url` is the base URL for its
        client library."""
        return self.sandbox.per_twin

    @property
    def env(self) -> dict[str, str]:
        """The environment `pome run` gives an agent (`POME_AUTH_TOKEN`,
        `POME_GITHUB_REST_URL`, ...), for an agent run as a subprocess."""
        return self.sandbox.agent_env

    def _url(self, twin: str, what: str) -> str:
        if twin not in self.twins:
            raise PomeError(f"sandbox {self.id} has no {twin} twin; it has {list(self.twins)}")
        url: str = getattr(self.twins[twin], what)
        return url


class OpenSandbox(_Open):
    """A sandbox in a `with` block (`Client.sandbox`, `pome.sandbox`)."""

    def __init__(self, client: Client, create: dict[str, Any], task: Any, *, fetch_run: bool, owns_client: bool = False,
                 sandbox: models.Sandbox | None = None) -> None:
        self._client, self._create, self._task = client, create, task
        self._fetch_run, self._owns_client = fetch_run, owns_client
        if sandbox is not None:  # already created (a fork)
            self.sandbox = sandbox

    def __enter__(self) -> OpenSandbox:
        if hasattr(self, "sandbox"):
            return self
        try:
            create = dict(self._create)
            if self._task is not None:
                create["task_id"] = self._client.upload_task(self._task).id
            self.sandbox = self._client.create_sandbox(**create)
        except BaseException:
            self._close_client()
            raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._done:
                pass
            elif exc is None:
                self.finalize()
            else:
                try:
                    self.finalize()
                except PomeError as e:
                    # The block's own error is the one to see.
                    warnings.warn(f"pome: sandbox {self.id} could not be finalized after the block raised: {e}",
                                  stacklevel=2)
        finally:
            self._close_client()

    def _close_client(self) -> None:
        if self._owns_client:
            self._client.close()

    def heartbeat(self) -> models.Heartbeat:
        return self._client.heartbeat(self.id)

    def finalize(self) -> models.Finalized:
        """Grade and close now (the `with` block's exit does it otherwise); the run is then
        in `self.run`. Calling it again answers the same result."""
        if self.finalized is None:
            self.finalized = self._client.finalize(self.id)
            self._done = True
            if self._fetch_run:
                self.run = self._client.get_run(self.finalized.run_id)
        return self.finalized

    def discard(self) -> models.Discarded:
        """Close without a run; the block's exit then does nothing more."""
        out = self._client.discard(self.id)
        self._done = True
        return out

    def state(self, twin: str, *, at: int | None = None) -> Any:
        """The twin's whole world now, as JSON; with `at`, as it stood after that many rows
        of its tape (0: the seed's world)."""
        return self._client._call(_api.twin_get(self._url(twin, "state_url"), self.agent_token, {"at": at}))

    def diff(self, twin: str, *, from_: int | None = None, to: int | None = None) -> models.Diff:
        """What changed in the twin's world between rows `from_` (default 0) and `to`
        (default: now); after finalizing, over the run."""
        if self.finalized is not None:
            return self._client.run_diff(self.finalized.run_id, twin, from_=from_, to=to)
        return self._client.sandbox_diff(self.id, twin, from_=from_, to=to)

    def fork(self, *, at: dict[str, int] | None = None, agent_id: str | None = None,
             agent_version: str | None = None, group_id: str | None = None,
             task_id: str | None = None) -> OpenSandbox:
        """A fork of this sandbox after row `at[twin]` of each tape (default: now), created
        at once, as a sandbox of its own: `with sb.fork(at={"github": 3}) as alt:` finalizes
        it when the block ends (otherwise finalize or discard it yourself). Once this
        sandbox is finalized, its run is forked instead. The fork shares this sandbox's
        client; one made by `pome.sandbox(...)` gets a client of its own, so it may
        outlive this block."""
        fork = _api.fork_run if self.finalized is not None else _api.fork_sandbox
        parent = self.finalized.run_id if self.finalized is not None else self.id
        made = self._client._call(fork(parent, at=at, agent_id=agent_id, agent_version=agent_version,
                                       group_id=group_id, task_id=task_id))
        client = Client(self._client.api_url, self._client.api_key) if self._owns_client else self._client
        return OpenSandbox(client, {}, None, fetch_run=self._fetch_run, owns_client=self._owns_client, sandbox=made)

    def events(self, twin: str) -> list[dict[str, Any]]:
        """The twin's tape so far (one row per request)."""
        return self._client._call(_api.twin_get(self._url(twin, "events_url"), self.agent_token))


def sandbox(
    twins: str | Sequence[str] | None = None,
    *,
    seed: Any = None,
    task: str | os.PathLike[str] | None = None,
    task_id: str | None = None,
    group_id: str | None = None,
    agent_id: str | None = None,
    agent_version: str | None = None,
    fetch_run: bool = True,
    api_url: str | None = None,
    api_key: str | None = None,
) -> OpenSandbox:
    """`with pome.sandbox(["github", "slack"], seed=...) as sb:` on the server
    `POME_API_URL`/`POME_API_KEY` name (or `api_url`/`api_key`); see `Client.sandbox`."""
    client = Client(api_url, api_key)
    create = dict(twins=twins, seed=seed, task_id=task_id, group_id=group_id, agent_id=agent_id,
                  agent_version=agent_version)
    return OpenSandbox(client, create, task, fetch_run=fetch_run, owns_client=True)
