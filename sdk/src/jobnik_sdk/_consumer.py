"""Calls a worker makes: claim tasks, keep their leases, report how they went."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, TypedDict, Unpack

from pydantic import ConfigDict, Field

from ._exceptions import NotFoundError
from ._http import Http
from ._models import (
    EntityId,
    Event,
    EventLevel,
    Job,
    JobAsset,
    NewAsset,
    Stage,
    Task,
    _Wire,
    given,
    seconds,
    wire,
)
from ._reports import (
    HeartbeatAnswer,
    HeartbeatOutcome,
    ReportOutcome,
    TaskHeartbeat,
    TaskReport,
)

# The longest a claim may wait for work, by the manager's limits.
MAX_CLAIM_WAIT = timedelta(seconds=60)


class ClaimOptions(TypedDict, total=False):
    """`claim`'s options, which `claim_with_context` takes too."""

    limit: int
    lease: timedelta | None
    worker: str | None
    wait: timedelta | None


# Batch answers are parsed straight from the body's bytes, in one pass.
class _Claimed(_Wire):
    items: list[Task]
    # Extension: a stage type's limit held tasks back; claim again after this long.
    retry_after_seconds: float | None = None


class ClaimedTasks(_Wire):
    """A claim's answer with its context: the claimed tasks (`items`), and their stages
    (without tasks) and jobs (without stages), each once."""

    items: list[Task]
    stages: list[Stage] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)
    # A stage type's limit held tasks back (docs/api-extensions.md, "Stage types"):
    # more may be handed out after this many seconds, whatever wakes the worker.
    retry_after_seconds: float | None = None


class _Renewed(_Wire):
    items: list[HeartbeatOutcome]


class _Assets(_Wire):
    items: list[JobAsset]


class _Settled(_Wire):
    items: list[ReportOutcome]


class _OutcomeBriefly(ReportOutcome):
    # The answer's `task` is skipped unread: only a key named as this alias (none) would
    # fill it. Parsed as outcomes in one pass, with no Python per item.
    model_config = ConfigDict(populate_by_name=False)
    task: Task | None = Field(default=None, validation_alias="-")


class _SettledBriefly(_Wire):
    items: list[_OutcomeBriefly]


