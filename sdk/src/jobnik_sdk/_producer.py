"""Calls that create, steer, read and remove jobs, stages and tasks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypedDict, TypeVar, Unpack
from urllib.parse import quote

from ._http import Http, ParamValue
from ._models import (
    DeadLetter,
    DeadLettersHandled,
    EntityId,
    Event,
    Job,
    JobAsset,
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
    given,
    read_summary,
    seconds,
    wire,
)
from ._pages import iterate_filtered, iterate_pages
from ._tracing import trace_fields
from ._waiting import ProgressCallback, wait_for_job

P = TypeVar("P", bound=Page[Any])


class JobFilters(TypedDict, total=False):
    """The filters of `list_jobs` and `iter_jobs`; each left out (or None) lets any
    job through."""

    name: str | None  # the exact name
    from_date: datetime | None  # created at or after
    end_date: datetime | None  # created at or before
    priority: Priority | None
    status: JobStatus | Sequence[JobStatus] | None  # one, or any of several
    with_stages: bool  # answer each job with its stages (default False)
    # Extensions of this manager:
    id_prefix: str | None  # the first hex digits of the id (as the dashboard shows ids)
    newest_first: bool  # the newest first (default False: the oldest first)
    name_contains: str | None  # part of the name, in any case


class StageFilters(TypedDict, total=False):
    """The filters of `list_stages` and `iter_stages`."""

    job_id: EntityId | None
    stage_type: str | None
    status: StageStatus | None
    with_tasks: bool  # answer each stage with its tasks (default False)


class TaskFilters(TypedDict, total=False):
    """The filters of `list_tasks` and `iter_tasks`."""

    stage_id: EntityId | None
    stage_type: str | None
    status: TaskStatus | None
    from_date: datetime | None  # created at or after
    end_date: datetime | None  # created at or before


class ProducerCalls:
    """The producer half of JobnikClient."""

    _http: Http
    # A fake manager in memory is polled more often (testing.FakeJobnik).
    _wait_poll_interval = timedelta(seconds=1)

    # ---- create -------------------------------------------------------------------------

    async def create_job(
        self,
        name: str,
        data: Mapping[str, Any] | None = None,
        *,
        priority: Priority = Priority.MEDIUM,
        user_metadata: Mapping[str, Any] | None = None,
        stages: Sequence[NewStage] | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        idempotency_key: str | None = None,
        not_before: datetime | None = None,
        deadline: datetime | None = None,
        return_tasks: bool = True,
        unique_key: str | None = None,
        unique_window: timedelta | None = None,
        expires_at: datetime | None = None,
    ) -> Job:
        """Create a job, optionally with its stages and their tasks in one transaction.

        With `stages`, the returned job carries them (and their tasks). Every create call
        carries an `Idempotency-Key` (`idempotency_key`, or a fresh one per call when the
        client's `auto_idempotency_keys` is on), so a retry after a lost answer returns
        the first answer instead of creating the job twice. `not_before` (an aware
        datetime) holds all its tasks back until then; past `deadline`, a job not final
        is failed ("deadline exceeded"). Without `traceparent`, the job carries the
        current OpenTelemetry context (W3C), if it has a span: its tasks' runs are
        then spans of the caller's trace. With `return_tasks=False` the returned stages
        carry no tasks (their summaries count them): a create of many tasks then costs
        neither side the encoding and parsing of each.

        With `expires_at` (an aware datetime still to come), none of its tasks is handed
        out from then on, and the job is aborted ("expired") if none of them started.

        With `unique_key`, one job per key: while the job holding the key is not final
        (or, with `unique_window`, until that long after its creation) the call makes
        nothing and returns that job, stages and all; its `unique_key` says so.
        """
        body = given(
            name=name,
            data=dict(data or {}),
            priority=priority,
            uniqueKey=unique_key,
            uniqueWindowSeconds=seconds(unique_window),
            userMetadata=None if user_metadata is None else dict(user_metadata),
        )
        times = (("notBefore", not_before), ("deadline", deadline), ("expiresAt", expires_at))
        for key, time in times:
            if time is not None:
                body[key] = _aware(time, key).isoformat()
        if stages:
            body["stages"] = [wire(stage) for stage in stages]
        body.update(trace_fields(traceparent, tracestate))
        created = await self._http.create(
            "/v1/jobs", body, idempotency_key=idempotency_key, params=_tasks_param(return_tasks)
        )
        return Job.model_validate(created)

    async def add_stage(
        self,
        job_id: EntityId,
        stage_type: str,
        data: Mapping[str, Any] | None = None,
        *,
        start_as_waiting: bool = False,
        tasks: Sequence[NewTask] | None = None,
        user_metadata: Mapping[str, Any] | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        retry_policy: TaskRetryPolicy | None = None,
        idempotency_key: str | None = None,
        allowed_failures: int | None = None,
        timeout_seconds: float | None = None,
        return_tasks: bool = True,
    ) -> Stage:
        """Append a stage to a job. With `start_as_waiting` it stays WAITING after the
        stage before it completes, until `approve_stage`. `retry_policy` and
        `timeout_seconds` are the defaults of its tasks that bring none;
        `allowed_failures` tasks may fail for good with the stage still completing.
        Without `traceparent`, the current OpenTelemetry context's, if any. With
        `return_tasks=False` the returned stage carries no tasks."""
        trace = trace_fields(traceparent, tracestate)
        spec = NewStage(
            type=stage_type,
            data=dict(data or {}),
            start_as_waiting=start_as_waiting,
            tasks=tasks or None,
            user_metadata=dict(user_metadata) if user_metadata is not None else None,
            traceparent=trace.get("traceparent"),
            tracestate=trace.get("tracestate"),
            retry_policy=retry_policy,
            allowed_failures=allowed_failures,
            timeout_seconds=timeout_seconds,
        )
        created = await self._http.create(
            f"/v1/jobs/{job_id}/stage",
            wire(spec),
            idempotency_key=idempotency_key,
            params=_tasks_param(return_tasks),
        )
        return Stage.model_validate(created)

    async def add_tasks(
        self,
        stage_id: EntityId,
        tasks: Sequence[NewTask],
        *,
        retry_policy: TaskRetryPolicy | None = None,
        idempotency_key: str | None = None,
    ) -> list[Task]:
        """Add tasks to a CREATED, WAITING or PENDING stage. `retry_policy` goes to each
        task that brings none (and those get the stage's policy without it). Tasks
        without a `traceparent` get the current OpenTelemetry context's, if any."""
        tasks = with_trace(with_retry_policy(tasks, retry_policy))
        created = await self._http.create(
            f"/v1/stages/{stage_id}/tasks",
            [wire(task) for task in tasks],
            idempotency_key=idempotency_key,
        )
        return [Task.model_validate(item) for item in created]

    # ---- steer --------------------------------------------------------------------------

    async def approve_stage(self, stage_id: EntityId) -> None:
        """Let a WAITING (or CREATED) stage run; the stage before it must be COMPLETED."""
        await self._http.request(
            "PUT", f"/v1/stages/{stage_id}/status", json={"status": StageStatus.PENDING}
        )

    async def pause(self, job_id: EntityId) -> None:
        """Stop handing out the job's tasks; running tasks may still report."""
        await self._set_job_status(job_id, JobStatus.PAUSED)

    async def resume(self, job_id: EntityId) -> None:
        """Resume a paused job; it returns to the status its stages imply."""
        await self._set_job_status(job_id, JobStatus.PENDING)

    async def abort(self, job_id: EntityId) -> None:
        """Abort the job: its unfinished stages and tasks become ABORTED."""
        await self._set_job_status(job_id, JobStatus.ABORTED)

    async def retry_job(self, job_id: EntityId) -> Job:
        """Run a FAILED job's failed stage again: its FAILED and ABORTED tasks get a fresh
        set of attempts. ConflictError (JOB_NOT_FAILED) for a job that is not FAILED."""
        response = await self._http.request("POST", f"/v1/jobs/{job_id}/retry")
        return Job.model_validate(response.json())

    async def cancel_task(self, task_id: EntityId, *, reason: str | None = None) -> Task:
        """Cancel one task that is not final (ABORTED, no attempt spent): its holder, if it
        runs, hears of it at its next heartbeat. Its stage completes without it."""
        body = given(status=TaskStatus.ABORTED, reason=reason)
        response = await self._http.request("PUT", f"/v1/tasks/{task_id}/status", json=body)
        return Task.model_validate(response.json())

    async def _set_job_status(self, job_id: EntityId, status: JobStatus) -> None:
        await self._http.request("PUT", f"/v1/jobs/{job_id}/status", json={"status": status})

    async def set_priority(self, job_id: EntityId, priority: Priority) -> bool:
        """Change the job's priority; False when it already had this one."""
        response = await self._http.request(
            "PATCH", f"/v1/jobs/{job_id}/priority", json={"priority": priority}
        )
        return response.status_code != 204

    async def set_job_user_metadata(self, job_id: EntityId, metadata: Mapping[str, Any]) -> None:
        """Replace the job's user metadata with `metadata`."""
        await self._http.request("PATCH", f"/v1/jobs/{job_id}/user-metadata", json=dict(metadata))

    async def set_stage_user_metadata(
        self, stage_id: EntityId, metadata: Mapping[str, Any]
    ) -> None:
        """Replace the stage's user metadata with `metadata`."""
        await self._http.request(
            "PATCH", f"/v1/stages/{stage_id}/user-metadata", json=dict(metadata)
        )

    async def set_task_user_metadata(self, task_id: EntityId, metadata: Mapping[str, Any]) -> None:
        """Replace the task's user metadata with `metadata`."""
        await self._http.request("PATCH", f"/v1/tasks/{task_id}/user-metadata", json=dict(metadata))

    async def delete_job(self, job_id: EntityId) -> None:
        """Delete a COMPLETED, FAILED or ABORTED job with its stages and tasks."""
        await self._http.request("DELETE", f"/v1/jobs/{job_id}")

    # ---- read ---------------------------------------------------------------------------

    async def get_job(self, job_id: EntityId, *, with_stages: bool = False) -> Job:
        """One job; with `with_stages`, its stages in order."""
        response = await self._http.request(
            "GET", f"/v1/jobs/{job_id}", params={"should_return_stages": with_stages}
        )
        return Job.model_validate(response.json())

    async def get_job_stages(self, job_id: EntityId, *, with_tasks: bool = False) -> list[Stage]:
        """The job's stages in order; with `with_tasks`, each with its tasks."""
        response = await self._http.request(
            "GET", f"/v1/jobs/{job_id}/stages", params={"should_return_tasks": with_tasks}
        )
        return [Stage.model_validate(item) for item in response.json()]

    async def get_stage(self, stage_id: EntityId, *, with_tasks: bool = False) -> Stage:
        """One stage; with `with_tasks`, its tasks."""
        response = await self._http.request(
            "GET", f"/v1/stages/{stage_id}", params={"should_return_tasks": with_tasks}
        )
        return Stage.model_validate(response.json())

    async def get_summary(self, stage_id: EntityId) -> Summary:
        """The stage's task counts by status."""
        response = await self._http.request("GET", f"/v1/stages/{stage_id}/summary")
        return read_summary(response.json())

    async def get_task(self, task_id: EntityId) -> Task:
        """One task."""
        response = await self._http.request("GET", f"/v1/tasks/{task_id}")
        return Task.model_validate(response.json())

    async def list_jobs(
        self, *, page: int = 1, page_size: int = 10, **filters: Unpack[JobFilters]
    ) -> Page[Job]:
        """One page of jobs, oldest first (or newest first), filtered by exact name, id
        prefix, creation time, priority and status (one, or any of several): see
        JobFilters."""
        query = {
            "job_name": filters.get("name"),
            "from_date": filters.get("from_date"),
            "end_date": filters.get("end_date"),
            "priority": filters.get("priority"),
            "status": _statuses(filters.get("status")),
            "should_return_stages": filters.get("with_stages") or None,
            "id_prefix": filters.get("id_prefix"),
            "newest_first": filters.get("newest_first") or None,
            "name_contains": filters.get("name_contains"),
        }
        return await self._page(Page[Job], "/v1/jobs", page, page_size, query)

    async def list_stages(
        self, *, page: int = 1, page_size: int = 10, **filters: Unpack[StageFilters]
    ) -> Page[Stage]:
        """One page of stages, filtered by job, type and status: see StageFilters."""
        query = {
            "job_id": _id(filters.get("job_id")),
            "stage_type": filters.get("stage_type"),
            "stage_operation_status": filters.get("status"),
            "should_return_tasks": filters.get("with_tasks") or None,
        }
        return await self._page(Page[Stage], "/v1/stages", page, page_size, query)

    async def list_tasks(
        self, *, page: int = 1, page_size: int = 10, **filters: Unpack[TaskFilters]
    ) -> Page[Task]:
        """One page of tasks in creation order, filtered by stage, type, status, time:
        see TaskFilters."""
        query = {
            "stage_id": _id(filters.get("stage_id")),
            "stage_type": filters.get("stage_type"),
            "status": filters.get("status"),
            "from_date": filters.get("from_date"),
            "end_date": filters.get("end_date"),
        }
        return await self._page(Page[Task], "/v1/tasks", page, page_size, query)

    async def list_events(
        self, job_id: EntityId, *, page: int = 1, page_size: int = 10, newest_first: bool = False
    ) -> Page[Event]:
        """One page (up to 1000) of the job's event history: every status change of the
        job, its stages and its tasks, oldest first (with `newest_first`, the newest)."""
        query = {"newest_first": True} if newest_first else None
        return await self._page(Page[Event], f"/v1/jobs/{job_id}/events", page, page_size, query)

    async def list_stage_types(self) -> list[dict[str, Any]]:
        """The stage types with work in a stage that may run, by name, as the manager
        answers them (`GET /v1/stage-types`, an extension): `type`, `waiting` (ready to
        claim), `inFlight`, `expiring` (leases about to run out), `failed`,
        `oldestWaitingSeconds`, `paused`, and its limits when it has any (`maxInFlight`,
        `ratePerSecond`, `burst`)."""
        response = await self._http.request("GET", "/v1/stage-types")
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    async def pause_stage_type(self, stage_type: str) -> dict[str, Any]:
        """Hand out none of this stage type's tasks, in any job, until it is resumed
        (`PUT /v1/stage-types/{stageType}/pause`, an extension; an operator's or admin's
        token with auth on). Running tasks go on. Pausing it again changes nothing.
        The manager's answer: `type`, `paused`, `pausedAt`, `pausedBy`."""
        return await self._stage_type_pause("PUT", stage_type)

    async def resume_stage_type(self, stage_type: str) -> dict[str, Any]:
        """Hand this stage type's tasks out again, waking its waiting workers
        (`DELETE /v1/stage-types/{stageType}/pause`); one not paused is left as it is."""
        return await self._stage_type_pause("DELETE", stage_type)

    async def _stage_type_pause(self, method: str, stage_type: str) -> dict[str, Any]:
        return await self._stage_type_call(method, stage_type, "pause")

    async def limit_stage_type(
        self,
        stage_type: str,
        *,
        max_in_flight: int | None = None,
        rate_per_second: float | None = None,
        burst: int | None = None,
    ) -> dict[str, Any]:
        """Hand out at most `max_in_flight` of this stage type's tasks at once and
        `rate_per_second` a second (up to `burst` at once after a quiet spell), in every
        job, across every worker and manager replica (`PUT
        /v1/stage-types/{stageType}/limits`; an operator's or admin's token with auth
        on). Replaces the type's limits. The answer: `type`, `maxInFlight`,
        `ratePerSecond`, `burst`, `setAt`, `setBy`."""
        body = {"maxInFlight": max_in_flight, "ratePerSecond": rate_per_second, "burst": burst}
        given = {k: v for k, v in body.items() if v is not None}
        return await self._stage_type_call("PUT", stage_type, "limits", given)

    async def unlimit_stage_type(self, stage_type: str) -> dict[str, Any]:
        """Hand this stage type's tasks out without limits again."""
        return await self._stage_type_call("DELETE", stage_type, "limits")

    async def stage_type_flow(self, stage_type: str, *, minutes: int = 60) -> dict[str, Any]:
        """The stage type's tasks created, completed, failed and retried in each of the
        last `minutes` minutes (1 to 1440) and the current one, over all jobs, from the
        event log (`GET /v1/stage-types/{stageType}/flow`, an extension). The answer:
        `type`, `since`, and `minutes`, oldest first, each with `start`, `created`,
        `completed`, `failed` and `retried`."""
        return await self._stage_type_call("GET", stage_type, "flow", query={"minutes": minutes})

    async def _stage_type_call(
        self,
        method: str,
        stage_type: str,
        what: str,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        path = f"/v1/stage-types/{quote(stage_type, safe='')}/{what}"
        response = await self._http.request(method, path, json=body, params=query)
        answer: dict[str, Any] = response.json()
        return answer

    async def list_workers(self) -> list[dict[str, Any]]:
        """The named workers claiming now, by name, as the manager answers them (`GET
        /v1/workers`, an extension): `name`, `stageTypes`, `principal` (its token),
        `firstSeen`, `lastSeen` and `inFlight` (tasks it holds). A worker is listed
        while it claimed within the manager's window (a minute by default) or holds a
        task."""
        response = await self._http.request("GET", "/v1/workers")
        items: list[dict[str, Any]] = response.json()["items"]
        return items

    async def list_dead_letters(
        self,
        *,
        stage_type: str | None = None,
        job_id: EntityId | None = None,
        page: int = 1,
        page_size: int = 10,
    ) -> Page[DeadLetter]:
        """One page of the tasks that failed for good and were not discarded, the latest
        first, each with its job and failed attempts (`GET /v1/dead-letters`)."""
        query = {"stage_type": stage_type, "job_id": _id(job_id)}
        return await self._page(Page[DeadLetter], "/v1/dead-letters", page, page_size, query)

    async def retry_dead_letters(
        self, task_ids: Sequence[EntityId] | None = None, *, stage_type: str | None = None
    ) -> DeadLettersHandled:
        """Replay the FAILED job of each of these dead letters (up to 100 ids), or of every
        one of `stage_type`: their failed stages run again. An operator's or admin's
        token with auth on."""
        return await self._dead_letters("retry", task_ids, stage_type)

    async def discard_dead_letters(
        self, task_ids: Sequence[EntityId] | None = None, *, stage_type: str | None = None
    ) -> DeadLettersHandled:
        """Take these dead letters (or every one of `stage_type`) off the list, without
        retrying them; the tasks stay FAILED."""
        return await self._dead_letters("discard", task_ids, stage_type)

    async def _dead_letters(
        self, verb: str, task_ids: Sequence[EntityId] | None, stage_type: str | None
    ) -> DeadLettersHandled:
        ids = None if task_ids is None else [str(t) for t in task_ids]
        body = given(taskIds=ids, stageType=stage_type)
        response = await self._http.request("POST", f"/v1/dead-letters/{verb}", json=body)
        return DeadLettersHandled.model_validate_json(response.content)

    async def _page(
        self,
        kind: type[P],
        path: str,
        page: int,
        page_size: int,
        query: Mapping[str, ParamValue] | None = None,
    ) -> P:
        params = {**(query or {}), "page": page, "page_size": page_size}
        response = await self._http.request("GET", path, params=params)
        return kind.model_validate(response.json())

    async def list_job_assets(
        self, job_id: EntityId, *, page: int = 1, page_size: int = 10
    ) -> Page[JobAsset]:
        """One page of the outputs the job's tasks recorded, in the order recorded."""
        return await self._page(Page[JobAsset], f"/v1/jobs/{_id(job_id)}/assets", page, page_size)

    def iter_events(self, job_id: EntityId, *, page_size: int = 100) -> AsyncIterator[Event]:
        """The job's whole event history, oldest first, fetched page by page."""
        return iterate_pages(lambda page: self.list_events(job_id, page=page, page_size=page_size))

    def iter_jobs(
        self, *, page_size: int = 100, **filters: Unpack[JobFilters]
    ) -> AsyncIterator[Job]:
        """Every job `list_jobs` finds with the filters, fetched page by page as consumed."""
        return iterate_filtered(self.list_jobs, page_size, filters)

    def iter_stages(
        self, *, page_size: int = 100, **filters: Unpack[StageFilters]
    ) -> AsyncIterator[Stage]:
        """Every stage `list_stages` finds with the filters, fetched page by page."""
        return iterate_filtered(self.list_stages, page_size, filters)

    def iter_tasks(
        self, *, page_size: int = 100, **filters: Unpack[TaskFilters]
    ) -> AsyncIterator[Task]:
        """Every task `list_tasks` finds with the filters, fetched page by page."""
        return iterate_filtered(self.list_tasks, page_size, filters)

    async def wait(
        self,
        job_id: EntityId,
        *,
        poll_interval: timedelta | None = None,
        # The deadline spans many polls and ends in WaitTimeoutError naming the job's
        # last status, which an outer asyncio.timeout could not say.
        timeout: timedelta | None = None,  # noqa: ASYNC109
        on_progress: ProgressCallback | None = None,
    ) -> Job:
        """Poll the job (every second unless `poll_interval` says otherwise) until it is
        COMPLETED, FAILED or ABORTED, and return it.

        `on_progress(job)` (plain or async) runs first and whenever the job's status or
        percentage changes. Raises WaitTimeoutError after `timeout`.
        """
        return await wait_for_job(
            lambda: self.get_job(job_id),
            poll_interval=self._wait_poll_interval if poll_interval is None else poll_interval,
            timeout=timeout,
            on_progress=on_progress,
        )


def with_retry_policy(tasks: Sequence[NewTask], policy: TaskRetryPolicy | None) -> list[NewTask]:
    """The tasks, each that has no retry policy of its own given `policy`."""
    if policy is None:
        return list(tasks)
    return [
        task if task.retry_policy is not None else task.model_copy(update={"retry_policy": policy})
        for task in tasks
    ]


def with_trace(tasks: list[NewTask]) -> list[NewTask]:
    """The tasks, each without a traceparent given the current context's (if any)."""
    trace = trace_fields(None, None)
    if not trace:
        return tasks
    return [task if task.traceparent else task.model_copy(update=trace) for task in tasks]


def _statuses(status: JobStatus | Sequence[JobStatus] | None) -> list[str] | None:
    """One status or several, as repeated `status` parameters."""
    if status is None:
        return None
    return [status.value] if isinstance(status, JobStatus) else [s.value for s in status]


def _id(entity_id: EntityId | None) -> str | None:
    return str(entity_id) if entity_id is not None else None


def _aware(time: datetime, name: str) -> datetime:
    if time.tzinfo is None:
        raise ValueError(f"{name} must carry its time zone (e.g. datetime.now(UTC))")
    return time


def _tasks_param(return_tasks: bool) -> dict[str, ParamValue] | None:
    """A create's query: nothing unless its answer is to leave the tasks out (so that a
    manager without the extension sees the reference call)."""
    return None if return_tasks else {"should_return_tasks": False}
