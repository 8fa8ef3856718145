"""Typed errors: one class per control-plane error `type`, under `APIError`.

Every control-plane error has one shape, `{"error": {"type", "message", "details"?,
"request_id"}}`; `raise_for` turns such an answer into the class its `type` names, so callers
catch what they mean (`except pome.NotFoundError`) rather than compare status codes.
"""

from __future__ import annotations

from typing import Any

import httpx


class PomeError(Exception):
    """Anything this client raises."""


class ConfigurationError(PomeError):
    """The client cannot be built: no API key, or a URL that is not one."""


class APIConnectionError(PomeError):
    """The server could not be reached, or did not answer in time."""


class APIError(PomeError):
    """An error answer from the control plane.

    `type` is the envelope's `type` (None when the answer was not the envelope, e.g. a proxy
    in front of the server answered); `details` holds the machine-readable specifics, such as
    `{"error": "too_many_twins", "max": 3, "requested": 4}` or a discard token."""

    #: The envelope `type` this class stands for; None on the base class.
    error_type: str | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int,
        type: str | None = None,
        details: Any = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type
        self.details = details
        self.request_id = request_id
        #: Seconds to wait before trying again (`Retry-After`), when the server said.
        self.retry_after = retry_after

    def __str__(self) -> str:
        where = f"HTTP {self.status}" + (f", {self.type}" if self.type else "")
        if self.request_id:
            where += f", request {self.request_id}"
        return f"{self.message} ({where})"


class InvalidAuthError(APIError):
    """401: the API key is missing, malformed, revoked or unknown."""

    error_type = "invalid_auth"


class ForbiddenError(APIError):
    """403: the key is valid but may not do this."""

    error_type = "forbidden"


class QuotaExceededError(APIError):
    """402: the team's concurrency quota (open sandboxes) or seed storage is full."""

    error_type = "quota_exceeded"


class ValidationFailedError(APIError):
    """422 (400 for a body that is not JSON): the request was refused as written."""

    error_type = "validation_failed"


class NotFoundError(APIError):
    """404: no such sandbox, run, task or key in the caller's team."""

    error_type = "not_found"


class SessionExpiredError(APIError):
    """410: the sandbox is closed (finalized, discarded or expired)."""

    error_type = "session_expired"


class ConflictError(APIError):
    """409: e.g. stopping an ungraded sandbox without its discard token
    (`details["reason"] == "ungraded_session"`, `details["discard_token"]`)."""

    error_type = "conflict"


class RateLimitedError(APIError):
    """429: too many requests; see `retry_after`."""

    error_type = "rate_limited"


class ServerBusyError(APIError):
    """503: the server is at its memory budget or its database is unavailable; nothing was
    changed, and the same request may succeed after `retry_after`."""

    error_type = "server_busy"


class InternalServerError(APIError):
    """500: the server failed; `request_id` finds it in the server's log."""

    error_type = "internal_error"


ERROR_TYPES: dict[str, type[APIError]] = {
    cls.error_type: cls
    for cls in (
        InvalidAuthError,
        ForbiddenError,
        QuotaExceededError,
        ValidationFailedError,
        NotFoundError,
        SessionExpiredError,
        ConflictError,
        RateLimitedError,
        ServerBusyError,
        InternalServerError,
    )
    if cls.error_type
}


def raise_for(response: httpx.Response) -> None:
    """Raise the typed error an answer of status 400 or more stands for; return otherwise."""
    if response.status_code < 400:
        return
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    retry_after = _seconds(response.headers.get("retry-after"))
    if not isinstance(error, dict):
        text = response.text.strip()[:200] or response.reason_phrase
        raise APIError(f"{response.request.method} {response.request.url.path} failed: {text}",
                       status=response.status_code, retry_after=retry_after)
    kind = error.get("type")
    cls = ERROR_TYPES.get(kind, APIError) if isinstance(kind, str) else APIError
    raise cls(
        str(error.get("message") or "request failed"),
        status=response.status_code,
        type=kind,
        details=error.get("details"),
        request_id=error.get("request_id"),
        retry_after=retry_after,
    )


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
