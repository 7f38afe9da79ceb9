"""Task events (`POST /v1/tasks/{taskId}/events`), over HTTP on the manager (SQLite and
PostgreSQL, in-process) and on the fake alike: an entry in the job's history beside the
status changes, under the task's lease while it runs; bad input changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from ..support.api import Api, unique

# `api`: the manager on each backend, or the fake, over HTTP (conftest.py).


async def _running(api: Api) -> tuple[dict[str, Any], dict[str, Any]]:
    kind = unique("events")
    job = await api.create_job(stages=[{"type": kind, "data": {}, "tasks": [{"data": {}}]}])
    task = await api.dequeue(kind)
    assert task is not None
    return job, task


async def _history(api: Api, job_id: str) -> list[dict[str, Any]]:
    page = await api.call("GET", f"/v1/jobs/{job_id}/events", params={"page_size": 1000})
    return page["items"]  # type: ignore[no-any-return]


async def _add(api: Api, task_id: str, expect: int = 201, **body: Any) -> Any:
    return await api.call("POST", f"/v1/tasks/{task_id}/events", expect, json=body)


async def test_an_entry_goes_into_the_history_beside_the_status_changes(api: Api) -> None:
    job, task = await _running(api)
    added = await _add(
        api,
        task["id"],
        name="tile.rendered",
        message="zoom 3 done",
        level="warning",
        fields={"tiles": 12, "zoom": 3},
        leaseId=task["leaseId"],
    )
    assert (added["name"], added["level"], added["message"]) == (
        "tile.rendered",
        "warning",
        "zoom 3 done",
    )
    assert added["fields"] == {"tiles": 12, "zoom": 3} and added["toStatus"] is None
    assert (added["taskId"], added["leaseId"], added["entity"]) == (
        task["id"],
        task["leaseId"],
        "TASK",
    )
    await api.report(task["id"], "COMPLETED")
    history = await _history(api, job["id"])
    entries = [(e.get("name"), e.get("toStatus")) for e in history if e["entityId"] == task["id"]]
    assert entries == [
        (None, "PENDING"),
        (None, "IN_PROGRESS"),
        ("tile.rendered", None),
        (None, "COMPLETED"),
    ]
    assert [e["id"] for e in history] == sorted(e["id"] for e in history)
    defaulted = await _add(api, task["id"], name="note")  # not running: anyone may add
    assert defaulted["level"] == "info" and defaulted["leaseId"] is None


async def test_while_the_task_runs_only_its_lease_holder_adds(api: Api) -> None:
    job, task = await _running(api)
    missing = await _add(api, task["id"], 400, name="x")
    assert missing["code"] == "VALIDATION_ERROR" and "leaseId" in missing["message"]
    wrong = await _add(
        api, task["id"], 409, name="x", leaseId="00000000-0000-4000-8000-000000000000"
    )
    assert wrong["code"] == "LEASE_LOST"
    await api.report(task["id"], "COMPLETED")
    stale = await _add(api, task["id"], 409, name="x", leaseId=task["leaseId"])
    assert stale["code"] == "LEASE_LOST"
    assert not [e for e in await _history(api, job["id"]) if e.get("name")]
    unknown = await _add(api, "00000000-0000-4000-8000-000000000000", 404, name="x")
    assert unknown["code"] == "TASK_NOT_FOUND"


@pytest.mark.parametrize(
    "body",
    [
        {"name": ""},
        {"name": "n" * 101},
        {"name": 7},
        {"name": "nul\u0000"},
        {"name": "x", "level": "debug"},
        {"name": "x", "message": "m" * 2001},
        {"name": "x", "fields": [1, 2]},
        {"name": "x", "fields": {"blob": "b" * 17_000}},
        {"name": "x", "colour": "red"},
        {"message": "no name"},
    ],
    ids=lambda b: ",".join(f"{k}={str(v)[:6]}" for k, v in b.items()),
)
async def test_bad_entries_are_refused_and_add_nothing(api: Api, body: dict[str, Any]) -> None:
    job, task = await _running(api)
    before = await _history(api, job["id"])
    refused = await _add(api, task["id"], 400, leaseId=task["leaseId"], **body)
    assert refused["code"] == "VALIDATION_ERROR"
    assert await _history(api, job["id"]) == before
