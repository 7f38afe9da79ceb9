"""A workflow's lifecycle events (level 3, L3-WF-EVT-001; spec/ojs-events.md 3.5 and
4.4), on both backends: `workflow.started` when its first job is fetched,
`workflow.completed`, `workflow.failed` or `workflow.cancelled` when it ends, each told
once, however its jobs ended and however many notice at once; in the events feed beside
the jobs' and, with the outbox on, as messages."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import WorkflowEvent
from jobnik_manager.dispatch.outbox import Outbox
from jobnik_manager.services.workflow_events import record_events, watch_workflows
from jobnik_manager.services.workflows import fire_due_batches

from ..conftest import app_client
from ..support.api import Api, unique
from .test_ojs import TIME, call, refused
from .test_ojs_workflows import ack, batch, create, fetch, job, nack
from .test_outbox import drain

FLOW_TYPES = "workflow.started,workflow.completed,workflow.failed,workflow.cancelled"


async def told(client: httpx.AsyncClient, workflow_id: str) -> list[dict[str, Any]]:
    """The workflow's events in the feed, oldest first."""
    said = await call(client, "GET", f"/v1/events?types={FLOW_TYPES}&limit=100")
    return [e for e in said["events"] if e["subject"] == workflow_id]


async def test_a_chain_tells_its_start_once_fetched_and_its_completion_once(
    client: httpx.AsyncClient, db: Database
) -> None:
    queue = unique("chain").lower()
    body = {"type": "chain", "name": "etl", "steps": [job("a.b", queue), job("c.d", queue)]}
    made = await create(client, body)
    assert await told(client, made["id"]) == []
    [first] = await fetch(client, queue)
    [started] = await told(client, made["id"])
    assert started["type"] == "workflow.started" and started["id"].startswith("evt_")
    assert (started["specversion"], started["subject"], started["time"]) == (
        "1.0",
        made["id"],
        first["started_at"],
    )
    expected = {"workflow_id": made["id"], "workflow_name": "etl", "workflow_type": "chain"}
    assert started["data"] == {**expected, "total_steps": 2}
    await ack(client, first["id"], {"n": 1})
    assert len(await told(client, made["id"])) == 1  # a step, not the chain, completed
    [second] = await fetch(client, queue)
    await ack(client, second["id"])
    done = (await call(client, "GET", f"/v1/jobs/{second['id']}"))["job"]
    _, completed = await told(client, made["id"])
    assert (completed["type"], completed["time"]) == ("workflow.completed", done["completed_at"])
    assert completed["data"]["total_steps"] == 2 and completed["data"]["duration_ms"] >= 0
    # Noticed again, by the route or the tick: nothing more is told.
    assert await db.transaction(lambda s: record_events(s, uuid.UUID(made["id"]))) == 0
    assert await watch_workflows(db) == 0
    assert len(await told(client, made["id"])) == 2


