"""Every move, through the HTTP API with authentication on, records the same event rows
on SQLite and on PostgreSQL, column for column and principal included.

One scenario makes each kind of move: creation, first claim and later claims (by batch
claim and by v1 dequeue), complete, fail with attempts left (RETRIED) and for good,
retry later, a retried task's claim, cancel, pause, resume, approval, a stage's turn,
abort, replay of a failed job, time-out, and lease expiry, with the cascades each
brings. It runs on both backends on a manual clock started at the same instant. Every
row logged is a legal move as `domain.moves` declares them, and every row stands where
its last move left it. The two event logs are then compared whole, with ids, leases
and times made relative (the rows of one step may come in any order: tasks claimed
together are taken in id order, and ids are random).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.domain.auth import Role
from jobnik_manager.domain.errors import IllegalTransition
from jobnik_manager.domain.moves import Entity, Move
from jobnik_manager.domain.transitions import Actor
from jobnik_manager.maintenance.reaper import reap_expired
from jobnik_manager.maintenance.time_limits import time_out_attempts
from jobnik_manager.services import tokens
from jobnik_manager.services.claimability import open_due_retries
from jobnik_manager.settings import Settings

from ..support.api import Api, unique
from ..support.apps import app_on

Row = tuple[Any, ...]
COLUMNS = (
    "entity",
    "entityId",
    "stageId",
    "taskId",
    "fromStatus",
    "toStatus",
    "attempt",
    "leaseId",
    "worker",
    "reason",
    "time",
    "principal",
)


@dataclass
class Run:
    """One backend's run: its clients, the names given to ids, and the rows of each step."""

    db: Database
    clock: ManualClock
    start: datetime
    clients: dict[str, Api]
    jobs: list[str] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    steps: list[tuple[str, list[Row]]] = field(default_factory=list)

    async def name_job(self, job_id: str, prefix: str) -> None:
        api = self.clients["producer"]
        self.jobs.append(job_id)
        self.names[job_id] = prefix
        for i, stage in enumerate(await api.call("GET", f"/v1/jobs/{job_id}/stages")):
            self.names[stage["id"]] = f"{prefix}.s{i}"
            tasks = await api.call("GET", f"/v1/stages/{stage['id']}/tasks")
            for task in tasks["items"]:
                self.names[task["id"]] = f"{prefix}.s{i}.{task['data']['name']}"

    def task(self, job: str, stage: int, name: str) -> str:
        wanted = f"{job}.s{stage}.{name}"
        return next(i for i, n in self.names.items() if n == wanted)

    def stage(self, job: str, stage: int) -> str:
        return next(i for i, n in self.names.items() if n == f"{job}.s{stage}")

    async def step(self, label: str) -> None:
        """The rows the step wrote, made comparable, as a sorted multiset."""
        new: list[Row] = []
        for job_id in self.jobs:
            page = await self.clients["admin"].call(
                "GET", f"/v1/jobs/{job_id}/events", params={"page_size": 1000}
            )
            rows = [self._row(e) for e in page["items"]]
            new.extend(rows[self.seen.get(job_id, 0) :])
            self.seen[job_id] = len(rows)
        self.steps.append((label, sorted(new, key=repr)))

    def _row(self, e: dict[str, Any]) -> Row:
        named = dict(e)
        for key in ("entityId", "stageId", "taskId"):
            if named.get(key) is not None:
                named[key] = self.names.get(named[key], "?")
        if named.get("principal") is not None:
            named["principal"] = self.names.get(named["principal"], "?")
        if named.get("leaseId") is not None:
            named["leaseId"] = "lease"
        when = datetime.fromisoformat(named["time"])
        named["time"] = (when.astimezone(UTC) - self.start).total_seconds()
        return tuple(named.get(c) for c in COLUMNS)


