"""Jobnik SDK: an async client for the Jobnik manager, and a Worker that runs handlers.

    async with JobnikClient("http://127.0.0.1:8080") as client:
        job = await client.create_job("render", stages=[NewStage(type="tile", tasks=[...])])
        done = await client.wait(job.id)

    async def render(tile: Tile, ctx: TaskContext) -> dict[str, int]: ...
    await Worker("http://127.0.0.1:8080", stage_types="tile", handler=render).run()

`jobnik_sdk.testing` serves the manager itself in-process for tests (the `testing` extra).
"""

import typing
import warnings

from jobnik_protocol.process import tune_gc

from . import _models
from ._backoff import Backoff
from ._client import ConsumerClient, JobnikClient
from ._consumer import ClaimedTasks
from ._context import TaskContext
from ._exceptions import (
    ApiError,
    AuthenticationError,
    ConflictError,
    IllegalTransitionError,
    JobnikError,
    JobnikTransportError,
    JobnikValidationError,
    LeaseLostError,
    NonRetryableError,
    NotFoundError,
    PermissionDeniedError,
    RetryLaterError,
    TaskOutcome,
    WaitTimeoutError,
)
from ._handler import Handler
from ._logs import TaskLogFilter
from ._models import *  # noqa: F403 (the entities: _models.__all__)
from ._reports import (
    HeartbeatAnswer,
    HeartbeatOutcome,
    ReportError,
    ReportOutcome,
    TaskHeartbeat,
    TaskReport,
)
from ._retry import RequestRetryPolicy
from ._settings import WorkerSettings
from ._version import __version__
from ._worker import Worker

__all__ = [
    "ApiError",
    "AuthenticationError",
    "Backoff",
    "ClaimedTasks",
    "ConflictError",
    "ConsumerClient",
    "Handler",
    "HeartbeatAnswer",
    "HeartbeatOutcome",
    "IllegalTransitionError",
    "JobnikClient",
    "JobnikError",
    "JobnikTransportError",
    "JobnikValidationError",
    "LeaseLostError",
    "NonRetryableError",
    "NotFoundError",
    "PermissionDeniedError",
    "ReportError",
    "ReportOutcome",
    "RequestRetryPolicy",
    "RetryLaterError",
    "TaskContext",
    "TaskHeartbeat",
    "TaskLogFilter",
    "TaskOutcome",
    "TaskReport",
    "WaitTimeoutError",
    "Worker",
    "WorkerSettings",
    "__version__",
    "tune_gc",
]
__all__ += _models.__all__

# Old names, kept for one release: each was also the name of another library's class
# (httpx's TransportError, pydantic's ValidationError) or of the manager's own.
_DEPRECATED = {
    "Heartbeat": "HeartbeatAnswer",
    "RetryPolicy": "RequestRetryPolicy",
    "TransportError": "JobnikTransportError",
    "ValidationError": "JobnikValidationError",
}

if typing.TYPE_CHECKING:  # what the old names are, for type checkers
    Heartbeat = HeartbeatAnswer
    RetryPolicy = RequestRetryPolicy
    TransportError = JobnikTransportError
    ValidationError = JobnikValidationError


def __getattr__(name: str) -> object:
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"jobnik_sdk.{name} is deprecated and will be removed in the next release; "
        f"use jobnik_sdk.{new}",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
