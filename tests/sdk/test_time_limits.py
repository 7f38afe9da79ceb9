"""Time limits, on the manager (SQLite and PostgreSQL, in-process, its clock and
maintenance tick moved by hand) and on the fake alike: an attempt past its
`timeoutSeconds` fails "timed out" even while its worker heartbeats, with the usual retry
rules; a job not final by its `deadline` fails "deadline exceeded", its unfinished tasks
aborted; a timeout racing the worker's own report settles once."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from ..support.api import unique
from .conftest import Timed


def _at(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


async def _job(timed: Timed, **stage: Any) -> tuple[dict[str, Any], str]:
    kind = unique("limits")
    tasks = stage.pop("tasks", [{"data": {}}])
    job = await timed.api.create_job(stages=[{"type": kind, "data": {}, "tasks": tasks, **stage}])
    return job, kind


async def test_an_attempt_past_its_time_limit_fails_though_it_heartbeats(timed: Timed) -> None:
    api = timed.api
    job, kind = await _job(timed, tasks=[{"data": {}, "timeoutSeconds": 60, "maxAttempts": 2}])
    task = job["stages"][0]["tasks"][0]
    assert task["timeoutSeconds"] == 60
    first = await api.dequeue(kind)
    assert first is not None
    for _ in range(5):  # a hung handler whose heartbeats keep its lease
        await timed.advance(timedelta(seconds=11))
        await api.call(
            "POST", f"/v1/tasks/{first['id']}/heartbeat", json={"leaseId": first["leaseId"]}
        )
    await timed.advance(timedelta(seconds=6))  # 61 s since the claim
    retried = await api.task(first["id"])
    assert (retried["status"], retried["attempts"], retried["reason"]) == (
        "RETRIED",
        1,
        "timed out",
    )
    late = await api.call(
        "POST",
        f"/v1/tasks/{first['id']}/heartbeat",
        409,
        json={"leaseId": first["leaseId"]},
    )
    assert late["code"] == "LEASE_LOST"
    second = await api.dequeue(kind)
    assert second is not None and second["id"] == first["id"]
    await timed.advance(timedelta(seconds=61))
    failed = await api.job(job["id"])
    assert (failed["status"], failed["reason"]) == ("FAILED", "timed out")


async def test_a_stage_gives_its_tasks_a_default_time_limit(timed: Timed) -> None:
    api = timed.api
    job, kind = await _job(
        timed, timeoutSeconds=30, tasks=[{"data": {}}, {"data": {}, "timeoutSeconds": 90}]
    )
    assert job["stages"][0]["timeoutSeconds"] == 30
    own, default = job["stages"][0]["tasks"][1], job["stages"][0]["tasks"][0]
    assert (default["timeoutSeconds"], own["timeoutSeconds"]) == (30, 90)
    await api.dequeue(kind)
    await api.dequeue(kind)
    await timed.advance(timedelta(seconds=31))
    assert (await api.task(default["id"]))["status"] == "FAILED"
    # Its stage failed with it: the other task, still running, may report.
    assert (await api.task(own["id"]))["status"] == "IN_PROGRESS"


async def test_a_job_past_its_deadline_fails_and_its_unfinished_tasks_abort(timed: Timed) -> None:
    api = timed.api
    deadline = timed.now() + timedelta(minutes=10)
    kind = unique("deadline")
    job = await api.create_job(
        deadline=_at(deadline),
        stages=[
            {"type": kind, "data": {}, "tasks": [{"data": {}}, {"data": {}}, {"data": {}}]},
            {"type": unique("later"), "data": {}, "tasks": [{"data": {}}]},
        ],
    )
    assert datetime.fromisoformat(job["deadline"]) == deadline
    done = await api.run_one(kind)
    running = await api.dequeue(kind)
    assert running is not None
    await timed.advance(timedelta(minutes=9))
    assert (await api.job(job["id"]))["status"] == "IN_PROGRESS"
    await timed.advance(timedelta(minutes=1, seconds=1))
    failed = await api.job(job["id"], should_return_stages="true")
    assert (failed["status"], failed["reason"]) == ("FAILED", "deadline exceeded")
    assert "failedTaskId" not in failed
    assert [st["status"] for st in failed["stages"]] == ["ABORTED", "ABORTED"]
    assert failed["stages"][0]["reason"] == "deadline exceeded"
    stage = await api.call(
        "GET", f"/v1/stages/{failed['stages'][0]['id']}", params={"should_return_tasks": True}
    )
    statuses = {t["id"]: (t["status"], t.get("reason")) for t in stage["tasks"]}
    assert statuses[done["id"]] == ("COMPLETED", None)
    assert statuses[running["id"]] == ("ABORTED", "deadline exceeded")
    beat = await api.call(
        "POST", f"/v1/tasks/{running['id']}/heartbeat", json={"leaseId": running["leaseId"]}
    )
    assert beat["cancelRequested"] is True


async def test_a_job_final_before_its_deadline_is_left_alone(timed: Timed) -> None:
    api = timed.api
    kind = unique("in-time")
    job = await api.create_job(
        deadline=_at(timed.now() + timedelta(minutes=1)),
        stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}]}],
    )
    await api.run_one(kind)
    await timed.advance(timedelta(minutes=2))
    done = await api.job(job["id"])
    assert done["status"] == "COMPLETED" and "reason" not in done


async def test_a_timeout_racing_the_report_settles_once(timed: Timed) -> None:
    api = timed.api
    job, kind = await _job(timed, tasks=[{"data": {}, "timeoutSeconds": 5}] * 10)
    claimed = [await api.dequeue(kind) for _ in range(10)]
    await timed.advance(timedelta(seconds=4))

    async def report(task: dict[str, Any]) -> int:
        response = await api.http.put(
            f"/v1/tasks/{task['id']}/status",
            json={"status": "COMPLETED", "leaseId": task["leaseId"]},
        )
        return response.status_code

    codes = await asyncio.gather(
        timed.advance(timedelta(seconds=2)), *(report(t) for t in claimed if t)
    )
    events = await api.call("GET", f"/v1/jobs/{job['id']}/events", params={"page_size": 1000})
    for task in claimed:
        assert task is not None
        settled = [
            e
            for e in events["items"]
            if e["entityId"] == task["id"] and e["fromStatus"] == "IN_PROGRESS"
        ]
        assert len(settled) == 1, settled
        stored = await api.task(task["id"])
        assert (stored["status"] == "COMPLETED") == (settled[0]["toStatus"] == "COMPLETED")
    assert set(codes[1:]) <= {200, 409}


@pytest.mark.parametrize("value", [0, -5, 604801, "60", True, float("nan")])
async def test_a_bad_time_limit_is_refused_and_nothing_is_made(timed: Timed, value: Any) -> None:
    api, name = timed.api, unique("bad-limit")
    for stage in (
        {"type": unique("k"), "data": {}, "timeoutSeconds": value},
        {"type": unique("k"), "data": {}, "tasks": [{"data": {}, "timeoutSeconds": value}]},
    ):
        body = {"name": name, "data": {}, "stages": [stage]}
        refused = await api.http.post("/v1/jobs", content=_json(body))
        assert refused.status_code == 400, refused.text
        assert refused.json()["code"] == "VALIDATION_ERROR"
    deadline = await api.call(
        "POST", "/v1/jobs", 400, json={"name": name, "data": {}, "deadline": "soon"}
    )
    assert "deadline" in deadline["message"]
    assert (await api.call("GET", "/v1/jobs", params={"job_name": name}))["total"] == 0


def _json(body: Any) -> bytes:
    """`body` as JSON, NaN written as the bare word Python writes (not valid JSON)."""
    return json.dumps(body).encode()
