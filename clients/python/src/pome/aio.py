"""The asynchronous client: the same routes and answers as `pome.Client`, awaited.

    async with pome.AsyncClient() as client:
        async with client.sandbox(["slack"]) as sb:
            ...
        print(sb.run.verdict)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx

from . import _api, models
from ._api import T
from .client import _fit, _Open
from .errors import APIConnectionError, ConflictError, PomeError, raise_for


async def _send(http: httpx.AsyncClient, req: _api.Request[T]) -> T:
    request = http.build_request(
        req.method, req.path, params=req.params or None, json=req.body,
        timeout=req.timeout if req.timeout is not None else httpx.USE_CLIENT_DEFAULT,
    )
    _fit(request, req)
    try:
        response = await http.send(request)
    except httpx.TimeoutException as e:
        raise APIConnectionError(f"{req.method} {request.url} took too long ({e}); the server may be overloaded") from e
    except httpx.TransportError as e:
        raise APIConnectionError(
            f"cannot reach the pome server at {request.url.scheme}://{request.url.netloc.decode()} ({e}); "
            "start one with `pome serve` or set POME_API_URL") from e
    raise_for(response)
    return req.read(response)


class AsyncClient:
    """`pome.Client`, for asyncio: configured the same way (arguments, else `POME_API_URL`
    and `POME_API_KEY`), raising the same typed errors."""

    def __init__(self, api_url: str | None = None, api_key: str | None = None, *,
                 timeout: float = _api.DEFAULT_TIMEOUT) -> None:
        self.api_url, self.api_key = _api.resolve(api_url, api_key)
        self._http = httpx.AsyncClient(**_api.http_options(self.api_url, self.api_key, timeout))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def _call(self, req: _api.Request[T]) -> T:
        return await _send(self._http, req)

    # -- sandboxes -----------------------------------------------------------------------

    async def create_sandbox(
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
        """See `Client.create_sandbox`."""
        return await self._call(_api.create_sandbox(
            twins, seed=seed, task_id=task_id, task_source=task_source, idempotency_key=idempotency_key,
            group_id=group_id, agent_id=agent_id, agent_version=agent_version))

    async def list_sandboxes(self) -> list[models.Sandbox]:
        return await self._call(_api.list_sandboxes())

    async def get_sandbox(self, id: str) -> models.Sandbox:
        return await self._call(_api.get_sandbox(id))

    async def heartbeat(self, id: str) -> models.Heartbeat:
        return await self._call(_api.heartbeat(id))

    async def finalize(self, id: str) -> models.Finalized:
        return await self._call(_api.finalize(id))

    async def stop_sandbox(self, id: str, *, confirm_discard: str | None = None) -> models.Discarded:
        return await self._call(_api.stop_sandbox(id, confirm_discard))

    async def discard(self, id: str) -> models.Discarded:
        """See `Client.discard`."""
        try:
            return await self.stop_sandbox(id)
        except ConflictError as e:
            token = (e.details or {}).get("discard_token")
            if not token:
                raise
            return await self.stop_sandbox(id, confirm_discard=token)

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
    ) -> AsyncOpenSandbox:
        """`async with client.sandbox(...) as sb:`; see `Client.sandbox`."""
        create = dict(twins=twins, seed=seed, task_id=task_id, group_id=group_id, agent_id=agent_id,
                      agent_version=agent_version)
        return AsyncOpenSandbox(self, create, task, fetch_run=fetch_run)

    # -- usage and keys ------------------------------------------------------------------

    async def usage(self) -> models.Usage:
        return await self._call(_api.usage())

    async def create_key(self) -> models.NewApiKey:
        return await self._call(_api.create_key())

    async def list_keys(self) -> list[models.ApiKey]:
        return await self._call(_api.list_keys())

    async def revoke_key(self, id: str) -> None:
        await self._call(_api.revoke_key(id))

    # -- runs ----------------------------------------------------------------------------

    async def list_runs(self, *, group_id: str | None = None, task: str | None = None, verdict: str | None = None,
                        agent_version: str | None = None, limit: int | None = None,
                        starting_after: str | None = None) -> models.RunPage:
        return await self._call(_api.list_runs(group_id=group_id, task=task, verdict=verdict, agent_version=agent_version, limit=limit,
                                               starting_after=starting_after))

    async def iter_runs(self, *, group_id: str | None = None, task: str | None = None, verdict: str | None = None,
                        agent_version: str | None = None,
                        page_size: int | None = None) -> AsyncIterator[models.RunSummary]:
        after = None
        while True:
            page = await self.list_runs(group_id=group_id, task=task, verdict=verdict, agent_version=agent_version, limit=page_size,
                                        starting_after=after)
            for run in page.data:
                yield run
            if not page.has_more or not page.next_cursor:
                return
            after = page.next_cursor

    async def get_run(self, id: str) -> models.Run:
        return await self._call(_api.get_run(id))

    async def run_report(self, id: str) -> str:
        return await self._call(_api.run_report(id))

    # -- branch and rewind ---------------------------------------------------------------

    async def fork_sandbox(self, id: str, *, at: dict[str, int] | None = None, agent_id: str | None = None,
                           agent_version: str | None = None, group_id: str | None = None,
                           task_id: str | None = None) -> models.Sandbox:
        """See `pome.Client.fork_sandbox`."""
        return await self._call(_api.fork_sandbox(id, at=at, agent_id=agent_id, agent_version=agent_version,
                                                  group_id=group_id, task_id=task_id))

    async def fork_run(self, id: str, *, at: dict[str, int] | None = None, agent_id: str | None = None,
                       agent_version: str | None = None, group_id: str | None = None,
                       task_id: str | None = None) -> models.Sandbox:
        """See `pome.Client.fork_run`."""
        return await self._call(_api.fork_run(id, at=at, agent_id=agent_id, agent_version=agent_version,
                                              group_id=group_id, task_id=task_id))

    async def sandbox_state(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        return await self._call(_api.state("sandboxes", id, twin, at=at))

    async def run_state(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        return await self._call(_api.state("runs", id, twin, at=at))

    async def sandbox_seed(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        return await self._call(_api.seed("sandboxes", id, twin, at=at))

    async def run_seed(self, id: str, twin: str | None = None, *, at: int | None = None) -> dict[str, Any]:
        return await self._call(_api.seed("runs", id, twin, at=at))

    async def sandbox_diff(self, id: str, twin: str | None = None, *, from_: int | None = None,
                           to: int | None = None) -> models.Diff:
        return await self._call(_api.diff("sandboxes", id, twin, from_=from_, to=to))

    async def run_diff(self, id: str, twin: str | None = None, *, from_: int | None = None,
                       to: int | None = None) -> models.Diff:
        return await self._call(_api.diff("runs", id, twin, from_=from_, to=to))

    # -- seeds, twins, tasks -------------------------------------------------------------

    async def put_seed(self, name: str, twin: str, seed: dict[str, Any]) -> models.Seed:
        return await self._call(_api.put_seed(name, twin, seed))

    async def list_seeds(self) -> list[models.Seed]:
        return await self._call(_api.list_seeds())

    async def list_twins(self) -> list[models.Twin]:
        return await self._call(_api.list_twins())

    async def create_task(self, source: str, *, id: str | None = None, seed: Any = None) -> models.Task:
        return await self._call(_api.create_task(source, id=id, seed=seed))

    async def upload_task(self, path: str | os.PathLike[str]) -> models.Task:
        return await self._call(_api.TaskFile.read(path).store())

    async def list_tasks(self) -> list[models.Task]:
        return await self._call(_api.list_tasks())

    async def get_task(self, id: str) -> models.Task:
        return await self._call(_api.get_task(id))

    async def validate_task(self, source: str, *, file: str | None = None, seed: Any = None) -> models.TaskValidation:
        return await self._call(_api.validate_task(source, file=file, seed=seed))


class AsyncOpenSandbox(_Open):
    """A sandbox in an `async with` block: created on entry, finalized on exit."""

    def __init__(self, client: AsyncClient, create: dict[str, Any], task: Any, *, fetch_run: bool,
                 owns_client: bool = False, sandbox: models.Sandbox | None = None) -> None:
        self._client, self._create, self._task = client, create, task
        self._fetch_run, self._owns_client = fetch_run, owns_client
        if sandbox is not None:  # already created (a fork)
            self.sandbox = sandbox

    async def __aenter__(self) -> AsyncOpenSandbox:
        if hasattr(self, "sandbox"):
            return self
        try:
            create = dict(self._create)
            if self._task is not None:
                create["task_id"] = (await self._client.upload_task(self._task)).id
            self.sandbox = await self._client.create_sandbox(**create)
        except BaseException:
            await self._close_client()
            raise
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self._done:
                pass
            elif exc is None:
                await self.finalize()
            else:
                try:
                    await self.finalize()
                except PomeError as e:
                    warnings.warn(f"pome: sandbox {self.id} could not be finalized after the block raised: {e}",
                                  stacklevel=2)
        finally:
            await self._close_client()

    async def _close_client(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def heartbeat(self) -> models.Heartbeat:
        return await self._client.heartbeat(self.id)

    async def finalize(self) -> models.Finalized:
        if self.finalized is None:
            self.finalized = await self._client.finalize(self.id)
            self._done = True
            if self._fetch_run:
                self.run = await self._client.get_run(self.finalized.run_id)
        return self.finalized

    async def discard(self) -> models.Discarded:
        out = await self._client.discard(self.id)
        self._done = True
        return out

    async def state(self, twin: str, *, at: int | None = None) -> Any:
        return await self._client._call(_api.twin_get(self._url(twin, "state_url"), self.agent_token, {"at": at}))

    async def diff(self, twin: str, *, from_: int | None = None, to: int | None = None) -> models.Diff:
        if self.finalized is not None:
            return await self._client.run_diff(self.finalized.run_id, twin, from_=from_, to=to)
        return await self._client.sandbox_diff(self.id, twin, from_=from_, to=to)

    async def fork(self, *, at: dict[str, int] | None = None, agent_id: str | None = None,
                   agent_version: str | None = None, group_id: str | None = None,
                   task_id: str | None = None) -> AsyncOpenSandbox:
        """See `pome.OpenSandbox.fork`; created when awaited, so `async with await
        sb.fork(at=...) as alt:`."""
        fork = _api.fork_run if self.finalized is not None else _api.fork_sandbox
        parent = self.finalized.run_id if self.finalized is not None else self.id
        made = await self._client._call(fork(parent, at=at, agent_id=agent_id, agent_version=agent_version,
                                             group_id=group_id, task_id=task_id))
        client = AsyncClient(self._client.api_url, self._client.api_key) if self._owns_client else self._client
        return AsyncOpenSandbox(client, {}, None, fetch_run=self._fetch_run, owns_client=self._owns_client, sandbox=made)

    async def events(self, twin: str) -> list[dict[str, Any]]:
        return await self._client._call(_api.twin_get(self._url(twin, "events_url"), self.agent_token))


def async_sandbox(
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
) -> AsyncOpenSandbox:
    """`async with pome.async_sandbox([...]) as sb:`; see `pome.sandbox`."""
    client = AsyncClient(api_url, api_key)
    create = dict(twins=twins, seed=seed, task_id=task_id, group_id=group_id, agent_id=agent_id,
                  agent_version=agent_version)
    return AsyncOpenSandbox(client, create, task, fetch_run=fetch_run, owns_client=True)
