"""Rows to wire models."""

from __future__ import annotations

from typing import Literal, cast

from ..db.models import Event, Job, Stage, Task
from ..domain.statuses import JobStatus, Priority, StageStatus, TaskStatus
from .schemas import EventOut, JobOut, StageOut, SummaryOut, TaskOut


def task_out(t: Task) -> TaskOut:
    return TaskOut(
        id=t.id,
        stage_id=t.stage_id,
        data=t.data,
        user_metadata=t.user_metadata,
        status=TaskStatus(t.status),
        attempts=t.attempts,
        max_attempts=t.max_attempts,
        creation_time=t.creation_time,
        update_time=t.update_time,
        start_time=t.start_time,
        end_time=t.end_time,
        traceparent=t.traceparent,
        tracestate=t.tracestate,
        lease_id=t.lease_id,
        lease_expires_at=t.lease_expires_at,
        worker=t.worker,
        progress=t.progress,
        not_before=t.not_before,
        retry_policy=t.retry_policy,
        reason=t.reason,
        result=t.result,
    )


def event_out(e: Event) -> EventOut:
    return EventOut(
        id=e.seq,
        time=e.time,
        entity=cast(Literal["JOB", "STAGE", "TASK"], e.entity),
        entity_id=e.entity_id,
        job_id=e.job_id,
        stage_id=e.stage_id,
        task_id=e.task_id,
        from_status=e.from_status,
        to_status=e.to_status,
        attempt=e.attempt,
        lease_id=e.lease_id,
        worker=e.worker,
        reason=e.reason,
    )


def summary_out(st: Stage) -> SummaryOut:
    counts = {
        "pending": st.pending,
        "in_progress": st.in_progress,
        "completed": st.completed,
        "failed": st.failed,
        "created": st.created,
        "retried": st.retried,
        "aborted": st.aborted,
    }
    return SummaryOut(**counts, total=sum(counts.values()))


def stage_out(st: Stage, tasks: list[Task] | None = None) -> StageOut:
    return StageOut(
        id=st.id,
        job_id=st.job_id,
        type=st.type,
        order=st.stage_order,
        data=st.data,
        user_metadata=st.user_metadata,
        status=StageStatus(st.status),
        percentage=st.percentage,
        summary=summary_out(st),
        traceparent=st.traceparent,
        tracestate=st.tracestate,
        tasks=[task_out(t) for t in tasks] if tasks is not None else None,
        retry_policy=st.retry_policy,
    )


def job_out(j: Job, stages: list[StageOut] | None = None) -> JobOut:
    return JobOut(
        id=j.id,
        name=j.name,
        data=j.data,
        user_metadata=j.user_metadata,
        priority=Priority(j.priority),
        status=JobStatus(j.status),
        percentage=j.percentage,
        creation_time=j.creation_time,
        update_time=j.update_time,
        traceparent=j.traceparent,
        tracestate=j.tracestate,
        stages=stages,
    )
