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

from jobnik_protocol.wire import event_json

from ..db.bulk import same_as_last
from ..db.models import Event, Job, Stage, Task
from ..domain.progress import job_progress, stage_progress
from ..domain.statuses import TaskStatus
from ..domain.summary import Summary
from .same_named import same_named
from .schemas import EventOut, JobOut, StageOut, SummaryOut, TaskOut


def task_out(t: Task) -> TaskOut:
    return TaskOut(**same_named(t, TaskOut))


def event_out(e: Event) -> EventOut:
    entity = cast(Literal["JOB", "STAGE", "TASK"], e.entity)
    return EventOut(**same_named(e, EventOut, id=e.seq, entity=entity))


def event_body(e: Event) -> dict[str, Any]:
    """EventOut's JSON: a status change's keys, nulls included, and an added entry's
    keys where set."""
    return event_json(event_out(e).model_dump(mode="json", by_alias=True))


def summary_out(st: Stage) -> SummaryOut:
    summary = Summary.of_columns(st)
    return SummaryOut(**summary.counts(), total=summary.total)


def stage_out(
    st: Stage, tasks: list[Task] | None = None, progress: float | None = None
) -> StageOut:
    return StageOut(
        **same_named(
            st,
            StageOut,
            order=st.stage_order,
            summary=summary_out(st),
            # Extensions absent until they say something (a v1 client sees no new keys).
            allowed_failures=st.allowed_failures or None,
            partial=st.partial or None,
            progress=progress,
            tasks=[task_out(t) for t in tasks] if tasks is not None else None,
        )
    )


def job_out(j: Job, stages: list[StageOut] | None = None, progress: float | None = None) -> JobOut:
    partial = j.partial or None
    return JobOut(**same_named(j, JobOut, stages=stages, partial=partial, progress=progress))


# ---- JSON bodies without a model per row --------------------------------------------------
# A create answers every task it made, tens of thousands of them; building and dumping a
# TaskOut each would be most of the request's time. These give the same JSON as
# `model_dump(mode="json", by_alias=True, exclude_none=True)` of the models above
# (tests/unit/test_presenters.py holds them to it).

_dump_time = TypeAdapter(datetime).dump_python


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
    task's row: a Row, a mapping or a namespace of its columns. Extra columns are left
    out. Built without the model, which with FastAPI's validation of it cost as much as
    the rest of a dequeue or a report."""
    columns: Mapping[str, Any]
    if isinstance(row, Mapping):
        columns = row
    else:
        mapping = getattr(row, "_mapping", None)
        columns = mapping if mapping is not None else vars(row)
    return json_response(task_body(columns), 200)


def task_bodies(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`task_body` of each row, for rows that name the same columns (one insert's).

    Their stage, status and timestamps are the same objects from row to row, converted
    once; optional fields their columns cannot hold are not looked for in every row."""
    if not rows:
        return []
    before = [f for f in _OPTIONAL_BEFORE_TRACEPARENT if f[1] in rows[0]]
    after = [f for f in _OPTIONAL_AFTER_TRACEPARENT if f[1] in rows[0]]
    stage_id, time, status = same_as_last(str), same_as_last(_time), same_as_last(_status)
    return [_task_body(t, before, after, stage_id, time, status) for t in rows]


def _status(value: str) -> str:
    return TaskStatus(value).value


def _same(value: Any) -> Any:
    return value


OptionalField = tuple[str, str, Callable[[Any], Any]]  # JSON key, column, conversion


def _optional(*fields: tuple[str, Callable[[Any], Any]]) -> tuple[OptionalField, ...]:
    """Each (column, conversion) with its JSON key: TaskOut's name for it."""
    return tuple((TaskOut.model_fields[c].alias or c, c, convert) for c, convert in fields)


# In TaskOut's field order, each given only when set.
_OPTIONAL_BEFORE_TRACEPARENT = _optional(("start_time", _time), ("end_time", _time))
_OPTIONAL_AFTER_TRACEPARENT = _optional(
    ("tracestate", _same),
    ("lease_id", _id),
    ("lease_expires_at", _time),
    ("worker", _same),
    ("progress", _same),
    ("progress_message", _same),
    ("not_before", _time),
    ("retry_policy", _same),
    ("timeout_seconds", _same),
    ("reason", _same),
    ("result", _same),
    ("expires_at", _time),
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


def stage_body(
    st: Stage, tasks: list[dict[str, Any]] | None = None, *, new: bool = False
) -> dict[str, Any]:
    """StageOut's JSON, with task bodies from `task_body` when given. A `new` stage (a
    create's answer) carries its progress too: nothing of it runs yet, so its status and
    summary say it."""
    progress = stage_progress(st.status, Summary.of_columns(st), 0.0) if new else None
    # An empty list holds the key's place in the model's field order.
    body = _dump(stage_out(st, [] if tasks is not None else None, progress))
    if tasks is not None:
        body["tasks"] = tasks
    return body


def job_body(
    j: Job, stages: list[dict[str, Any]] | None = None, *, new: bool = False
) -> dict[str, Any]:
    """JobOut's JSON, with stage bodies from `stage_body` when given; a `new` job's with
    its progress, from its new stages'."""
    progress = job_progress([stage["progress"] for stage in stages or ()]) if new else None
    body = _dump(job_out(j, [] if stages is not None else None, progress))
    if stages is not None:
        body["stages"] = stages
    return body


def stage_response(st: Stage, progress: float) -> Response:
    """The 200 answer of a route giving one stage without its tasks."""
    return json_response(_dump(stage_out(st, progress=progress)), 200)


def job_response(j: Job, progress: float) -> Response:
    """The 200 answer of a route giving one job without its stages."""
    return json_response(_dump(job_out(j, progress=progress)), 200)


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
