"""Jobnik SDK: an async client for the Jobnik manager, and a Worker that runs handlers.

    async with JobnikClient("http://127.0.0.1:8080") as client:
        job = await client.create_job("render", stages=[NewStage(type="tile", tasks=[...])])
        done = await client.wait(job.id)

    async def render(tile: Tile, ctx: TaskContext) -> dict[str, int]: ...
    await Worker("http://127.0.0.1:8080", stage_types="tile", handler=render).run()

`jobnik_sdk.testing` has an in-memory fake manager for unit tests.
"""

from ._backoff import Backoff
from ._client import JobnikClient
from ._consumer import ClaimedTasks, ConsumerClient
from ._context import TaskContext
from ._exceptions import (
    ApiError,
    ConflictError,
    IllegalTransitionError,
    JobnikError,
    LeaseLostError,
    NonRetryableError,
    NotFoundError,
    RetryLaterError,
    TransportError,
    ValidationError,
    WaitTimeoutError,
)
from ._handler import Handler
from ._models import (
    Event,
    Job,
    JobStatus,
    NewStage,
    NewTask,
    Page,
    Priority,
    Stage,
    StageStatus,
    Summary,
    Task,
    TaskRetryPolicy,
    TaskStatus,
)
from ._reports import (
    Heartbeat,
    HeartbeatOutcome,
    ReportError,
    ReportOutcome,
    TaskHeartbeat,
    TaskReport,
)
from ._retry import RetryPolicy
from ._version import __version__
from ._worker import Worker

__all__ = [
    "ApiError",
    "Backoff",
    "ClaimedTasks",
    "ConflictError",
    "ConsumerClient",
    "Event",
    "Handler",
    "Heartbeat",
    "HeartbeatOutcome",
    "IllegalTransitionError",
    "Job",
    "JobStatus",
    "JobnikClient",
    "JobnikError",
    "LeaseLostError",
    "NewStage",
    "NewTask",
    "NonRetryableError",
    "NotFoundError",
    "Page",
    "Priority",
    "ReportError",
    "ReportOutcome",
    "RetryLaterError",
    "RetryPolicy",
    "Stage",
    "StageStatus",
    "Summary",
    "Task",
    "TaskContext",
    "TaskHeartbeat",
    "TaskReport",
    "TaskRetryPolicy",
    "TaskStatus",
    "TransportError",
    "ValidationError",
    "WaitTimeoutError",
    "Worker",
    "__version__",
]