class ConsumerCalls:
    """The consumer half of JobnikClient.

    A claim takes a lease on each task it returns (`Task.lease_id`, valid until
    `Task.lease_expires_at`). Keep it with `heartbeat` and name it in the report; a
    lease that runs out counts as a failed attempt, and the manager offers the task
    again. Without `lease`, the manager's default (30 minutes) applies, and reports
    that name no lease are checked as in the reference API.
    """

    _http: Http

    async def dequeue(
        self, stage_type: str, *, lease: timedelta | None = None, worker: str | None = None
    ) -> Task | None:
        """Claim the next ready task of this stage type (it becomes IN_PROGRESS), or None.

        `lease` (1 second to 7 days) is how long the claim holds without a heartbeat;
        `worker` (1 to 100 characters) names the claimer on the task and its events.
        Never sent twice once it may have reached the manager: a claim whose answer was
        lost would leave a task held by nobody until its lease ran out.
        """
        try:
            response = await self._http.request(
                "PATCH",
                f"/v1/stages/{stage_type}/tasks/dequeue",
                params={
                    "lease_seconds": seconds(lease) if lease is not None else None,
                    "worker": worker,
                },
                claims=True,
            )
        except NotFoundError as exc:
            if exc.code == "TASK_NOT_FOUND":
                return None
            raise
        return Task.model_validate(response.json())

    async def claim(
        self,
        stage_types: str | Sequence[str],
        *,
        limit: int = 1,
        lease: timedelta | None = None,
        worker: str | None = None,
        wait: timedelta | None = None,
    ) -> list[Task]:
        """Claim up to `limit` (1 to 100) ready tasks of any of `stage_types` (1 to 20),
        highest job priority first, then oldest; an empty list when none is ready.

        `wait` (up to 60 seconds) makes the claim a long poll: when nothing is ready,
        the manager holds the call for up to that long and answers as soon as tasks of
        these types become ready. A manager without long polls refuses it
        (JobnikValidationError). `lease` and `worker` as for `dequeue`, and like it never
        sent twice once it may have reached the manager.
        """
        body = _claim_body(stage_types, limit, lease, worker, wait)
        response = await self._http.request(
            "POST", "/v1/tasks/claim", json=body, claims=True, held_for=wait
        )
        return _Claimed.model_validate_json(response.content).items

    async def claim_with_context(
        self, stage_types: str | Sequence[str], **options: Unpack[ClaimOptions]
    ) -> ClaimedTasks:
        """As `claim` (with its options), with the claimed tasks' stages and jobs in the
        same answer, so that running them needs no further reads. A manager that cannot
        answer with them refuses the call (JobnikValidationError), and nothing is
        claimed."""
        body = _claim_body(
            stage_types,
            options.get("limit", 1),
            options.get("lease"),
            options.get("worker"),
            options.get("wait"),
        )
        body["withContext"] = True
        response = await self._http.request(
            "POST", "/v1/tasks/claim", json=body, claims=True, held_for=options.get("wait")
        )
        return ClaimedTasks.model_validate_json(response.content)

    async def heartbeat(
        self,
        task_id: EntityId,
        lease_id: EntityId,
        *,
        progress: int | None = None,
        message: str | None = None,
        lease: timedelta | None = None,
    ) -> HeartbeatAnswer:
        """Extend the task's lease by `lease` (by default, the length it was taken for),
        and record `progress` (0 to 100) and `message` (what the work is at, in words) on
        the task.

        Raises LeaseLostError when the lease is no longer the task's. When the answer's
        `cancel_requested` is True the task was aborted: stop, and do not report it.
        """
        body = given(
            leaseId=lease_id, progress=progress, message=message, leaseSeconds=seconds(lease)
        )
        response = await self._http.request(
            "POST", f"/v1/tasks/{task_id}/heartbeat", json=body, repeatable=True
        )
        return HeartbeatAnswer.model_validate(response.json())

    async def heartbeat_many(
        self, heartbeats: Sequence[TaskHeartbeat], *, lease: timedelta | None = None
    ) -> list[HeartbeatOutcome]:
        """Renew up to 100 leases in one call, each by `lease` (by default, the length
        it was taken for). Each stands on its own: the answer holds, in order, the
        renewed lease or the error of each (LEASE_LOST, TASK_NOT_FOUND, ...), and an
        error raises nothing. `cancel_requested` in an answer means as for `heartbeat`.
        """
        body = given(heartbeats=[beat.body() for beat in heartbeats], leaseSeconds=seconds(lease))
        response = await self._http.request(
            "POST", "/v1/tasks/heartbeats", json=body, repeatable=True
        )
        return _Renewed.model_validate_json(response.content).items

    async def add_task_event(
        self,
        task_id: EntityId,
        name: str,
        *,
        lease_id: EntityId | None = None,
        message: str | None = None,
        level: EventLevel = "info",
        fields: Mapping[str, Any] | None = None,
    ) -> Event:
        """Add an entry to the task's job history (`list_events` answers it among the
        status changes). While the task runs, only under its lease (`lease_id`)."""
        body = given(
            name=name,
            level=level,
            leaseId=lease_id,
            message=message,
            fields=None if fields is None else dict(fields),
        )
        # With a key of its own (when keys are automatic) it is retried like a create,
        # so a handler's entry rides out a manager or database restart.
        created = await self._http.create(f"/v1/tasks/{task_id}/events", body, idempotency_key=None)
        return Event.model_validate(created)

    async def add_task_assets(
        self,
        task_id: EntityId,
        assets: Sequence[NewAsset],
        *,
        lease_id: EntityId | None = None,
    ) -> list[JobAsset]:
        """Record outputs of the task's job (up to 100 a call), as made by this task.
        While the task runs, only under its lease (`lease_id`)."""
        body = given(assets=[wire(asset) for asset in assets], leaseId=lease_id)
        # Retried like a create, under a key of its own: a retry records nothing twice.
        created = await self._http.create(f"/v1/tasks/{task_id}/assets", body, idempotency_key=None)
        return _Assets.model_validate(created).items

    async def set_job_result(
        self,
        task_id: EntityId,
        result: Mapping[str, Any],
        *,
        lease_id: EntityId | None = None,
    ) -> Job:
        """Set the result of the task's job (a JSON object; the last one set stands);
        answers the job. While the task runs, only under its lease (`lease_id`)."""
        body = given(result=dict(result), leaseId=lease_id)
        response = await self._http.request(
            "PUT", f"/v1/tasks/{task_id}/job-result", json=body, repeatable=True
        )
        return Job.model_validate_json(response.content)

    async def complete(
        self,
        task_id: EntityId,
        *,
        lease_id: EntityId | None = None,
        result: dict[str, Any] | None = None,
    ) -> Task:
        """Report an IN_PROGRESS task COMPLETED, with `result` (a JSON object) stored on it.

        With `lease_id`, the report counts only while that lease holds (LeaseLostError
        otherwise); repeating it for the same lease answers the task again.
        """
        return await self._report(TaskReport.completed(task_id, lease_id=lease_id, result=result))

    async def fail(
        self,
        task_id: EntityId,
        *,
        lease_id: EntityId | None = None,
        reason: str | None = None,
        retryable: bool = True,
        error_type: str | None = None,
    ) -> Task:
        """Report an IN_PROGRESS task FAILED. The manager offers it again (RETRIED, after
        its retry policy's delay) while attempts remain, and fails it for good otherwise,
        or at once with `retryable=False` or an `error_type` its retry policy names as
        not to be retried. `reason` (up to 2000 characters) is stored."""
        report = TaskReport.failed(
            task_id, lease_id=lease_id, reason=reason, retryable=retryable, error_type=error_type
        )
        return await self._report(report)

    async def retry_later(
        self,
        task_id: EntityId,
        *,
        delay: timedelta,
        lease_id: EntityId | None = None,
        reason: str | None = None,
    ) -> Task:
        """Hand an IN_PROGRESS task back, to be offered again after `delay`, without
        spending an attempt (it becomes RETRIED with `not_before` set)."""
        report = TaskReport.retry_later(task_id, delay=delay, lease_id=lease_id, reason=reason)
        return await self._report(report)

    async def report_many(
        self, reports: Sequence[TaskReport], *, with_tasks: bool = True
    ) -> list[ReportOutcome]:
        """Settle up to 100 tasks in one call. Each report stands on its own: the answer
        holds, in order, the task or the error of each (a refused report raises nothing
        and undoes no other). With `with_tasks=False` the tasks are left out of the
        outcomes (`task` is None), sparing the time to read them."""
        body: dict[str, Any] = {
            "reports": [{"taskId": str(r.task_id), **r.body()} for r in reports]
        }
        if not with_tasks:
            body["withTasks"] = False  # nor does the manager encode them
        response = await self._http.request("POST", "/v1/tasks/reports", json=body, repeatable=True)
        settled = _Settled if with_tasks else _SettledBriefly
        return list(settled.model_validate_json(response.content).items)

    async def _report(self, report: TaskReport) -> Task:
        response = await self._http.request(
            "PUT", f"/v1/tasks/{report.task_id}/status", json=report.body()
        )
        return Task.model_validate(response.json())


def _claim_body(
    stage_types: str | Sequence[str],
    limit: int,
    lease: timedelta | None,
    worker: str | None,
    wait: timedelta | None,
) -> dict[str, Any]:
    types = [stage_types] if isinstance(stage_types, str) else list(stage_types)
    return given(
        stageTypes=types,
        limit=limit,
        leaseSeconds=seconds(lease),
        worker=worker,
        waitSeconds=seconds(wait),
    )