@asynccontextmanager
async def _run_on(url: str, start: datetime) -> AsyncIterator[Run]:
    clock = ManualClock(start)
    db = Database(url, pool_size=5, clock=clock)
    try:
        made = {}
        for name, role in (
            ("producer", Role.PRODUCER),
            ("worker", Role.WORKER),
            ("operator", Role.OPERATOR),
            ("admin", Role.ADMIN),
        ):
            token_name = unique(name)
            created = await db.transaction(
                lambda s, n=token_name, r=role: tokens.create(s, n, r)  # type: ignore[misc]
            )
            made[name] = (token_name, created.token)
        with app_on(db, Settings(database_url=url, auth="on")) as app:
            transport = httpx.ASGITransport(app=app)
            async with (
                httpx.AsyncClient(transport=transport, base_url="http://m") as p,
                httpx.AsyncClient(transport=transport, base_url="http://m") as w,
                httpx.AsyncClient(transport=transport, base_url="http://m") as o,
                httpx.AsyncClient(transport=transport, base_url="http://m") as a,
            ):
                clients = {"producer": p, "worker": w, "operator": o, "admin": a}
                for role, c in clients.items():
                    c.headers["authorization"] = f"Bearer {made[role][1]}"
                run = Run(db, clock, start, {r: Api(c) for r, c in clients.items()})
                # Principals are compared by role: token names are unique per run.
                run.names.update({made[r][0]: r for r in made})
                yield run
    finally:
        await db.dispose()


def _task(name: str, **extra: Any) -> dict[str, Any]:
    return {"data": {"name": name}, **extra}


async def _claim(run: Run, stage_type: str, n: int, **extra: Any) -> list[dict[str, Any]]:
    body = {"stageTypes": [stage_type], "limit": n, **extra}
    got = await run.clients["worker"].call("POST", "/v1/tasks/claim", json=body)
    claimed: list[dict[str, Any]] = got["items"]
    assert len(claimed) == n, got
    return claimed


async def _put(run: Run, who: str, task: dict[str, Any], status: str, **extra: Any) -> None:
    body = {"status": status, "leaseId": task.get("leaseId"), **extra}
    await run.clients[who].call("PUT", f"/v1/tasks/{task['id']}/status", json=body)


async def _scenario(run: Run) -> None:
    p, w, o = run.clients["producer"], run.clients["worker"], run.clients["operator"]
    tick = run.clock.advance
    a, b, c = unique("mv-a"), unique("mv-b"), unique("mv-c")
    stages = [
        {
            "type": a,
            "data": {},
            "tasks": [_task("a0", maxAttempts=2), _task("a1"), _task("a2")],
        },
        {
            "type": b,
            "data": {},
            "startAsWaiting": True,
            "tasks": [
                _task("b0", timeoutSeconds=5, maxAttempts=2),
                _task("b1", maxAttempts=1),
                _task("b2"),
            ],
        },
    ]
    job = await p.call("POST", "/v1/jobs", 201, json={"name": "jj", "data": {}, "stages": stages})
    await run.name_job(job["id"], "J")
    await run.step("create")

    tick(1)
    a0, a1, a2 = sorted(await _claim(run, a, 3), key=lambda t: run.names[t["id"]])
    await run.step("first claim")
    tick(1)
    await _put(run, "worker", a0, "FAILED", reason="flaky")
    await run.step("fail with attempts left")
    tick(1)
    await _put(run, "worker", a2, "RETRIED", reason="later", retryAfterSeconds=1)
    await run.step("retry later")
    tick(1)
    report = {"reports": [{"taskId": a1["id"], "status": "COMPLETED", "leaseId": a1["leaseId"]}]}
    await w.call("POST", "/v1/tasks/reports", json=report)
    await run.step("complete by batch report")
    tick(1)
    await open_due_retries(run.db)  # a2's delay is over
    again = await _claim(run, a, 2)
    await run.step("claim of retried tasks")
    tick(1)
    await p.set_job_status(job["id"], "PAUSED")
    await run.step("pause")
    tick(1)
    await p.set_job_status(job["id"], "PENDING")
    await run.step("resume")
    tick(1)
    for t in again:
        await _put(run, "worker", t, "COMPLETED")
    await run.step("complete, the stage and its turn to a waiting stage")
    tick(1)
    await o.approve(run.stage("J", 1))
    await run.step("approve")
    tick(1)
    await _put(run, "producer", {"id": run.task("J", 1, "b2")}, "ABORTED")
    await run.step("cancel a pending task")
    tick(1)
    await _claim(run, b, 2, leaseSeconds=30)
    await run.step("first claim of the second stage")
    tick(6)
    assert await time_out_attempts(run.db) >= 1
    await run.step("time-out")
    tick(60)
    assert await reap_expired(run.db) >= 1
    await run.step("lease expiry, failing the job")
    tick(1)
    await o.call("POST", f"/v1/jobs/{job['id']}/retry")
    await run.step("replay")
    tick(1)
    for t in await _claim(run, b, 3):
        await _put(run, "worker", t, "COMPLETED")
    await run.step("complete the job")

    # A v1 job: stages and tasks added one call at a time, claimed by dequeue, then a
    # task that fails for good, failing the job.
    tick(1)
    v1 = await p.create_job()
    stage = await p.create_stage(v1["id"], c)
    await p.call("POST", f"/v1/stages/{stage['id']}/tasks", 201, json=[_task("c0", maxAttempts=1)])
    await run.name_job(v1["id"], "V")
    await run.step("v1 create")
    tick(1)
    claimed = await w.dequeue(c)
    assert claimed is not None
    await run.step("v1 dequeue")
    tick(1)
    await _put(run, "worker", claimed, "FAILED", reason="broken")
    await run.step("fail for good")

    # A job aborted with a task running.
    tick(1)
    aborted = await p.call(
        "POST",
        "/v1/jobs",
        201,
        json={
            "name": "kk",
            "data": {},
            "stages": [{"type": c, "data": {}, "tasks": [_task("k0")]}],
        },
    )
    await run.name_job(aborted["id"], "K")
    tick(1)
    await _claim(run, c, 1)
    tick(1)
    await p.set_job_status(aborted["id"], "ABORTED")
    await run.step("abort")


