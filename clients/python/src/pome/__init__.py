"""pome: a Python client for pome's control plane.

Sandboxes of digital twins (GitHub, Stripe, Slack, Gmail, Linear), the runs they leave, tasks,
usage and keys; sync (`Client`) and async (`AsyncClient`), configured like the CLI from
`POME_API_URL` and `POME_API_KEY`. `with pome.sandbox([...]) as sb:` hands an agent its token
and each twin's URL, and finalizes on exit (`sb.run` holds the verdict). Installing the
package also installs a pytest plugin: the `pome_sandbox` fixture and the `pome_task` marker.
"""

from .aio import AsyncClient, AsyncOpenSandbox, async_sandbox
from .client import Client, OpenSandbox, sandbox
from .errors import (
    APIConnectionError,
    APIError,
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    InternalServerError,
    InvalidAuthError,
    NotFoundError,
    PomeError,
    QuotaExceededError,
    RateLimitedError,
    ServerBusyError,
    SessionExpiredError,
    ValidationFailedError,
)
from .models import (
    ApiKey,
    Change,
    CriterionResult,
    Diff,
    Discarded,
    Finalized,
    ForkedFrom,
    Heartbeat,
    NewApiKey,
    Run,
    RunPage,
    RunSummary,
    Sandbox,
    Seed,
    TapeRow,
    Task,
    TaskCriterion,
    TaskRef,
    TaskValidation,
    Twin,
    TwinEndpoints,
    TwinRecord,
    Usage,
)

__version__ = "0.1.0"

__all__ = [
    "APIConnectionError", "APIError", "ApiKey", "AsyncClient", "AsyncOpenSandbox", "Change", "Client", "ConfigurationError",
    "ConflictError", "CriterionResult", "Diff", "Discarded", "Finalized", "ForbiddenError", "ForkedFrom", "Heartbeat",
    "InternalServerError", "InvalidAuthError", "NewApiKey", "NotFoundError", "OpenSandbox", "PomeError",
    "QuotaExceededError", "RateLimitedError", "Run", "RunPage", "RunSummary", "Sandbox", "Seed",
    "ServerBusyError", "SessionExpiredError", "TapeRow", "Task", "TaskCriterion", "TaskRef", "TaskValidation",
    "Twin", "TwinEndpoints", "TwinRecord", "Usage", "ValidationFailedError", "async_sandbox", "sandbox",
]
