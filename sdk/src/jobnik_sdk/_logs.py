"""The Worker's log lines: each says which worker (its stage types) and, about a task,
which task of which job and stage type, in the text and as record attributes.

While a task's handler runs, its ids are also the current task's (a context variable,
so tasks running at once in one process each have their own): the Worker's lines
logged from there name it without being told, and `TaskLogFilter` gives the records of
any other logger (the handler's own module's, say) the same attributes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

Log = logging.Logger | logging.LoggerAdapter[logging.Logger]

# The attributes a record about a task carries; empty strings where one is not known.
TASK_ATTRIBUTES = ("task_id", "job_id", "stage_type")


@dataclass(frozen=True, slots=True)
class TaskIds:
    """Which task a log line is about: its id and, once known, its job's and stage type."""

    task_id: uuid.UUID
    job_id: uuid.UUID | None = None
    stage_type: str | None = None

    @property
    def name(self) -> str:
        """How a line's text names the task: `<stage type> task <id> of job <id>`."""
        kind = f"{self.stage_type} " if self.stage_type else ""
        job = f" of job {self.job_id}" if self.job_id is not None else ""
        return f"{kind}task {self.task_id}{job}"

    @property
    def extra(self) -> dict[str, str]:
        """The record attributes (`task_id`, `job_id`, `stage_type`), as `extra`."""
        return {
            "task_id": str(self.task_id),
            "job_id": str(self.job_id) if self.job_id is not None else "",
            "stage_type": self.stage_type or "",
        }


_current: ContextVar[TaskIds | None] = ContextVar("jobnik_sdk_task", default=None)


def current_task() -> TaskIds | None:
    """The task whose handler runs in this context (asyncio task), if any."""
    return _current.get()


class task_logging:
    """Make `ids` the current task's for what runs inside (and the asyncio tasks it
    starts), until the block ends. A class rather than a generator: a Worker enters
    one for every task it runs."""

    __slots__ = ("_ids", "_token")

    def __init__(self, ids: TaskIds) -> None:
        self._ids = ids

    def __enter__(self) -> None:
        self._token = _current.set(self._ids)

    def __exit__(self, *exc_info: object) -> None:
        _current.reset(self._token)


class TaskLogFilter(logging.Filter):
    """Gives each record the attributes `task_id`, `job_id` and `stage_type` of the task
    whose handler was running where it was logged, and empty strings outside one, so a
    format or a JSON formatter can always name them. Attributes a record already has
    (the Worker's own lines set them) are kept.

    Attach it to a handler (`logging.Handler.addFilter`) to cover every logger whose
    records that handler writes: a logger's own filters see only its own records.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Set the current task's ids on `record`; never leaves a record out."""
        ids = _current.get()
        extra = ids.extra if ids is not None else dict.fromkeys(TASK_ATTRIBUTES, "")
        for key, value in extra.items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class WorkerLog(logging.LoggerAdapter[logging.Logger]):
    """Prefixes each line with the worker's stage types, and gives the record a
    `stage_types` attribute (as `extra`) for formatters that want it, and `worker` (its
    name) when given; a line logged while a task's handler runs also gets that task's
    attributes."""

    def __init__(
        self, logger: logging.Logger, stage_types: list[str], worker: str | None = None
    ) -> None:
        extra = {"stage_types": ",".join(stage_types)}
        if worker is not None:
            extra["worker"] = worker
        super().__init__(logger, extra)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, Any]:
        extra = dict(self.extra or {})
        ids = _current.get()
        task = ids.extra if ids is not None else {}
        kwargs["extra"] = {**extra, **task, **kwargs.get("extra", {})}
        return f"[worker {extra['stage_types']}] {msg}", kwargs