async def _check_effects(run: Run) -> None:
    """Each logged row is a declared, legal move; each job, stage and task stands where
    its last move left it, ended (an end time) exactly when its status is final."""
    admin = run.clients["admin"]
    last: dict[tuple[str, str], str] = {}
    for job_id in run.jobs:
        page = await admin.call("GET", f"/v1/jobs/{job_id}/events", params={"page_size": 1000})
        for e in page["items"]:
            if e.get("toStatus") is None:
                continue
            last[(e["entity"], e["entityId"])] = e["toStatus"]
            assert _declared(e), e
    paths = {"JOB": "/v1/jobs/{}", "STAGE": "/v1/stages/{}", "TASK": "/v1/tasks/{}"}
    for (entity, entity_id), status in last.items():
        row = await admin.call("GET", paths[entity].format(entity_id))
        assert row["status"] == status, (entity, run.names[entity_id])
        if entity == "TASK":
            assert ("endTime" in row) is (status in FINAL), (run.names[entity_id], row)


FINAL = ("COMPLETED", "FAILED", "ABORTED")


def _declared(e: dict[str, Any]) -> bool:
    """Whether some actor may make the event's move (`domain.moves` refuses to build an
    illegal one)."""
    for actor in Actor:
        try:
            Move(Entity(e["entity"]), e.get("fromStatus"), e["toStatus"], actor)
        except IllegalTransition:
            continue
        return True
    return False


async def test_every_move_records_the_same_rows_on_both_backends(
    sqlite_url: str, postgres_url: str
) -> None:
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    results = []
    for url in (sqlite_url, postgres_url):
        async with _run_on(url, start) as run:
            await _scenario(run)
            await _check_effects(run)
            results.append(run.steps)
    on_sqlite, on_postgres = results

    # Each step moved something, and each row names who made it: the token that asked,
    # or nobody for the manager's own work (time limits, expired leases).
    for label, rows in on_sqlite:
        assert rows, label
        principals = {r[-1] for r in rows}
        if label in ("time-out", "lease expiry, failing the job"):
            assert principals == {None}, (label, rows)
        else:
            assert None not in principals, (label, rows)
    for (label, rows), (_, pg_rows) in zip(on_sqlite, on_postgres, strict=True):
        assert pg_rows == rows, label
