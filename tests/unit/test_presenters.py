"""The hand-built JSON bodies give what the pydantic wire models give, key for key and in
the same order, so answers built without a model per row are the same answers."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest

from jobnik_manager.api.presenters import (
    job_body,
    job_out,
    json_response,
    stage_body,
    stage_out,
    task_bodies,
    task_body,
    task_out,
    task_response,
)
from jobnik_manager.api.schemas import SummaryOut
from jobnik_manager.db.models import Job, Stage, Task
from jobnik_manager.domain.summary import COUNTERS, Summary

NOW = datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC)
ROUND = datetime(2026, 3, 1, 12, 30, 5, tzinfo=UTC)  # no microseconds: written without
ELSEWHERE = NOW.astimezone(timezone(timedelta(hours=2)))  # same instant, other offset

REQUIRED: dict[str, Any] = {
    "id": uuid.UUID("6f1c2a4e-0000-4000-8000-000000000001"),
    "stage_id": uuid.UUID("6f1c2a4e-0000-4000-8000-000000000002"),
    "job_id": uuid.UUID("6f1c2a4e-0000-4000-8000-000000000003"),
    "status": "PENDING",
    "attempts": 0,
    "max_attempts": 3,
    "data": {"i": 1, "nested": {"none": None, "list": [1, None, "x"]}, "f": 1e-05},
    "user_metadata": {},
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "creation_time": NOW,
    "update_time": NOW,
}
OPTIONAL: dict[str, Any] = {
    "tracestate": "congo=t61rcWkgMzE",
    "start_time": ROUND,
    "end_time": ELSEWHERE,
    "lease_id": uuid.UUID("6f1c2a4e-0000-4000-8000-000000000004"),
    "lease_expires_at": NOW + timedelta(seconds=30),
    "worker": "w-1",
    "progress": 40,
    "not_before": NOW + timedelta(minutes=5),
    "retry_policy": {"initialDelaySeconds": 5.0, "multiplier": 2.0, "maxDelaySeconds": None},
    "reason": "upstream 500",
    "result": {"tiles": 12, "none": None},
}
NONE_OPTIONAL = {column: None for column in OPTIONAL}


def _model_json(model: Any) -> dict[str, Any]:
    """What a route with `response_model_exclude_none=True` answers for `model`."""
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def _same_json(ours: Any, theirs: Any) -> None:
    # Key order included: the texts are compared, not only the decoded values.
    assert json.dumps(ours) == json.dumps(theirs)


@pytest.mark.parametrize(
    "columns",
    [
        REQUIRED | OPTIONAL,
        REQUIRED | NONE_OPTIONAL,
        REQUIRED | NONE_OPTIONAL | {"tracestate": "a=b", "retry_policy": {"x": 1.5}},
        REQUIRED | NONE_OPTIONAL | {"end_time": ELSEWHERE, "worker": "w"},
        REQUIRED | {"creation_time": ELSEWHERE, "update_time": ROUND} | NONE_OPTIONAL,
    ],
    ids=["all-set", "none-set", "created-task", "some-set", "offsets"],
)
def test_task_body_is_task_out_json(columns: dict[str, Any]) -> None:
    _same_json(task_body(columns), _model_json(task_out(Task(**columns))))


def test_task_bodies_of_rows_without_optional_columns() -> None:
    # The rows a create inserts name no lease, result, ... columns at all; rows may
    # share their stage and timestamps, or not.
    other = {"stage_id": uuid.uuid4(), "creation_time": ELSEWHERE, "update_time": ROUND}
    rows = [
        REQUIRED | {"id": uuid.uuid4(), "tracestate": None, "retry_policy": None},
        REQUIRED | {"id": uuid.uuid4(), "tracestate": "a=b", "retry_policy": {"x": 1.0}},
        REQUIRED | other | {"id": uuid.uuid4(), "tracestate": None, "retry_policy": None},
        REQUIRED | {"id": uuid.uuid4(), "tracestate": None, "retry_policy": None},
    ]
    expected = [_model_json(task_out(Task(**(NONE_OPTIONAL | row)))) for row in rows]
    _same_json(task_bodies(rows), expected)
    _same_json([task_body(row) for row in rows], expected)
    assert task_bodies([]) == []


def test_task_response_of_a_namespace_and_of_a_row() -> None:
    # A claim's or a report's row: its columns as attributes (SQLite's claims, reports)
    # or behind `_mapping` (a Row), with extra columns the answer leaves out.
    columns = REQUIRED | OPTIONAL | {"seq": 7, "previous": "PENDING", "stage_started": True}
    expected = _model_json(task_out(Task(**(REQUIRED | OPTIONAL))))
    row = SimpleNamespace(_mapping=columns)
    for given in (SimpleNamespace(**columns), row):
        response = task_response(given)
        assert response.status_code == 200
        assert response.media_type == "application/json"
        _same_json(json.loads(response.body), expected)


# The columns a job and a stage have alike.
PARENT: dict[str, Any] = {
    "status": "PENDING",
    "percentage": 0,
    "traceparent": REQUIRED["traceparent"],
    "tracestate": None,
    "creation_time": NOW,
    "update_time": NOW,
}


def _stage(**extra: Any) -> Stage:
    columns: dict[str, Any] = {
        "id": REQUIRED["stage_id"],
        "job_id": REQUIRED["job_id"],
        "type": "tiling",
        "stage_order": 1,
        "data": {"a": None},
        "user_metadata": {"m": 1},
        "retry_policy": None,
        **Summary(pending=2).counts(),
    }
    return Stage(**PARENT | columns | extra)


def _job(**extra: Any) -> Job:
    columns: dict[str, Any] = {
        "id": REQUIRED["job_id"],
        "name": "bulk",
        "data": {},
        "user_metadata": {},
        "priority": "MEDIUM",
    }
    return Job(**PARENT | columns | extra)


def test_the_summary_answers_every_counter_then_the_total() -> None:
    assert list(SummaryOut.model_fields) == [*COUNTERS, "total"]
    body = stage_body(_stage(created=1, completed=3, failed=1))["summary"]
    # The wire's keys, in the wire's order.
    assert list(body.items()) == [
        ("pending", 2),
        ("inProgress", 0),
        ("completed", 3),
        ("failed", 1),
        ("created", 1),
        ("retried", 0),
        ("aborted", 0),
        ("total", 7),
    ]


@pytest.mark.parametrize(
    "stage",
    [_stage(), _stage(tracestate="a=b", retry_policy={"initialDelaySeconds": 1.0})],
    ids=["plain", "with-optionals"],
)
def test_stage_and_job_bodies_are_their_models_json(stage: Stage) -> None:
    rows = [REQUIRED | NONE_OPTIONAL, REQUIRED | NONE_OPTIONAL | {"id": uuid.uuid4()}]
    tasks = [Task(**row) for row in rows]
    _same_json(stage_body(stage), _model_json(stage_out(stage)))
    _same_json(stage_body(stage, task_bodies(rows)), _model_json(stage_out(stage, tasks)))
    _same_json(stage_body(stage, []), _model_json(stage_out(stage, [])))
    job = _job(tracestate="k=v")
    _same_json(job_body(job), _model_json(job_out(job)))
    _same_json(
        job_body(job, [stage_body(stage, task_bodies(rows))]),
        _model_json(job_out(job, [stage_out(stage, tasks)])),
    )


def _standard(body: Any) -> bytes:
    """What FastAPI's JSONResponse sends."""
    text = json.dumps(body, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))
    return text.encode("utf-8")


@pytest.mark.parametrize(
    "body",
    [
        {"s": 'q"b\\c\n\t\x01\x7f\u2028 é日本🎉 </script>', "n": [0, -1, 2**63 - 1, 2**64 - 1]},
        [{"t": True, "f": False, "z": None, "x": 0.1, "y": -0.0, "big": 1.7976931348623157e308}],
        {"deep": {"er": [[], {}, [{"a": "b"}]]}},
    ],
)
def test_json_response_sends_the_standard_bytes(body: Any) -> None:
    response = json_response(body, 201)
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    assert response.body == _standard(body)


def test_json_response_numbers_beyond_64_bits_and_small_floats() -> None:
    # orjson refuses the integer; the standard path answers it as before.
    big = {"big": 2**70, "neg": -(2**70), "f": 1e-05}
    assert json_response(big, 200).body == _standard(big)
    # Small floats may be spelt otherwise (0.00001 for 1e-05), never valued otherwise.
    floats = {"f": [1e-05, 2.5e-07, 5e-324, 123456789.123, 1e16]}
    assert json.loads(json_response(floats, 200).body) == floats
