"""Rows to wire models, and to their JSON where a model per row costs too much."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Literal, cast

import orjson
from fastapi import Response
from pydantic import TypeAdapter

from ..db.models import Event, Job, Stage, Task
from ..domain.statuses import TaskStatus
from ..domain.summary import Summary
from .schemas import EventOut, JobOut, StageOut, SummaryOut, TaskOut


def task_out(t: Task) -> TaskOut:
    return TaskOut(
        id=t.id,
        stage_id=t.stage_id,
        data=t.data,
        user_metadata=t.user_metadata,
        status=t.status,
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
    summary = Summary.of_columns(st)
    return SummaryOut(**summary.counts(), total=summary.total)


def stage_out(st: Stage, tasks: list[Task] | None = None) -> StageOut:
    return StageOut(
        id=st.id,
        job_id=st.job_id,
        type=st.type,
        order=st.stage_order,
        data=st.data,
        user_metadata=st.user_metadata,
        status=st.status,
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
        priority=j.priority,
        status=j.status,
        percentage=j.percentage,
        creation_time=j.creation_time,
        update_time=j.update_time,
        traceparent=j.traceparent,
        tracestate=j.tracestate,
        stages=stages,
    )


# ---- JSON bodies without a model per row --------------------------------------------------
# A create answers every task it made, tens of thousands of them; building and dumping a
# TaskOut each would be most of the request's time. These give the same JSON as
# `model_dump(mode="json", by_alias=True, exclude_none=True)` of the models above
# (tests/unit/test_presenters.py holds them to it).

_dump_time = TypeAdapter(datetime).dump_python
_NOTHING = object()


def _time(value: datetime) -> str:
    # Equal instants in other offsets are written differently: the offset is in the key.
    return _cached_time(value, value.utcoffset())


@lru_cache(maxsize=256)
def _cached_time(value: datetime, _offset: timedelta | None) -> str:
    # Cached: the tasks of one create share their timestamps. Pydantic's own format.
    text: str = _dump_time(value, mode="json")
    return text


def _id(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)


def task_body(t: Mapping[str, Any]) -> dict[str, Any]:
    """TaskOut's JSON from a task's columns (absent ones count as NULL)."""
    return _task_body(
        t, _OPTIONAL_BEFORE_TRACEPARENT, _OPTIONAL_AFTER_TRACEPARENT, str, _time, _status
    )


def task_response(row: Any) -> Response:
    """The 200 answer of a route giving one task (`response_model=TaskOut`), from the
    task's row: a Row, or a namespace of its columns. Extra columns are left out. Built
    without the model, which with FastAPI's validation of it cost as much as the rest of
    a dequeue or a report."""
    mapping = getattr(row, "_mapping", None)
    columns: Mapping[str, Any] = mapping if mapping is not None else vars(row)
    return json_response(task_body(columns), 200)


def task_bodies(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`task_body` of each row, for rows that name the same columns (one insert's).

    Their stage, status and timestamps are the same objects from row to row, converted
    once; optional fields their columns cannot hold are not looked for in every row."""
    if not rows:
        return []
    before = [f for f in _OPTIONAL_BEFORE_TRACEPARENT if f[1] in rows[0]]
    after = [f for f in _OPTIONAL_AFTER_TRACEPARENT if f[1] in rows[0]]
    stage_id, time, status = _same_as_last(str), _same_as_last(_time), _same_as_last(_status)
    return [_task_body(t, before, after, stage_id, time, status) for t in rows]


def _status(value: str) -> str:
    return TaskStatus(value).value


def _same_as_last(convert: Callable[[Any], str]) -> Callable[[Any], str]:
    """`convert`, reusing its last result while the value is the very same object."""
    last_value: Any = _NOTHING
    last_result = ""

    def same_or_convert(value: Any) -> str:
        nonlocal last_value, last_result
        if value is not last_value:
            last_value, last_result = value, convert(value)
        return last_result

    return same_or_convert


def _same(value: Any) -> Any:
    return value


OptionalField = tuple[str, str, Callable[[Any], Any]]  # JSON key, column, conversion
# In TaskOut's field order, each given only when set.
_OPTIONAL_BEFORE_TRACEPARENT: Sequence[OptionalField] = (
    ("startTime", "start_time", _time),
    ("endTime", "end_time", _time),
)
_OPTIONAL_AFTER_TRACEPARENT: Sequence[OptionalField] = (
    ("tracestate", "tracestate", _same),
    ("leaseId", "lease_id", _id),
    ("leaseExpiresAt", "lease_expires_at", _time),
    ("worker", "worker", _same),
    ("progress", "progress", _same),
    ("notBefore", "not_before", _time),
    ("retryPolicy", "retry_policy", _same),
    ("reason", "reason", _same),
    ("result", "result", _same),
)


def _task_body(
    t: Mapping[str, Any],
    before: Sequence[OptionalField],
    after: Sequence[OptionalField],
    stage_id: Callable[[uuid.UUID], str],
    time: Callable[[datetime], str],
    status: Callable[[str], str],
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": str(t["id"]),
        "stageId": stage_id(t["stage_id"]),
        "data": t["data"],
        "userMetadata": t["user_metadata"],
        "status": status(t["status"]),
        "attempts": t["attempts"],
        "maxAttempts": t["max_attempts"],
        "creationTime": time(t["creation_time"]),
        "updateTime": time(t["update_time"]),
    }
    for key, column, convert in before:
        if (value := t.get(column)) is not None:
            body[key] = convert(value)
    body["traceparent"] = t["traceparent"]
    for key, column, convert in after:
        if (value := t.get(column)) is not None:
            body[key] = convert(value)
    return body


def stage_body(st: Stage, tasks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """StageOut's JSON, with task bodies from `task_body` when given."""
    # An empty list holds the key's place in the model's field order.
    body = _dump(stage_out(st, [] if tasks is not None else None))
    if tasks is not None:
        body["tasks"] = tasks
    return body


def job_body(j: Job, stages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """JobOut's JSON, with stage bodies from `stage_body` when given."""
    body = _dump(job_out(j, [] if stages is not None else None))
    if stages is not None:
        body["stages"] = stages
    return body


def _dump(model: JobOut | StageOut) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def json_response(body: object, status_code: int) -> Response:
    """`body` as JSONResponse would send it, serialised by orjson (several times faster
    on large answers). orjson refuses integers beyond 64 bits, which a client's JSON may
    hold; those bodies take the standard library's path, as JSONResponse does."""
    try:
        content = orjson.dumps(body)
    except orjson.JSONEncodeError:
        content = json.dumps(
            body, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
        ).encode("utf-8")
    return Response(content, status_code=status_code, media_type="application/json")
