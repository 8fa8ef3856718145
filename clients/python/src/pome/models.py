"""The control plane's answers as typed values: sandboxes, runs, tasks, usage and keys.

Field names are the wire's (`sessions_used`, `idle_expires_at`, `per_twin`, ...), except
`class` which is `class_` in Python. Timestamps are timezone-aware `datetime`s. Each model
keeps the JSON it was read from in `raw`, so a field a newer server adds is reachable before
this client names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def _dt(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp as the server writes it (`2026-12-05T23:13:49Z`, or with
    milliseconds); `fromisoformat` takes a trailing `Z` only from Python 3.11."""
    if value is None:
        return None
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    return datetime.fromisoformat(value)


def _raw() -> Any:
    return field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class ForkedFrom:
    """Where a fork began (`forked_from` of a sandbox or run): the sandbox or run it was
    forked from, and how many rows of each twin's tape it inherited."""

    #: The parent sandbox (for a run's fork, the sandbox the run was of).
    sandbox_id: str | None
    #: The parent run when a finished run was forked; None when an open sandbox was.
    run_id: str | None
    #: Per twin, the row the fork starts after (0: the seed's world).
    at: dict[str, int]
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ForkedFrom:
        return cls(sandbox_id=d.get("sandbox_id"), run_id=d.get("run_id"),
                   at={k: int(v) for k, v in (d.get("at") or {}).items()}, raw=d)

    @classmethod
    def maybe(cls, d: Any) -> ForkedFrom | None:
        return cls.from_json(d) if isinstance(d, dict) else None


@dataclass(frozen=True)
class Change:
    """One path that differs between two worlds, with its value before and after (None
    where the path was absent)."""

    path: str
    before: Any
    after: Any
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Change:
        return cls(path=d["path"], before=d.get("before"), after=d.get("after"), raw=d)


@dataclass(frozen=True)
class Diff:
    """What changed in one twin's world between two positions of its tape (`sandbox_diff`,
    `run_diff`): `from_` and `to` are row counts, 0 being the seed's world."""

    twin: str
    from_: int
    to: int
    diff: list[Change]
    object: str = "diff"
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Diff:
        return cls(twin=d["twin"], from_=d["from"], to=d["to"], diff=[Change.from_json(c) for c in d.get("diff") or []],
                   object=d.get("object", "diff"), raw=d)

    @property
    def paths(self) -> list[str]:
        """The changed paths, in order."""
        return [c.path for c in self.diff]


@dataclass(frozen=True)
class TwinEndpoints:
    """Where one twin of a sandbox answers (`per_twin.<twin>` of a sandbox)."""

    #: The base URL to give the twin's client library (PyGithub's `base_url`, slack_sdk's
    #: `base_url`, stripe's `api_base`, ...): `base_url` plus the API's own prefix, if any.
    api_url: str
    #: `http://HOST/s/<sandbox>/<twin>`.
    base_url: str
    #: The twin's tape (GET, with the agent token).
    events_url: str
    #: The twin's whole world as JSON (GET, with the agent token).
    state_url: str
    health_url: str
    #: The twin's MCP endpoint.
    mcp_url: str
    #: The agent token in the shape the vendor's client expects (e.g. `sk_test_…` for
    #: Stripe); None for twins whose clients take any bearer.
    api_key: str | None = None
    #: The twin at the root of a host name of its own, when the server has one configured.
    host_url: str | None = None
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TwinEndpoints:
        return cls(
            api_url=d["api_url"], base_url=d["base_url"], events_url=d["events_url"],
            state_url=d["state_url"], health_url=d["health_url"], mcp_url=d["mcp_url"],
            api_key=d.get("api_key"), host_url=d.get("host_url"), raw=d,
        )


