"""Calls a worker makes: claim a task, report how it went."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ._exceptions import NotFoundError
from ._http import Http
from ._models import EntityId, Job, Stage, Task, TaskStatus


class ConsumerCalls:
    """The consumer half of JobnikClient."""

    _http: Http

    async def dequeue(self, stage_type: str) -> Task | None:
        """Claim the next ready task of this stage type (it becomes IN_PROGRESS), or None.

        Never sent twice once it may have reached the manager: a claim whose answer was
        lost would leave a task IN_PROGRESS with nobody running it.
        """
        try:
            response = await self._http.request(
                "PATCH", f"/v1/stages/{stage_type}/tasks/dequeue", claims=True
            )
        except NotFoundError as exc:
            if exc.code == "TASK_NOT_FOUND":
                return None
            raise
        return Task.model_validate(response.json())

    async def complete(self, task_id: EntityId) -> Task:
        """Report an IN_PROGRESS task COMPLETED."""
        return await self._report(task_id, TaskStatus.COMPLETED)

    async def fail(self, task_id: EntityId) -> Task:
        """Report an IN_PROGRESS task FAILED. The manager offers it again (RETRIED) while
        attempts remain, and fails it for good otherwise."""
        return await self._report(task_id, TaskStatus.FAILED)

    async def _report(self, task_id: EntityId, status: TaskStatus) -> Task:
        response = await self._http.request(
            "PUT", f"/v1/tasks/{task_id}/status", json={"status": status}
        )
        return Task.model_validate(response.json())


class ConsumerClient(Protocol):
    """What a Worker needs from a client; JobnikClient and testing.FakeJobnik provide it."""

    async def dequeue(self, stage_type: str) -> Task | None:
        """Claim the next ready task of the stage type, or None."""
        ...

    async def complete(self, task_id: EntityId) -> Task:
        """Report the task COMPLETED."""
        ...

    async def fail(self, task_id: EntityId) -> Task:
        """Report the task FAILED."""
        ...

    async def get_job(self, job_id: EntityId, *, with_stages: bool = False) -> Job:
        """One job."""
        ...

    async def get_stage(self, stage_id: EntityId, *, with_tasks: bool = False) -> Stage:
        """One stage."""
        ...

    async def set_task_user_metadata(self, task_id: EntityId, metadata: Mapping[str, Any]) -> None:
        """Replace the task's user metadata."""
        ...

    async def aclose(self) -> None:
        """Release the client's resources."""
        ...
