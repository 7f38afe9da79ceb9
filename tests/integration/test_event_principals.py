"""With authentication on, the event rows of a worker's claims and completions name its
token as `principal`, and the hand-tuned statements PostgreSQL runs them with
(db/sql/claim.sql and complete.sql) write the same rows as the session path
SQLite takes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from jobnik_manager.db.engine import Database
from jobnik_manager.domain.auth import Role

from ..support.api import Api, unique
from ..support.tokens import clients_as

Row = tuple[Any, ...]


@asynccontextmanager
async def _as(db: Database, producer: str, worker: str) -> AsyncIterator[tuple[Api, Api]]:
    """An auth-on app on `db`, with a client for each token."""
    async with clients_as(db, {producer: Role.PRODUCER, worker: Role.WORKER}) as apis:
        yield apis[producer], apis[worker]


async def _run(db: Database) -> tuple[list[Row], list[Row]]:
    """A producer's job of two stages run by a worker token: a first claim by dequeue and
    one by batch claim; completions that leave their stage open (one by status, one by
    batch report) and ones that close it. Then a job of the producer's that it aborts
    once a task of it was claimed. Answers each job's event rows, in order, with ids and
    token names named by what they are."""
    producer, worker = unique("producer"), unique("worker")
    first, second, third = unique("ev-a"), unique("ev-b"), unique("ev-c")
    async with _as(db, producer, worker) as (p, w):
        job, names = await _create(p, first, second)
        a = await w.dequeue(first)  # the stage's and the job's first claim
        assert a is not None
        b, c = await _claim(w, first, 2)
        await w.call("PUT", f"/v1/tasks/{a['id']}/status", json=_done(a))  # stage stays open
        await _report(w, b)  # stage stays open
        await w.call("PUT", f"/v1/tasks/{c['id']}/status", json=_done(c))  # closes stage 0
        d, e = await _claim(w, second, 2)  # the second stage's first claim
        await _report(w, d)  # stage stays open
        await _report(w, e)  # closes it and the job
        assert (await p.job(job))["status"] == "COMPLETED"

        aborted, more = await _create(p, third)
        names |= more
        await _claim(w, third, 1)
        await p.set_job_status(aborted, "ABORTED")

        tokens = {producer: "producer", worker: "worker"}
        return await _events(p, job, names, tokens), await _events(p, aborted, names, tokens)


async def _create(p: Api, *stage_types: str) -> tuple[str, dict[str, str]]:
    """A job with a stage of each type (the first of three tasks, the others of two), and
    its ids by name."""
    stages = [
        {"type": t, "data": {}, "tasks": [{"data": {"i": i}} for i in range(3 if n == 0 else 2)]}
        for n, t in enumerate(stage_types)
    ]
    job = await p.call("POST", "/v1/jobs", 201, json={"name": "jj", "data": {}, "stages": stages})
    names = {job["id"]: "job"}
    for i, stage in enumerate(await p.call("GET", f"/v1/jobs/{job['id']}/stages")):
        names[stage["id"]] = f"stage{i}"
        for task in (await p.call("GET", f"/v1/stages/{stage['id']}/tasks"))["items"]:
            names[task["id"]] = f"stage{i}.task{task['data']['i']}"
    return job["id"], names


async def _claim(w: Api, stage_type: str, n: int) -> list[dict[str, Any]]:
    """A batch claim that gets `n` tasks."""
    body = {"stageTypes": [stage_type], "limit": n}
    claimed: list[dict[str, Any]] = (await w.call("POST", "/v1/tasks/claim", json=body))["items"]
    assert len(claimed) == n
    return claimed


def _done(task: dict[str, Any]) -> dict[str, Any]:
    return {"status": "COMPLETED", "leaseId": task["leaseId"]}


async def _report(w: Api, task: dict[str, Any]) -> None:
    """A completion by batch report."""
    answer = await w.call(
        "POST", "/v1/tasks/reports", json={"reports": [{"taskId": task["id"], **_done(task)}]}
    )
    assert answer["items"][0]["task"]["status"] == "COMPLETED", answer


async def _events(p: Api, job: str, names: dict[str, str], tokens: dict[str, str]) -> list[Row]:
    events = await p.call("GET", f"/v1/jobs/{job}/events", params={"page_size": 1000})
    return [
        (
            e["entity"],
            names[e["entityId"]],
            e.get("fromStatus"),
            e.get("toStatus"),
            e.get("attempt"),
            tokens.get(e.get("principal"), e.get("principal")),
        )
        for e in events["items"]
    ]


async def test_claims_and_completions_name_the_worker_and_match_across_backends(
    sqlite_url: str, pg_db: Database
) -> None:
    sqlite_db = Database(sqlite_url)
    try:
        on_sqlite = await _run(sqlite_db)
    finally:
        await sqlite_db.dispose()
    on_postgres = await _run(pg_db)

    for run, aborted in (on_sqlite, on_postgres):
        created = [r for r in run + aborted if r[2] is None]
        assert {r[-1] for r in created} == {"producer"}, created
        # Every move after the creation is the worker's: claims, completions and what
        # they cascade to (starts, the next stage's turn, the ends).
        moved = [r for r in run if r[2] is not None]
        assert {(entity, to) for entity, _, _, to, _, _ in moved} == {
            ("TASK", "IN_PROGRESS"),
            ("TASK", "COMPLETED"),
            ("STAGE", "IN_PROGRESS"),
            ("STAGE", "COMPLETED"),
            ("STAGE", "PENDING"),
            ("JOB", "IN_PROGRESS"),
            ("JOB", "COMPLETED"),
        }
        assert {r[-1] for r in moved} == {"worker"}, moved
        # The abort and its cascade to the stage and the tasks are the producer's.
        ended = [r for r in aborted if r[3] == "ABORTED"]
        assert {r[0] for r in ended} == {"JOB", "STAGE", "TASK"}
        assert {r[-1] for r in ended} == {"producer"}, ended
    # The same moves, in the same order, with the same principals.
    assert on_postgres == on_sqlite