@dataclass(frozen=True)
class Sandbox:
    """A sandbox as the control plane shows it (create, get, list)."""

    id: str
    #: The same id, by its other name.
    session_id: str
    state: str
    #: Twin names, primary first.
    twins: list[str]
    primary_twin: str | None
    created_at: datetime | None
    expires_at: datetime | None
    idle_expires_at: datetime | None
    per_twin: dict[str, TwinEndpoints]
    task_id: str | None = None
    task_version: str | None = None
    group_id: str | None = None
    agent_id: str | None = None
    agent_version: str | None = None
    #: The bearer token twin clients use; present on create and get, never in listings.
    agent_token: str | None = None
    #: The environment an agent gets (`POME_AUTH_TOKEN`, `POME_GITHUB_REST_URL`, ...); with
    #: the token only.
    agent_env: dict[str, str] = field(default_factory=dict)
    #: Where this sandbox was forked from; None when it is not a fork.
    forked_from: ForkedFrom | None = None
    object: str = "sandbox"
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Sandbox:
        return cls(
            id=d["id"], session_id=d.get("session_id", d["id"]), state=d.get("state", "open"),
            twins=list(d.get("twins", [])), primary_twin=d.get("primary_twin"),
            created_at=_dt(d.get("created_at")), expires_at=_dt(d.get("expires_at")),
            idle_expires_at=_dt(d.get("idle_expires_at")),
            per_twin={k: TwinEndpoints.from_json(v) for k, v in (d.get("per_twin") or {}).items()},
            task_id=d.get("task_id"), task_version=d.get("task_version"), group_id=d.get("group_id"),
            agent_id=d.get("agent_id"), agent_version=d.get("agent_version"),
            agent_token=d.get("agent_token"), agent_env=dict(d.get("agent_env") or {}),
            forked_from=ForkedFrom.maybe(d.get("forked_from")), object=d.get("object", "sandbox"), raw=d,
        )


@dataclass(frozen=True)
class Heartbeat:
    """A heartbeat's answer: the sandbox's new idle deadline."""

    id: str
    session_id: str
    state: str
    idle_expires_at: datetime | None
    expires_at: datetime | None
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Heartbeat:
        return cls(id=d["id"], session_id=d.get("session_id", d["id"]), state=d["state"],
                   idle_expires_at=_dt(d.get("idle_expires_at")), expires_at=_dt(d.get("expires_at")), raw=d)


@dataclass(frozen=True)
class Discarded:
    """A stopped (discarded) sandbox: closed without a run."""

    id: str
    session_id: str
    state: str
    discarded: bool
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Discarded:
        return cls(id=d["id"], session_id=d.get("session_id", d["id"]), state=d["state"],
                   discarded=bool(d.get("discarded")), raw=d)


@dataclass(frozen=True)
class CriterionResult:
    """One success criterion, graded."""

    #: The criterion's position in the task, from 1.
    index: int
    #: `code` or `model`.
    kind: str
    twin: str | None
    text: str
    #: `passed`, `failed`, `skipped`, `unmatched` or `errored`.
    status: str
    #: One line saying why.
    reason: str
    #: `{twin, state: "<path>"}` or `{twin, seq: N}`; None when nothing was read.
    evidence: Any
    check_id: str | None
    always_scored: bool
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CriterionResult:
        return cls(
            index=d["index"], kind=d["kind"], twin=d.get("twin"), text=d["text"], status=d["status"],
            reason=d.get("reason", ""), evidence=d.get("evidence"), check_id=d.get("check_id"),
            always_scored=bool(d.get("always_scored")), raw=d,
        )


@dataclass(frozen=True)
class Finalized:
    """A finalize's answer: the verdict and each criterion's result. The whole run (tapes
    and states) is `Client.get_run(run_id)`."""

    run_id: str
    id: str
    session_id: str
    state: str
    #: `pass`, `fail` or `incomplete`; None when the sandbox had no task.
    verdict: str | None
    score: int | None
    pass_threshold: int | None
    criteria_results: list[CriterionResult]
    tape_rows: int
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Finalized:
        return cls(
            run_id=d["run_id"], id=d["id"], session_id=d.get("session_id", d["id"]), state=d["state"],
            verdict=d.get("verdict"), score=d.get("score"), pass_threshold=d.get("pass_threshold"),
            criteria_results=[CriterionResult.from_json(c) for c in d.get("criteria_results") or []],
            tape_rows=d.get("tape_rows", 0), raw=d,
        )


@dataclass(frozen=True)
class Usage:
    """The team's concurrency: sandboxes open now against its quota."""

    sessions_used: int
    sessions_quota: int
    sessions_remaining: int
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Usage:
        return cls(sessions_used=d["sessions_used"], sessions_quota=d["sessions_quota"],
                   sessions_remaining=d["sessions_remaining"], raw=d)


@dataclass(frozen=True)
class NewApiKey:
    """A key just created: `key` is shown here and nowhere else (only its hash is stored)."""

    id: str
    key: str
    #: The first characters, by which listings show it.
    prefix: str
    object: str = "api_key"
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> NewApiKey:
        return cls(id=d["id"], key=d["key"], prefix=d["prefix"], object=d.get("object", "api_key"), raw=d)