async def test_a_failed_group_names_the_job_that_failed_it_and_a_cancelled_chain_is_told(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("group").lower()
    made = await create(
        client, {"type": "group", "jobs": [job("img.resize", queue), job("img.crop", queue)]}
    )
    one, two = await fetch(client, queue, count=2)
    await nack(client, one["id"])  # discarded: not retryable
    assert [e["type"] for e in await told(client, made["id"])] == ["workflow.started"]
    await ack(client, two["id"])
    _, failed = await told(client, made["id"])
    assert failed["type"] == "workflow.failed" and TIME.fullmatch(failed["time"])
    assert failed["data"]["failed_step_id"] == one["id"]
    assert failed["data"]["failed_step_type"] == one["type"]
    assert failed["data"]["error"] == {"code": "broken", "message": "it broke"}
    assert failed["data"]["workflow_name"] == "group"  # unnamed: its kind

    chain = await create(client, {"type": "chain", "steps": [job("x.y", unique("c").lower())]})
    await call(client, "DELETE", f"/v1/workflows/{chain['id']}")
    [cancelled] = await told(client, chain["id"])  # never started: no workflow.started
    assert cancelled["type"] == "workflow.cancelled"
    assert cancelled["data"]["workflow_id"] == chain["id"]


async def test_a_workflow_whose_jobs_end_another_way_is_told_by_the_tick_once(
    client: httpx.AsyncClient, api: Api, db: Database
) -> None:
    queue = unique("b").lower()
    made = await create(client, batch(queue, 2, {"on_complete": ""}))
    first, second = await fetch(client, queue, count=2)
    for fetched in (first, second):  # reported over v1: no OJS route looks
        await api.call(
            "PUT", f"/v1/tasks/{fetched['id']}/status", 200, json={"status": "COMPLETED"}
        )
    await watch_workflows(db)
    # Its jobs are done but its callback is still to run: the batch is not over.
    assert [e["type"] for e in await told(client, made["id"])] == ["workflow.started"]
    assert await fire_due_batches(db) == 1
    [callback] = await fetch(client, f"{queue}-cb")
    await api.call("PUT", f"/v1/tasks/{callback['id']}/status", 200, json={"status": "COMPLETED"})
    workflow_id = uuid.UUID(made["id"])
    # Eight notice at once, the tick among them: one tells it.
    noticed = await asyncio.gather(
        watch_workflows(db),
        *(db.transaction(lambda s: record_events(s, workflow_id)) for _ in range(7)),
    )
    assert sum(noticed) == 1
    rows = await db.transaction(
        lambda s: s.scalar(
            select(func.count())
            .select_from(WorkflowEvent)
            .where(WorkflowEvent.workflow_id == workflow_id)
        )
    )
    assert rows == 2
    assert [e["type"] for e in await told(client, made["id"])] == [
        "workflow.started",
        "workflow.completed",
    ]


async def test_the_feed_pages_through_the_jobs_and_the_workflows_events_once_each(
    client: httpx.AsyncClient,
) -> None:
    queue = unique("g").lower()
    made = await create(client, {"type": "group", "jobs": [job("p.q", queue)]})
    [only] = await fetch(client, queue)
    await ack(client, only["id"])
    everything = (await call(client, "GET", "/v1/events?limit=100"))["events"]
    seen, after = [], "0"
    while True:
        page = await call(client, "GET", f"/v1/events?limit=1&after={after}")
        seen += page["events"]
        after = page["cursor"]
        if not page["has_more"]:
            break
    assert [e["id"] for e in seen] == [e["id"] for e in everything]
    assert len({e["id"] for e in seen}) == len(seen)
    assert [e["type"] for e in seen] == [
        "job.enqueued",
        "job.started",
        "workflow.started",
        "job.completed",
        "workflow.completed",
    ]
    assert seen[2]["subject"] == made["id"]
    # Naming a queue leaves the workflows' events out: they belong to no queue.
    by_queue = (await call(client, "GET", f"/v1/events?queues={queue}"))["events"]
    assert [e["type"] for e in by_queue] == ["job.enqueued", "job.started", "job.completed"]
    for bad in ("x", "1.2.3", "-1", "1." + "9" * 30):
        refused(await call(client, "GET", f"/v1/events?after={bad}", expect=400), "invalid_request")
    refused(
        await call(client, "GET", "/v1/events?types=workflow.exploded", expect=400),
        "invalid_request",
    )


async def test_workflow_events_go_out_as_messages_with_the_outbox_on(db: Database) -> None:
    queue = unique("m").lower()
    async with app_client(db.with_hooks(Outbox())) as c:
        made = await create(c, {"type": "group", "name": "mail", "jobs": [job("m.n", queue)]})
        [only] = await fetch(c, queue)
        await ack(c, only["id"])
        sent = [(key, body) for key, body in await drain(db) if key.startswith("workflow.")]
        feed = await told(c, made["id"])
    assert [key for key, _ in sent] == ["workflow.started", "workflow.completed"]
    assert [body for _, body in sent] == feed  # the message is the feed's event, word for word
