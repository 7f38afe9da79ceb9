"""The set-based hot paths: long-poll claims, batch heartbeats, and completions racing to
finish a stage, on both backends (and across two managers on PostgreSQL)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import Any

import pytest
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event
from jobnik_manager.dispatch.wakeups import listen

from ..conftest import app_client
from ..support.api import Api, unique
from ..support.invariants import assert_invariants


async def _claim(api: Api, stage_type: str, **extra: Any) -> list[dict[str, Any]]:
    body = {"stageTypes": [stage_type], "limit": 10, "leaseSeconds": 30, **extra}
    return (await api.call("POST", "/v1/tasks/claim", json=body))["items"]  # type: ignore[no-any-return]


async def _waiting_claim(api: Api, stage_type: str) -> asyncio.Task[list[dict[str, Any]]]:
    """A claim that waits far longer than the test, so only a wake-up can make it answer
    with a task; seen to be still waiting before it is returned."""
    waiting = asyncio.create_task(_claim(api, stage_type, waitSeconds=60))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    return waiting


async def test_a_long_poll_answers_when_tasks_become_ready(api: Api, db: Database) -> None:
    stage_type = unique("lp")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    waiting = await _waiting_claim(api, stage_type)
    created = await api.create_tasks(stage["id"], 2)
    got = await waiting
    assert sorted(t["id"] for t in got) == sorted(t["id"] for t in created)
    assert all(t["status"] == "IN_PROGRESS" for t in got)
    await assert_invariants(db)


async def test_a_long_poll_with_nothing_ready_answers_empty(api: Api) -> None:
    assert await _claim(api, unique("none"), waitSeconds=0.3) == []


async def test_a_long_poll_is_woken_by_a_retry_and_by_an_approval(api: Api, db: Database) -> None:
    stage_type = unique("lp")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    (task,) = await api.create_tasks(stage["id"], 1, maxAttempts=2)
    (claimed,) = await _claim(api, stage_type)
    waiting = await _waiting_claim(api, stage_type)
    await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/status",
        json={"status": "FAILED", "leaseId": claimed["leaseId"]},
    )
    (again,) = await waiting
    assert again["id"] == task["id"]

    later = unique("lp-approve")
    waiting_stage = await api.create_stage(job["id"], later, waiting=True)
    await api.create_tasks(waiting_stage["id"], 1)
    waiting = await _waiting_claim(api, later)
    await api.call(
        "PUT",
        f"/v1/tasks/{task['id']}/status",
        json={"status": "COMPLETED", "leaseId": again["leaseId"]},
    )
    await api.call("PUT", f"/v1/stages/{waiting_stage['id']}/status", json={"status": "PENDING"})
    assert len(await waiting) == 1
    await assert_invariants(db)


@pytest.mark.postgres_only
async def test_a_long_poll_is_woken_by_another_manager(postgres_url: str) -> None:
    """Two managers, each with its own database pool: tasks created through one wake a
    claim waiting on the other, through PostgreSQL's NOTIFY."""
    first, second = Database(postgres_url), Database(postgres_url)
    try:
        async with app_client(first) as a, app_client(second) as b:
            listener = asyncio.create_task(
                listen(postgres_url, a._transport.app.state.waiters)  # type: ignore[attr-defined]
            )
            try:
                await asyncio.sleep(0.3)  # the listener is connected
                api_a, api_b = Api(a), Api(b)
                stage_type = unique("xlp")
                job = await api_b.create_job()
                stage = await api_b.create_stage(job["id"], stage_type)
                waiting = await _waiting_claim(api_a, stage_type)
                (created,) = await api_b.create_tasks(stage["id"], 1)
                assert [t["id"] for t in await waiting] == [created["id"]]
            finally:
                listener.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await listener
    finally:
        await first.dispose()
        await second.dispose()