@dataclass(frozen=True)
class ApiKey:
    """One of the team's keys, as listed (never the key itself)."""

    id: str | None
    prefix: str | None
    created_at: datetime | None
    #: When it was revoked; None while it is live.
    revoked_at: datetime | None
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ApiKey:
        return cls(id=d.get("id"), prefix=d.get("prefix"), created_at=_dt(d.get("created_at")),
                   revoked_at=_dt(d.get("revoked_at")), raw=d)


@dataclass(frozen=True)
class RunSummary:
    """A run as listed: without its tapes and states."""

    id: str
    session_id: str
    task_id: str | None
    group_id: str | None
    agent_id: str | None
    agent_version: str | None
    twins: list[str]
    verdict: str | None
    created_at: datetime | None
    #: The graded score, 0 to 100; None when ungraded or nothing was scored.
    score: int | None = None
    #: Each criterion's outcome, `{index, text, status}`; None for runs stored before pome
    #: kept them beside the listing (read those whole with `get_run`).
    criteria: list[dict[str, Any]] | None = None
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunSummary:
        return cls(
            id=d["id"], session_id=d["session_id"], task_id=d.get("task_id"), group_id=d.get("group_id"),
            agent_id=d.get("agent_id"), agent_version=d.get("agent_version"), twins=list(d.get("twins", [])),
            verdict=d.get("verdict"), created_at=_dt(d.get("created_at")), score=d.get("score"),
            criteria=d.get("criteria"), raw=d,
        )


@dataclass(frozen=True)
class RunPage:
    """One page of runs, newest first; `next_cursor` is the `starting_after` of the next."""

    data: list[RunSummary]
    has_more: bool
    next_cursor: str | None
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunPage:
        return cls(data=[RunSummary.from_json(r) for r in d.get("data", [])], has_more=bool(d.get("has_more")),
                   next_cursor=d.get("next_cursor"), raw=d)


@dataclass(frozen=True)
class TaskRef:
    """The task a run was graded against, at the version the sandbox booted from."""

    id: str
    version: str
    title: str
    pass_threshold: int
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TaskRef:
        return cls(id=d["id"], version=d["version"], title=d["title"], pass_threshold=d["pass_threshold"], raw=d)


@dataclass(frozen=True)
class TapeRow:
    """One request a twin served, in execution order (DESIGN §7)."""

    seq: int
    #: The virtual time the twin was given.
    ts: str
    twin: str
    request_id: str
    method: str
    path: str
    query: str
    status: int
    action: str | None
    #: `semantic` or `unsupported`.
    fidelity: str
    state_mutation: bool
    latency_ms: float
    request_body: Any
    response_body: Any
    #: The changes the request made: entity, id, before, after.
    state_delta: list[dict[str, Any]]
    error: str | None
    #: A row a fork inherited from its parent (it ran before the fork began).
    inherited: bool = False
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TapeRow:
        return cls(
            seq=d["seq"], ts=d.get("ts", ""), twin=d.get("twin", ""), request_id=d.get("request_id", ""),
            method=d["method"], path=d["path"], query=d.get("query", ""), status=d["status"],
            action=d.get("action"), fidelity=d.get("fidelity", "semantic"), state_mutation=bool(d.get("state_mutation")),
            latency_ms=d.get("latency_ms", 0.0), request_body=d.get("request_body"), response_body=d.get("response_body"),
            state_delta=list(d.get("state_delta") or []), error=d.get("error"),
            inherited=bool(d.get("inherited")), raw=d,
        )


@dataclass(frozen=True)
class TwinRecord:
    """One twin's side of a run: its world before and after, the difference, its tape."""

    initial_state: Any
    #: None when it could not be read (`state_error` says why).
    final_state: Any
    #: Paths that differ between the two, with before and after.
    diff: list[dict[str, Any]]
    tape: list[TapeRow]
    #: The webhooks the twin asked for, with every delivery attempt.
    deliveries: list[dict[str, Any]]
    #: The seed text the twin booted from ("" = its default world).
    seed: str | None
    state_error: str | None = None
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TwinRecord:
        return cls(
            initial_state=d.get("initial_state"), final_state=d.get("final_state"), diff=list(d.get("diff") or []),
            tape=[TapeRow.from_json(r) for r in d.get("tape") or []], deliveries=list(d.get("deliveries") or []),
            seed=d.get("seed"), state_error=d.get("state_error"), raw=d,
        )


