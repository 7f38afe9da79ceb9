"""FakeJobnik: JobnikClient's calls served from memory (its consumer half is in
`_fake_consumer.py`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from .._exceptions import error_for
from .._models import (
    EntityId,
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
    wire,
)
from .._pages import iterate_pages
from .._producer import with_retry_policy
from .._waiting import ProgressCallback, wait_for_job
from ._fake_consumer import FakeConsumerCalls
from ._rows import JobRow, StageRow, TaskRow, invalid, parse_id
from ._work import State

RowT = TypeVar("RowT", JobRow, StageRow, TaskRow)
AnswerT = TypeVar("AnswerT")


class FakeJobnik(FakeConsumerCalls):
    """An in-memory stand-in for a manager and a JobnikClient, for unit tests.

    It has JobnikClient's calls with the same arguments, answers and errors, and
    follows the manager's rules for the common path: stage order and approval, claims
    by priority then age with leases (waiting for work when asked to), heartbeats, one
    at a time or in batches (which tell of an abort), reports with
    retries while attempts remain (after the retry policy's delay), retry-later and
    non-retryable failures, leases that expire into failed attempts, stage and job
    completion or failure, pause, resume, abort and delete, the event history, and
    idempotency keys on creates. Nothing is persisted and nothing leaves the process;
    pass it to a Worker in place of a client.

    Its clock is the real one; `advance` moves it on, to let leases and retry delays
    run out without waiting.
    """

    def __init__(self) -> None:
        self.state = State()
        self.closed = False
        self._answers: dict[str, tuple[str, Any]] = {}

    async def aclose(self) -> None:
        """Mark the fake closed; it keeps working, so tests can inspect it afterwards."""
        self.closed = True

    def advance(self, by: timedelta) -> None:
        """Move the fake's clock forward by `by`: leases and retry delays that end
        before then have run out."""
        if by < timedelta(0):
            raise ValueError("the clock only moves forward")
        self.state.skew += by

    # ---- producer -----------------------------------------------------------------------

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
    ) -> Job:
        """As JobnikClient.create_job."""
        request = [
            "create_job",
            name,
            dict(data or {}),
            Priority(priority),
            dict(user_metadata) if user_metadata is not None else None,
            [wire(stage) for stage in stages or ()],
            traceparent,
            tracestate,
        ]

        def create() -> Job:
            row = self.state.create_job(
                name,
                data or {},
                priority=priority,
                user_metadata=user_metadata,
                stages=stages or (),
                traceparent=traceparent,
                tracestate=tracestate,
            )
            return row.model(with_stages=bool(stages), with_tasks=bool(stages))

        return self._once(idempotency_key, request, create)

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
    ) -> Stage:
        """As JobnikClient.add_stage."""
        spec = NewStage(
            type=stage_type,
            data=dict(data or {}),
            start_as_waiting=start_as_waiting,
            tasks=tasks or None,
            user_metadata=dict(user_metadata) if user_metadata is not None else None,
            traceparent=traceparent,
            tracestate=tracestate,
            retry_policy=retry_policy,
        )
        return self._once(
            idempotency_key,
            ["add_stage", str(parse_id(job_id)), wire(spec)],
            lambda: self.state.add_stage(job_id, spec).model(with_tasks=bool(tasks)),
        )

    async def add_tasks(
        self,
        stage_id: EntityId,
        tasks: Sequence[NewTask],
        *,
        retry_policy: TaskRetryPolicy | None = None,
        idempotency_key: str | None = None,
    ) -> list[Task]:
        """As JobnikClient.add_tasks."""
        specs = with_retry_policy(tasks, retry_policy)
        answer = self._once(
            idempotency_key,
            ["add_tasks", str(parse_id(stage_id)), [wire(spec) for spec in specs]],
            lambda: [row.model() for row in self.state.add_tasks(stage_id, specs)],
        )
        return list(answer)

    def _once(self, key: str | None, request: list[Any], create: Callable[[], AnswerT]) -> AnswerT:
        """Create once per idempotency key; a repeat of the same request gets the first
        answer again, another request under the same key a 409."""
        if key is None:
            return create()
        if not 1 <= len(key) <= 255 or not all(33 <= ord(c) <= 126 for c in key):
            raise invalid("Idempotency-Key: 1 to 255 visible ASCII characters")
        fingerprint = json.dumps(request, sort_keys=True, default=str)
        seen = self._answers.get(key)
        if seen is not None:
            if seen[0] != fingerprint:
                raise error_for(
                    409,
                    "IDEMPOTENCY_KEY_REUSED",
                    "This Idempotency-Key was already used for a different request",
                )
            answer: AnswerT = seen[1]
            return answer
        answer = create()
        self._answers[key] = (fingerprint, answer)
        return answer

    async def approve_stage(self, stage_id: EntityId) -> None:
        """As JobnikClient.approve_stage."""
        self.state.approve(stage_id)

    async def pause(self, job_id: EntityId) -> None:
        """As JobnikClient.pause."""
        self.state.set_job_status(job_id, JobStatus.PAUSED)

    async def resume(self, job_id: EntityId) -> None:
        """As JobnikClient.resume."""
        self.state.set_job_status(job_id, JobStatus.PENDING)

    async def abort(self, job_id: EntityId) -> None:
        """As JobnikClient.abort."""
        self.state.set_job_status(job_id, JobStatus.ABORTED)

    async def set_priority(self, job_id: EntityId, priority: Priority) -> bool:
        """As JobnikClient.set_priority."""
        return self.state.set_priority(job_id, priority)

    async def set_job_user_metadata(self, job_id: EntityId, metadata: Mapping[str, Any]) -> None:
        """As JobnikClient.set_job_user_metadata."""
        self.state.job(job_id).user_metadata = dict(metadata)

    async def set_stage_user_metadata(
        self, stage_id: EntityId, metadata: Mapping[str, Any]
    ) -> None:
        """As JobnikClient.set_stage_user_metadata."""
        self.state.stage(stage_id).user_metadata = dict(metadata)

    async def set_task_user_metadata(self, task_id: EntityId, metadata: Mapping[str, Any]) -> None:
        """As JobnikClient.set_task_user_metadata."""
        self.state.task(task_id).user_metadata = dict(metadata)

    async def delete_job(self, job_id: EntityId) -> None:
        """As JobnikClient.delete_job."""
        self.state.delete_job(job_id)

    # ---- reads --------------------------------------------------------------------------

    async def get_job(self, job_id: EntityId, *, with_stages: bool = False) -> Job:
        """As JobnikClient.get_job."""
        return self.state.job(job_id).model(with_stages=with_stages)

    async def get_job_stages(self, job_id: EntityId, *, with_tasks: bool = False) -> list[Stage]:
        """As JobnikClient.get_job_stages."""
        return [st.model(with_tasks=with_tasks) for st in self.state.job(job_id).stages]

    async def get_stage(self, stage_id: EntityId, *, with_tasks: bool = False) -> Stage:
        """As JobnikClient.get_stage."""
        return self.state.stage(stage_id).model(with_tasks=with_tasks)

    async def get_summary(self, stage_id: EntityId) -> Summary:
        """As JobnikClient.get_summary."""
        return self.state.stage(stage_id).summary()

    async def get_task(self, task_id: EntityId) -> Task:
        """As JobnikClient.get_task."""
        return self.state.task(task_id).model()

    async def list_events(
        self, job_id: EntityId, *, page: int = 1, page_size: int = 10
    ) -> Page[Event]:
        """As JobnikClient.list_events."""
        job = self.state.job(job_id)
        if page < 1 or not 1 <= page_size <= 1000:
            raise invalid("page must be >= 1 and page_size between 1 and 1000")
        events = self.state.events.of_job(job.id)
        start = (page - 1) * page_size
        return Page[Event](total=len(events), items=events[start : start + page_size])

    def iter_events(self, job_id: EntityId, *, page_size: int = 100) -> AsyncIterator[Event]:
        """As JobnikClient.iter_events."""
        return iterate_pages(lambda page: self.list_events(job_id, page=page, page_size=page_size))

    async def list_jobs(
        self,
        *,
        name: str | None = None,
        from_date: datetime | None = None,
        end_date: datetime | None = None,
        priority: Priority | None = None,
        with_stages: bool = False,
        page: int = 1,
        page_size: int = 10,
    ) -> Page[Job]:
        """As JobnikClient.list_jobs."""
        self.state.reap()
        rows = [
            j
            for j in self.state.jobs.values()
            if (name is None or j.name == name)
            and (priority is None or j.priority is Priority(priority))
            and _in_window(j.creation_time, from_date, end_date)
        ]
        return _page(rows, page, page_size, lambda j: j.model(with_stages=with_stages))

    async def list_stages(
        self,
        *,
        job_id: EntityId | None = None,
        stage_type: str | None = None,
        status: StageStatus | None = None,
        with_tasks: bool = False,
        page: int = 1,
        page_size: int = 10,
    ) -> Page[Stage]:
        """As JobnikClient.list_stages."""
        self.state.reap()
        wanted_job = parse_id(job_id) if job_id is not None else None
        rows = [
            st
            for st in self.state.stages.values()
            if (wanted_job is None or st.job_id == wanted_job)
            and (stage_type is None or st.type == stage_type)
            and (status is None or st.status is StageStatus(status))
        ]
        return _page(rows, page, page_size, lambda st: st.model(with_tasks=with_tasks))

    async def list_tasks(
        self,
        *,
        stage_id: EntityId | None = None,
        stage_type: str | None = None,
        status: TaskStatus | None = None,
        from_date: datetime | None = None,
        end_date: datetime | None = None,
        page: int = 1,
        page_size: int = 10,
    ) -> Page[Task]:
        """As JobnikClient.list_tasks."""
        self.state.reap()
        wanted_stage = parse_id(stage_id) if stage_id is not None else None
        rows = [
            t
            for t in self.state.tasks.values()
            if (wanted_stage is None or t.stage_id == wanted_stage)
            and (stage_type is None or self.state.stages[t.stage_id].type == stage_type)
            and (status is None or t.status is TaskStatus(status))
            and _in_window(t.creation_time, from_date, end_date)
        ]
        return _page(rows, page, page_size, TaskRow.model)

    def iter_jobs(
        self,
        *,
        name: str | None = None,
        from_date: datetime | None = None,
        end_date: datetime | None = None,
        priority: Priority | None = None,
        with_stages: bool = False,
        page_size: int = 100,
    ) -> AsyncIterator[Job]:
        """As JobnikClient.iter_jobs."""
        return iterate_pages(
            lambda page: self.list_jobs(
                name=name,
                from_date=from_date,
                end_date=end_date,
                priority=priority,
                with_stages=with_stages,
                page=page,
                page_size=page_size,
            )
        )

    def iter_stages(
        self,
        *,
        job_id: EntityId | None = None,
        stage_type: str | None = None,
        status: StageStatus | None = None,
        with_tasks: bool = False,
        page_size: int = 100,
    ) -> AsyncIterator[Stage]:
        """As JobnikClient.iter_stages."""
        return iterate_pages(
            lambda page: self.list_stages(
                job_id=job_id,
                stage_type=stage_type,
                status=status,
                with_tasks=with_tasks,
                page=page,
                page_size=page_size,
            )
        )

    def iter_tasks(
        self,
        *,
        stage_id: EntityId | None = None,
        stage_type: str | None = None,
        status: TaskStatus | None = None,
        from_date: datetime | None = None,
        end_date: datetime | None = None,
        page_size: int = 100,
    ) -> AsyncIterator[Task]:
        """As JobnikClient.iter_tasks."""
        return iterate_pages(
            lambda page: self.list_tasks(
                stage_id=stage_id,
                stage_type=stage_type,
                status=status,
                from_date=from_date,
                end_date=end_date,
                page=page,
                page_size=page_size,
            )
        )

    async def wait(
        self,
        job_id: EntityId,
        *,
        poll_interval: timedelta = timedelta(milliseconds=10),
        # The deadline spans many polls and ends in WaitTimeoutError naming the job's
        # last status, which an outer asyncio.timeout could not say.
        timeout: timedelta | None = None,  # noqa: ASYNC109
        on_progress: ProgressCallback | None = None,
    ) -> Job:
        """As JobnikClient.wait, polling every 10 ms by default."""
        return await wait_for_job(
            lambda: self.get_job(job_id),
            poll_interval=poll_interval,
            timeout=timeout,
            on_progress=on_progress,
        )


def _in_window(moment: datetime, start: datetime | None, end: datetime | None) -> bool:
    return (start is None or moment >= start) and (end is None or moment <= end)


def _page(
    rows: Iterable[RowT], page: int, page_size: int, render: Callable[[RowT], Any]
) -> Page[Any]:
    if page < 1 or not 1 <= page_size <= 100:
        raise invalid("page must be >= 1 and page_size between 1 and 100")
    ordered = sorted(rows, key=lambda row: row.seq)
    start = (page - 1) * page_size
    return Page[Any](
        total=len(ordered), items=[render(r) for r in ordered[start : start + page_size]]
    )