async def test_batch_heartbeats_answer_each_lease_on_its_own(api: Api, db: Database) -> None:
    stage_type = unique("hb")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], stage_type)
    await api.create_tasks(stage["id"], 3)
    one, two, three = await _claim(api, stage_type)
    missing = "00000000-0000-4000-8000-000000000000"
    body = {
        "heartbeats": [
            {"taskId": one["id"], "leaseId": one["leaseId"], "progress": 40},
            {"taskId": two["id"], "leaseId": one["leaseId"]},
            {"taskId": missing, "leaseId": one["leaseId"]},
            {"taskId": three["id"], "leaseId": three["leaseId"]},
        ],
        "leaseSeconds": 120,
    }
    got = (await api.call("POST", "/v1/tasks/heartbeats", json=body))["items"]
    assert [i["taskId"] for i in got] == [one["id"], two["id"], missing, three["id"]]
    assert got[0]["cancelRequested"] is False and got[0]["jobStatus"] == "IN_PROGRESS"
    assert got[0]["leaseExpiresAt"] > one["leaseExpiresAt"]
    assert got[1]["error"]["code"] == "LEASE_LOST"
    assert got[2]["error"]["code"] == "TASK_NOT_FOUND"
    assert got[3]["leaseExpiresAt"] > three["leaseExpiresAt"]
    assert (await api.task(one["id"]))["progress"] == 40
    # The refused beat changed nothing.
    assert (await api.task(two["id"]))["leaseExpiresAt"] == two["leaseExpiresAt"]

    await api.call("PUT", f"/v1/jobs/{job['id']}/status", json={"status": "ABORTED"})
    got = (
        await api.call(
            "POST",
            "/v1/tasks/heartbeats",
            json={"heartbeats": [{"taskId": one["id"], "leaseId": one["leaseId"]}]},
        )
    )["items"]
    assert got[0]["cancelRequested"] is True and got[0]["jobStatus"] == "ABORTED"
    await assert_invariants(db)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/tasks/claim", {"stageTypes": ["a"], "waitSeconds": -1}),
        ("/v1/tasks/claim", {"stageTypes": ["a"], "waitSeconds": 61}),
        ("/v1/tasks/claim", {"stageTypes": ["a"], "waitSeconds": "1"}),
        ("/v1/tasks/heartbeats", {"heartbeats": []}),
        ("/v1/tasks/heartbeats", {"heartbeats": [{"taskId": "x", "leaseId": "y"}]}),
        (
            "/v1/tasks/heartbeats",
            {
                "heartbeats": [
                    {
                        "taskId": "00000000-0000-4000-8000-000000000000",
                        "leaseId": "00000000-0000-4000-8000-000000000000",
                    }
                ]
                * 101
            },
        ),
        (
            "/v1/tasks/heartbeats",
            {
                "heartbeats": [
                    {
                        "taskId": "00000000-0000-4000-8000-000000000000",
                        "leaseId": "00000000-0000-4000-8000-000000000000",
                        "progress": 101,
                    }
                ]
            },
        ),
    ],
)
async def test_bad_long_poll_and_heartbeat_input_is_refused(
    api: Api, path: str, body: dict[str, Any]
) -> None:
    error = await api.call("POST", path, 400, json=body)
    assert error["code"] == "VALIDATION_ERROR" and error["message"]


async def test_completions_racing_to_finish_a_stage_finish_it_once(api: Api, db: Database) -> None:
    """Every task of a two-stage job completed at once, in single and batch reports:
    the first stage completes once, the second is activated once, nothing is lost."""
    first_type, second_type = unique("race"), unique("race-next")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], first_type)
    nxt = await api.create_stage(job["id"], second_type)
    await api.create_tasks(stage["id"], 40)
    await api.create_tasks(nxt["id"], 1)
    claimed = await _claim(api, first_type, limit=40)
    assert len(claimed) == 40

    async def single(task: dict[str, Any]) -> None:
        await api.call(
            "PUT",
            f"/v1/tasks/{task['id']}/status",
            json={"status": "COMPLETED", "leaseId": task["leaseId"]},
        )

    async def batch(tasks: list[dict[str, Any]]) -> None:
        reports = [
            {"taskId": t["id"], "status": "COMPLETED", "leaseId": t["leaseId"]} for t in tasks
        ]
        got = await api.call("POST", "/v1/tasks/reports", json={"reports": reports})
        assert all(item["task"]["status"] == "COMPLETED" for item in got["items"])

    await asyncio.gather(
        *(single(t) for t in claimed[:20]),
        *(batch(claimed[i : i + 5]) for i in range(20, 40, 5)),
    )
    assert (await api.stage(stage["id"]))["status"] == "COMPLETED"
    assert (await api.stage(nxt["id"]))["status"] == "PENDING"
    assert len(await _claim(api, second_type)) == 1
    async with db.sessions() as s:
        completions = (
            await s.execute(
                select(func.count())
                .select_from(Event)
                .where(Event.stage_id == uuid.UUID(stage["id"]), Event.to_status == "COMPLETED")
            )
        ).scalar_one()
    assert completions == 41  # 40 tasks and the stage, each once
    await assert_invariants(db)
