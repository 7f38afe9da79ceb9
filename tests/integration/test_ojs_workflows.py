"""The Open Job Spec's workflows (level 3) on both backends: a chain runs its steps one
after another, each seeing the results of those before and none after a failure; a
group runs its jobs side by side and fails only once all have ended; a batch fires its
callbacks once, as its jobs' outcome says, whichever way its last job ended. Bad bodies
are refused with the spec's error and make nothing. Written from spec/ojs-workflows.md."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Job, Workflow, WorkflowJob
from jobnik_manager.maintenance.reaper import reap_expired
from jobnik_manager.maintenance.retention import delete_finished_before
from jobnik_manager.services.workflows import fire_callbacks, fire_due_batches

from ..support.api import Api, unique
from .test_ojs import UUID7, call, refused


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 5, 1, 9, 0, tzinfo=UTC))


def job(kind: str, queue: str, *args: Any, **options: Any) -> dict[str, Any]:
    return {"type": kind, "args": list(args), "options": {"queue": queue, **options}}


async def create(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    made: dict[str, Any] = (await call(client, "POST", "/v1/workflows", body, 201))["workflow"]
    return made


async def read(client: httpx.AsyncClient, workflow_id: str) -> dict[str, Any]:
    said: dict[str, Any] = (await call(client, "GET", f"/v1/workflows/{workflow_id}"))["workflow"]
    return said


async def fetch(client: httpx.AsyncClient, *queues: str, count: int = 1) -> list[dict[str, Any]]:
    body = {"queues": list(queues), "count": count, "worker_id": "w-1"}
    jobs: list[dict[str, Any]] = (await call(client, "POST", "/v1/workers/fetch", body))["jobs"]
    return jobs


async def ack(client: httpx.AsyncClient, job_id: str, result: Any = None) -> None:
    said = await call(client, "POST", "/v1/workers/ack", {"job_id": job_id, "result": result})
    assert said["state"] == "completed"


async def nack(client: httpx.AsyncClient, job_id: str, state: str = "discarded") -> None:
    """A failed attempt; retryable unless the job is to be discarded."""
    error = {"code": "broken", "message": "it broke", "retryable": state != "discarded"}
    said = await call(client, "POST", "/v1/workers/nack", {"job_id": job_id, "error": error})
    assert said["state"] == state


async def test_a_chain_runs_its_steps_in_turn_each_seeing_the_results_before(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("chain").lower()
    body = {
        "type": "chain",
        "name": "order-processing",
        "steps": [
            job("order.validate", queue, {"order": 7}),
            job("payment.charge", queue),
            job("notification.send", unique("other").lower()),
        ],
    }
    made = await create(client, body)
    assert UUID7.fullmatch(made["id"]) and (made["type"], made["name"]) == (
        "chain",
        "order-processing",
    )
    assert (made["state"], made["steps_total"], made["steps_completed"]) == ("running", 3, 0)
    assert [s["state"] for s in made["steps"]] == ["pending", "waiting", "waiting"]
    assert made["steps"][0]["job_id"] and made["steps"][1]["job_id"] is None
    assert made["metadata"]["job_count"] == 3 and made["metadata"]["completed_count"] == 0

    # Only the first step is there to fetch, though two share its queue.
    [first] = await fetch(client, queue, count=5)
    assert (first["type"], first["args"], first["workflow_id"]) == (
        "order.validate",
        [{"order": 7}],
        made["id"],
    )
    assert first["id"] == made["steps"][0]["job_id"] and "parent_results" not in first
    assert (await read(client, made["id"]))["steps"][0]["state"] == "active"
    await ack(client, first["id"], {"total": 99.5})

    [second] = await fetch(client, queue)
    assert second["type"] == "payment.charge"
    assert second["parent_results"] == [{"total": 99.5}]
    await ack(client, second["id"], {"charge": "ch_1"})
    [third] = await fetch(client, body["steps"][2]["options"]["queue"])
    assert third["parent_results"] == [{"total": 99.5}, {"charge": "ch_1"}]
    assert (await read(client, made["id"]))["state"] == "running"
    await ack(client, third["id"])

    done = await read(client, made["id"])
    assert (done["state"], done["steps_completed"]) == ("completed", 3)
    assert [s["state"] for s in done["steps"]] == ["completed"] * 3
    assert done["steps"][1]["result"] == {"charge": "ch_1"}
    assert done["metadata"]["completed_at"] >= done["metadata"]["started_at"]
    refused(await call(client, "DELETE", f"/v1/workflows/{made['id']}", expect=409), "conflict")


async def test_a_chain_stops_at_a_step_that_fails_for_good(client: httpx.AsyncClient) -> None:
    queue = unique("chain").lower()
    steps = [
        job("a.one", queue),
        job("a.two", queue, retry={"max_attempts": 1}),
        job("a.three", queue),
    ]
    made = await create(client, {"type": "chain", "steps": steps})
    [one] = await fetch(client, queue)
    await ack(client, one["id"], {"ok": True})
    [two] = await fetch(client, queue)
    await nack(client, two["id"])
    assert await fetch(client, queue) == []  # the third never runs

    failed = await read(client, made["id"])
    assert (failed["state"], failed["steps_completed"], failed["steps_total"]) == ("failed", 1, 3)
    assert [s["state"] for s in failed["steps"]] == ["completed", "failed", "cancelled"]
    assert failed["failed_step_index"] == 1 and failed["failed_job_ids"] == [two["id"]]
    [error] = failed["errors"]
    assert (error["job_id"], error["code"], error["message"], error["attempt"]) == (
        two["id"],
        "broken",
        "it broke",
        1,
    )


async def test_a_cancelled_chain_runs_nothing_more(client: httpx.AsyncClient) -> None:
    queue = unique("chain").lower()
    made = await create(
        client, {"type": "chain", "steps": [job("b.one", queue), job("b.two", queue)]}
    )
    [one] = await fetch(client, queue)
    await ack(client, one["id"])
    said = (await call(client, "DELETE", f"/v1/workflows/{made['id']}"))["workflow"]
    assert (said["id"], said["state"]) == (made["id"], "cancelled")
    assert said["metadata"]["cancelled_at"]
    assert await fetch(client, queue) == []
    again = await read(client, made["id"])
    assert again["state"] == "cancelled" and [s["state"] for s in again["steps"]] == [
        "completed",
        "cancelled",
    ]
    refused(await call(client, "DELETE", f"/v1/workflows/{made['id']}", expect=409), "conflict")


async def test_a_group_runs_side_by_side_and_fails_once_all_have_ended(
    client: httpx.AsyncClient,
) -> None:
    one, two = unique("g").lower(), unique("g").lower()
    body = {"type": "group", "jobs": [job("x.a", one), job("x.b", one), job("x.c", two)]}
    made = await create(client, body)
    assert (made["state"], made["jobs_total"], made["jobs_completed"]) == ("running", 3, 0)
    assert [j["state"] for j in made["jobs"]] == ["pending"] * 3
    # All three at once, in both queues.
    fetched = await fetch(client, one, two, count=10)
    assert sorted(j["type"] for j in fetched) == ["x.a", "x.b", "x.c"]
    by_type = {j["type"]: j for j in fetched}
    await nack(client, by_type["x.a"]["id"])
    await ack(client, by_type["x.b"]["id"])
    # One failed, one still running: the group runs on, the others unaffected.
    assert (await read(client, made["id"]))["state"] == "running"
    await ack(client, by_type["x.c"]["id"], {"n": 3})
    ended = await read(client, made["id"])
    assert (ended["state"], ended["jobs_completed"], ended["jobs_failed"]) == ("failed", 2, 1)
    assert ended["failed_job_ids"] == [by_type["x.a"]["id"]]


async def test_a_group_whose_jobs_all_complete_completes(client: httpx.AsyncClient) -> None:
    queue = unique("g").lower()
    made = await create(client, {"type": "group", "jobs": [job("y.a", queue), job("y.b", queue)]})
    for fetched in await fetch(client, queue, count=2):
        await ack(client, fetched["id"])
    done = await read(client, made["id"])
    assert (done["state"], done["jobs_completed"]) == ("completed", 2)


def batch(queue: str, n: int, callbacks: dict[str, str]) -> dict[str, Any]:
    jobs = [job("mail.send", queue, {"to": i}, retry={"max_attempts": 1}) for i in range(n)]
    named = {role: job(f"batch.{role}", f"{queue}-cb", {"role": role}) for role in callbacks}
    return {"type": "batch", "name": "bulk-mail", "jobs": jobs, "callbacks": named}


async def test_a_batch_that_succeeds_fires_on_complete_and_on_success_with_every_result(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("b").lower()
    roles = {"on_complete": "", "on_success": "", "on_failure": ""}
    made = await create(client, batch(queue, 3, roles))
    assert (made["state"], made["jobs_total"]) == ("running", 3)
    assert {r: c["state"] for r, c in made["callbacks"].items()} == dict.fromkeys(roles, "waiting")
    jobs = await fetch(client, queue, count=3)
    for fetched in jobs[:2]:
        await ack(client, fetched["id"], {"sent": fetched["args"][0]["to"]})
    assert await fetch(client, f"{queue}-cb") == []  # not before the last job ends
    await ack(client, jobs[2]["id"], {"sent": jobs[2]["args"][0]["to"]})

    fired = await fetch(client, f"{queue}-cb", count=5)
    assert [f["type"] for f in fired] == ["batch.on_complete", "batch.on_success"]
    results = [{"sent": 0}, {"sent": 1}, {"sent": 2}]
    assert all(f["parent_results"] == results for f in fired)
    said = await read(client, made["id"])
    assert said["state"] == "running"  # until the callbacks end
    assert said["callbacks"]["on_failure"]["state"] == "cancelled"
    for f in fired:
        await ack(client, f["id"])
    assert (await read(client, made["id"]))["state"] == "completed"


async def test_a_batch_with_a_failure_fires_on_complete_and_on_failure_only(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("b").lower()
    made = await create(
        client, batch(queue, 2, {"on_success": "", "on_failure": "", "on_complete": ""})
    )
    first, second = await fetch(client, queue, count=2)
    await ack(client, first["id"], {"ok": 1})
    await nack(client, second["id"])
    fired = await fetch(client, f"{queue}-cb", count=5)
    assert [f["type"] for f in fired] == ["batch.on_complete", "batch.on_failure"]
    expected = [{"ok": 1}, None] if first["args"][0]["to"] == 0 else [None, {"ok": 1}]
    assert fired[0]["parent_results"] == expected
    await ack(client, fired[0]["id"])
    await nack(client, fired[1]["id"], state="retryable")  # its retries are its own
    assert (await read(client, made["id"]))["state"] == "running"
    assert await fetch(client, f"{queue}-cb") == []


async def test_a_batch_whose_callback_fails_for_good_fails(client: httpx.AsyncClient) -> None:
    queue = unique("b").lower()
    body = batch(queue, 1, {"on_complete": ""})
    body["callbacks"]["on_complete"]["options"]["retry"] = {"max_attempts": 1}
    made = await create(client, body)
    [only] = await fetch(client, queue)
    await ack(client, only["id"])
    [callback] = await fetch(client, f"{queue}-cb")
    await nack(client, callback["id"])
    assert (await read(client, made["id"]))["state"] == "failed"


async def test_a_batch_whose_last_job_ends_another_way_fires_on_the_tick_once(
    client: httpx.AsyncClient, api: Api, db: Database, clock: ManualClock
) -> None:
    queue = unique("b").lower()
    made = await create(client, batch(queue, 2, {"on_complete": "", "on_failure": ""}))
    first, second = await fetch(client, queue, count=2)
    await ack(client, first["id"])
    # The second is reported over v1: the route's report does not fire it, the tick does.
    await api.call("PUT", f"/v1/tasks/{second['id']}/status", 200, json={"status": "FAILED"})
    assert await fetch(client, f"{queue}-cb") == []
    assert await fire_due_batches(db) == 1
    assert await fire_due_batches(db) == 0
    assert await db.transaction(lambda s: fire_callbacks(s, uuid.UUID(made["id"]))) is False
    fired = await fetch(client, f"{queue}-cb", count=5)
    assert [f["type"] for f in fired] == ["batch.on_complete", "batch.on_failure"]
    for f in fired:
        await ack(client, f["id"])

    # A lease that runs out, its last attempt: the reaper ends it, the tick fires.
    other = unique("b").lower()
    made = await create(client, batch(other, 1, {"on_failure": ""}))
    await fetch(client, other)
    clock.advance(timedelta(hours=2))
    assert await reap_expired(db) == 1
    assert await fire_due_batches(db) == 1
    [alert] = await fetch(client, f"{other}-cb")
    assert alert["type"] == "batch.on_failure"


async def test_concurrent_ends_of_a_batch_fire_its_callbacks_exactly_once(
    client: httpx.AsyncClient, api: Api, db: Database
) -> None:
    queue = unique("b").lower()
    made = await create(client, batch(queue, 1, {"on_complete": ""}))
    [only] = await fetch(client, queue)
    # The job ends over v1 (no OJS report to fire it), then eight try at once: one wins.
    await api.call("PUT", f"/v1/tasks/{only['id']}/status", 200, json={"status": "COMPLETED"})
    workflow_id = uuid.UUID(made["id"])
    fired = await asyncio.gather(
        *(db.transaction(lambda s: fire_callbacks(s, workflow_id)) for _ in range(8))
    )
    assert sorted(fired) == [False] * 7 + [True]
    [callback] = await fetch(client, f"{queue}-cb", count=5)
    approvals = await db.transaction(
        lambda s: s.scalar(
            select(func.count())
            .select_from(Event)
            .where(Event.entity == "STAGE", Event.from_status == "WAITING")
        )
    )
    assert approvals == 1 and callback["type"] == "batch.on_complete"


BAD_WORKFLOWS = [
    ({"steps": [{"type": "a", "args": []}]}, "$.type"),
    ({"type": "dag", "steps": [{"type": "a", "args": []}]}, "$.type"),
    ({"type": "chain"}, "$.steps"),
    ({"type": "chain", "steps": []}, "$.steps"),
    ({"type": "chain", "steps": "a"}, "$.steps"),
    ({"type": "group", "steps": [{"type": "a", "args": []}]}, "$.jobs"),
    ({"type": "group", "jobs": [{"type": "a", "args": []}, 3]}, "$.jobs[1]"),
    ({"type": "group", "jobs": [{"type": "A", "args": []}]}, "$.jobs[0]"),
    ({"type": "chain", "steps": [{"type": "a"}]}, "$.steps[0]"),
    ({"type": "chain", "name": 7, "steps": [{"type": "a", "args": []}]}, "$.name"),
    ({"type": "batch", "jobs": [{"type": "a", "args": []}]}, "$.callbacks"),
    ({"type": "batch", "jobs": [{"type": "a", "args": []}], "callbacks": {}}, "$.callbacks"),
    (
        {"type": "batch", "jobs": [{"type": "a", "args": []}], "callbacks": {"on_success": 1}},
        "$.callbacks.on_success",
    ),
    (
        {"type": "chain", "steps": [{"type": "group", "jobs": [{"type": "a", "args": []}]}]},
        "$.steps[0]",
    ),
    (
        {
            "type": "chain",
            "steps": [{"type": "a", "args": [], "options": {"retry": {"max_attempts": -1}}}],
        },
        "$.steps[0]",
    ),
]


@pytest.mark.parametrize(("body", "path"), BAD_WORKFLOWS, ids=[p for _, p in BAD_WORKFLOWS])
async def test_a_bad_workflow_is_refused_by_its_path_and_makes_nothing(
    client: httpx.AsyncClient, db: Database, body: dict[str, Any], path: str
) -> None:
    said = await call(client, "POST", "/v1/workflows", body, 400)
    refused(said, "invalid_workflow")
    assert said["error"]["message"].startswith(f"{path}:")
    for model in (Workflow, Job):
        count = await db.transaction(
            lambda s, m=model: s.scalar(select(func.count()).select_from(m))
        )
        assert count == 0


async def test_an_unknown_workflow_is_not_found_in_the_specs_shape(
    client: httpx.AsyncClient,
) -> None:
    for name in (str(uuid.uuid4()), "not-an-id", "x" * 300):
        refused(await call(client, "GET", f"/v1/workflows/{name}", expect=404), "not_found")
        refused(await call(client, "DELETE", f"/v1/workflows/{name}", expect=404), "not_found")


async def test_retention_takes_a_workflow_with_its_last_job(
    client: httpx.AsyncClient, db: Database, clock: ManualClock
) -> None:
    queue = unique("g").lower()
    done = await create(client, {"type": "group", "jobs": [job("r.a", queue), job("r.b", queue)]})
    for fetched in await fetch(client, queue, count=2):
        await ack(client, fetched["id"])
    half = await create(client, {"type": "group", "jobs": [job("r.c", queue), job("r.d", queue)]})
    [one] = await fetch(client, queue)
    await ack(client, one["id"])
    clock.advance(timedelta(days=2))
    deleted = await delete_finished_before(db, clock.now() - timedelta(days=1))
    assert deleted.jobs == 3
    refused(await call(client, "GET", f"/v1/workflows/{done['id']}", expect=404), "not_found")
    kept = await read(client, half["id"])  # its job still open keeps it
    assert (kept["state"], kept["jobs_total"]) == ("running", 1)
    members = await db.transaction(
        lambda s: s.scalar(select(func.count()).select_from(WorkflowJob))
    )
    assert members == 1
