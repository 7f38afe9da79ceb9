"""TaskContext: what a handler knows about its task, and what it may do besides return."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, MutableMapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ._logs import TaskIds
from ._models import Event, EventLevel, Job, JobAsset, NewAsset, Stage, Task

if TYPE_CHECKING:
    from ._client import ConsumerClient

PROGRESS_KEY = "progress"
_HANDLER_LOGGER = logging.getLogger("jobnik_sdk.handler")


class _TaskLogger(logging.LoggerAdapter[logging.Logger]):
    def __init__(self, logger: logging.Logger, ids: TaskIds) -> None:
        super().__init__(logger, ids.extra)
        self._ids = ids

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return f"[{self._ids.name}] {msg}", kwargs


class TaskContext:
    """The claimed task with its job and stage, a logger that names the task, and
    helpers that record progress and write the task's user metadata on the manager.

    Workers build it for each task, with `on_progress` handing progress to the task's
    heartbeat; tests build one with `testing.make_context`. A Worker reads `job` and
    `stage` once for the tasks that start within a few seconds of each other, so they
    may be that old; read them through the client when the handler needs them fresh.
    """

    def __init__(
        self,
        *,
        task: Task,
        job: Job,
        stage: Stage,
        client: ConsumerClient,
        logger: logging.Logger | None = None,
        on_progress: Callable[[int, str | None], None] | None = None,
    ) -> None:
        self.task = task
        self.job = job
        self.stage = stage
        # The adapter is made when first used: a Worker makes a context for every task.
        self._base_logger = logger or _HANDLER_LOGGER
        self._logger: logging.LoggerAdapter[logging.Logger] | None = None
        self._client = client
        self._on_progress = on_progress
        self._user_metadata: dict[str, Any] = dict(task.user_metadata)

    @property
    def logger(self) -> logging.LoggerAdapter[logging.Logger]:
        """A logger whose lines name the task, its job and its stage type, in the text
        and as record attributes (`task_id`, `job_id`, `stage_type`)."""
        if self._logger is None:
            ids = TaskIds(self.task.id, self.job.id, self.stage.type)
            self._logger = _TaskLogger(self._base_logger, ids)
        return self._logger

    @logger.setter
    def logger(self, logger: logging.LoggerAdapter[logging.Logger]) -> None:
        self._logger = logger

    def _logs_at(self, level: int) -> bool:
        """Whether `logger` writes lines of `level`, without making the logger."""
        return (self._logger or self._base_logger).isEnabledFor(level)

    @property
    def attempt(self) -> int:
        """Which attempt this is, from 1: one more than the failed attempts so far."""
        return self.task.attempts + 1

    @property
    def user_metadata(self) -> Mapping[str, Any]:
        """The task's user metadata as this context last wrote (or first read) it."""
        return MappingProxyType(self._user_metadata)

    async def set_user_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Replace the task's user metadata on the manager."""
        new = dict(metadata)
        await self._client.set_task_user_metadata(self.task.id, new)
        self._user_metadata = new

    async def update_progress(
        self, percentage: int, *, message: str | None = None, **details: Any
    ) -> None:
        """Record how far the handler got (0..100), and what it is at in words.

        In a Worker the percentage (and `message`, up to 500 characters) goes out with
        the task's next heartbeat, which is sent early for it (within a second), and
        becomes the task's `progress` (and `progress_message`). The percentage is also
        written, as before, to the task's user metadata as `progress` along with any
        `details`; other metadata keys are kept.
        """
        if not 0 <= percentage <= 100:
            raise ValueError("progress is a percentage between 0 and 100")
        if message is not None and len(message) > 500:
            raise ValueError("a progress message is at most 500 characters")
        if self._on_progress is not None:
            self._on_progress(percentage, message)
        await self.set_user_metadata({**self._user_metadata, PROGRESS_KEY: percentage, **details})

    async def add_asset(
        self, type: str, uri: str, *, size_bytes: int | None = None, name: str | None = None
    ) -> JobAsset:
        """Record an output of the job made by this task: its `type` (yours to name), where
        it is (`uri`: a URL or a path) and, when known, its size and a name. Listed with
        the job (`list_job_assets`, `jobnik jobs show`, the dashboard). Sent under the
        task's lease."""
        asset = NewAsset(type=type, uri=uri, size_bytes=size_bytes, name=name)
        (added,) = await self._client.add_task_assets(
            self.task.id, [asset], lease_id=self.task.lease_id
        )
        return added

    async def set_job_result(self, result: Mapping[str, Any]) -> Job:
        """Set what the job produced, as a JSON object (the last one set stands), beside
        this task's own result (what the handler returns). Sent under the task's lease."""
        return await self._client.set_job_result(self.task.id, result, lease_id=self.task.lease_id)

    async def emit(
        self, name: str, message: str | None = None, *, level: EventLevel = "info", **fields: Any
    ) -> Event:
        """Add an entry to the job's history, beside the status changes: `name`, and
        optionally a `message`, a `level` (info, warning or error) and `fields` (JSON
        values, 16 KiB at most). Sent under the task's lease."""
        return await self._client.add_task_event(
            self.task.id,
            name,
            lease_id=self.task.lease_id,
            message=message,
            level=level,
            fields=fields or None,
        )