@dataclass(frozen=True)
class Run:
    """The graded, persisted result of one sandbox: verdict, criteria with their evidence,
    and per twin its tape and its world before and after."""

    id: str
    session_id: str
    twins: list[str]
    primary_twin: str
    task_id: str | None
    task_version: str | None
    group_id: str | None
    agent_id: str | None
    agent_version: str | None
    created_at: datetime | None
    finalized_at: datetime | None
    #: What it was graded against; None when the sandbox had no task.
    task: TaskRef | None
    #: `pass`, `fail` or `incomplete`; None when there was no task to grade against.
    verdict: str | None
    score: int | None
    pass_threshold: int | None
    criteria_results: list[CriterionResult]
    per_twin: dict[str, TwinRecord]
    #: Where the sandbox of this run was forked from; None when it was not a fork.
    forked_from: ForkedFrom | None = None
    object: str = "run"
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Run:
        return cls(
            id=d["id"], session_id=d["session_id"], twins=list(d.get("twins", [])), primary_twin=d.get("primary_twin", ""),
            task_id=d.get("task_id"), task_version=d.get("task_version"), group_id=d.get("group_id"),
            agent_id=d.get("agent_id"), agent_version=d.get("agent_version"),
            created_at=_dt(d.get("created_at")), finalized_at=_dt(d.get("finalized_at")),
            task=TaskRef.from_json(d["task"]) if d.get("task") else None,
            verdict=d.get("verdict"), score=d.get("score"), pass_threshold=d.get("pass_threshold"),
            criteria_results=[CriterionResult.from_json(c) for c in d.get("criteria_results") or []],
            per_twin={k: TwinRecord.from_json(v) for k, v in (d.get("per_twin") or {}).items()},
            forked_from=ForkedFrom.maybe(d.get("forked_from")), object=d.get("object", "run"), raw=d,
        )

    @property
    def failures(self) -> list[CriterionResult]:
        """The criteria that kept the verdict from `pass`: failed, errored or unmatched."""
        return [c for c in self.criteria_results if c.status in ("failed", "errored", "unmatched")]


@dataclass(frozen=True)
class TaskCriterion:
    """A task's success criterion and the check it binds to."""

    index: int
    #: The line of the task file it is on.
    line: int | None
    kind: str
    twin: str | None
    text: str
    #: The check it binds to (e.g. `github.pull_state`); None when it binds to none.
    binding: str | None
    params: dict[str, Any]
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TaskCriterion:
        return cls(index=d["index"], line=d.get("line"), kind=d["kind"], twin=d.get("twin"), text=d["text"],
                   binding=d.get("binding"), params=dict(d.get("params") or {}), raw=d)


@dataclass(frozen=True)
class Task:
    """A task (DESIGN §8) as the server parsed and bound it."""

    id: str
    title: str
    #: Twin names, primary first.
    twins: list[str]
    #: Seconds.
    timeout: int | None
    runs: int | None
    pass_threshold: int | None
    #: The task's `class` (a Python keyword, hence the underscore).
    class_: str | None
    criteria: list[TaskCriterion]
    #: How many `[code]` criteria bind to no check.
    unbound: int
    #: The stored version (on create).
    version: str | None = None
    #: The markdown (on get).
    source: str | None = None
    object: str = "task"
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Task:
        return cls(
            id=d["id"], title=d.get("title", ""), twins=list(d.get("twins", [])), timeout=d.get("timeout"),
            runs=d.get("runs"), pass_threshold=d.get("pass_threshold"), class_=d.get("class"),
            criteria=[TaskCriterion.from_json(c) for c in d.get("criteria") or []], unbound=d.get("unbound", 0),
            version=d.get("version"), source=d.get("source"), object=d.get("object", "task"), raw=d,
        )


@dataclass(frozen=True)
class TaskValidation:
    """A task checked without being stored: `valid` when it parses and every `[code]`
    criterion binds to a check."""

    valid: bool
    task: Task | None
    errors: list[str]
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TaskValidation:
        return cls(valid=bool(d.get("valid")), task=Task.from_json(d["task"]) if d.get("task") else None,
                   errors=list(d.get("errors") or []), raw=d)


@dataclass(frozen=True)
class Seed:
    """A named seed, saved after its twin's `init` accepted it."""

    name: str
    twin: str
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Seed:
        return cls(name=d["name"], twin=d["twin"], raw=d)


@dataclass(frozen=True)
class Twin:
    """A twin this server hosts, with its description (surface, checks, credentials)."""

    name: str
    origin: str
    description: dict[str, Any]
    raw: dict[str, Any] = _raw()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Twin:
        return cls(name=d["name"], origin=d.get("origin", ""), description=dict(d.get("description") or {}), raw=d)
