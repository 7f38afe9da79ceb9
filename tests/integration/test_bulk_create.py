"""Creating thousands of tasks in one request: the answer, the stored rows and the event
log agree, task for task and in the request's order, on both backends."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from sqlalchemy import Table, insert, select
from sqlalchemy import event as sa_event
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from jobnik_manager.db import bulk
from jobnik_manager.db.bulk import _needs_null, insert_alike, insert_many, insert_rows
from jobnik_manager.db.deferred import defer, gathered
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import JOBS, Job, JobAsset, Task
from jobnik_manager.domain.tasks import DEFAULT_MAX_ATTEMPTS

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

STAGE_POLICY = {"initialDelaySeconds": 1.5, "multiplier": 2, "maxDelaySeconds": 60}


def task_spec(i: int) -> dict[str, Any]:
    """Task i of a bulk create: most plain, some with every optional field, some with
    JSON values that are easy to get wrong (beyond 64 bits, tiny floats, non-ASCII)."""
    spec: dict[str, Any] = {"data": {"i": i}}
    if i % 5 == 1:
        spec["userMetadata"] = {"who": "é日本🎉", "none": None}
    if i % 7 == 2:
        spec["maxAttempts"] = 1 + i % 4
    if i % 11 == 3:
        spec["traceparent"] = f"00-{i + 1:032x}-{i + 1:016x}-01"
        spec["tracestate"] = "k=v"
    if i % 13 == 4:
        spec["retryPolicy"] = {"initialDelaySeconds": 2, "multiplier": 3}
    if i % 17 == 5:
        spec["data"] |= {"big": 2**70, "tiny": 1e-05, "huge": 1.5e300, "deep": [None, {"x": []}]}
    return spec


async def all_events(api: Api, job_id: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    page = 1
    while True:
        answer = await api.call(
            "GET", f"/v1/jobs/{job_id}/events", params={"page": page, "page_size": 1000}
        )
        items += answer["items"]
        if len(items) >= answer["total"]:
            return items
        page += 1


async def stored_stage(api: Api, stage_id: str) -> dict[str, Any]:
    stage: dict[str, Any] = await api.call(
        "GET", f"/v1/stages/{stage_id}", params={"should_return_tasks": "true"}
    )
    return stage


def assert_created_events(log: list[dict[str, Any]], tasks: list[dict[str, Any]]) -> None:
    """One creation event per task, in the tasks' order, naming the task as stored."""
    assert len(log) == len(tasks)
    for event, task in zip(log, tasks, strict=True):
        assert event == {
            "id": event["id"],
            "time": task["creationTime"],
            "entity": "TASK",
            "entityId": task["id"],
            "jobId": event["jobId"],
            "stageId": task["stageId"],
            "taskId": task["id"],
            "fromStatus": None,
            "toStatus": "PENDING",
            "attempt": 0,
            "leaseId": None,
            "worker": None,
            "reason": None,
        }


async def test_a_bulk_job_answers_what_it_stored(api: Api, db: Database) -> None:
    first_type, second_type = unique("bulk-a"), unique("bulk-b")
    body = {
        "name": unique("bulk"),
        "data": {"k": "v"},
        "stages": [
            {"type": first_type, "data": {}, "tasks": [task_spec(i) for i in range(3000)]},
            {
                "type": second_type,
                "data": {},
                "retryPolicy": STAGE_POLICY,
                "tasks": [task_spec(i) for i in range(500)],
            },
        ],
    }
    answer = await api.call("POST", "/v1/jobs", 201, json=body)

    # The answer is what a read gives afterwards, stage by stage and task by task.
    without_tasks = [{k: v for k, v in s.items() if k != "tasks"} for s in answer["stages"]]
    job = await api.job(answer["id"], should_return_stages="true")
    assert job == answer | {"stages": without_tasks}
    for stage in answer["stages"]:
        assert stage == await stored_stage(api, stage["id"])

    first, second = answer["stages"]
    assert (first["status"], second["status"]) == ("PENDING", "CREATED")
    assert first["summary"]["pending"] == 3000 and second["summary"]["pending"] == 500
    for stage, n in ((first, 3000), (second, 500)):
        specs = [task_spec(i) for i in range(n)]
        assert [t["data"] for t in stage["tasks"]] == [s["data"] for s in specs]
        trace = stage["traceparent"].split("-")[1]
        for task, spec in zip(stage["tasks"], specs, strict=True):
            assert task["status"] == "PENDING" and task["attempts"] == 0
            assert task["userMetadata"] == spec.get("userMetadata", {})
            assert task["maxAttempts"] == spec.get("maxAttempts", DEFAULT_MAX_ATTEMPTS)
            if "traceparent" in spec:
                assert (task["traceparent"], task["tracestate"]) == (spec["traceparent"], "k=v")
            else:
                assert task["traceparent"].split("-")[1] == trace
                assert "tracestate" not in task
            own = spec.get("retryPolicy")
            default = STAGE_POLICY if stage is second else None
            expected_policy = (
                {"initialDelaySeconds": 2.0, "multiplier": 3.0, "maxDelaySeconds": 3600.0}
                if own
                else default and {k: float(v) for k, v in default.items()}
            )
            assert task.get("retryPolicy") == expected_policy

    log = await all_events(api, answer["id"])
    assert [e["id"] for e in log] == sorted(e["id"] for e in log)
    assert [(e["entity"], e.get("stageId")) for e in log if e["entity"] != "TASK"] == [
        ("JOB", None),
        ("STAGE", first["id"]),
        ("STAGE", second["id"]),
    ]
    second_at = next(i for i, e in enumerate(log) if e.get("stageId") == second["id"])
    assert_created_events(log[2:second_at], first["tasks"])
    assert_created_events(log[second_at + 1 :], second["tasks"])
    await assert_invariants(db)

    # Tasks of equal priority are handed out oldest first: in the request's order.
    for expected in first["tasks"][:3]:
        claimed = await api.dequeue(first_type)
        assert claimed is not None and claimed["id"] == expected["id"]
    assert await api.dequeue(second_type) is None


async def test_bulk_tasks_added_to_a_stage_and_replayed(api: Api, db: Database) -> None:
    job = await api.create_job()
    stage = await api.create_stage(job["id"], unique("bulk"))
    before = await api.create_tasks(stage["id"], 3)
    specs = [task_spec(i) for i in range(2500)]
    key = {"Idempotency-Key": unique("bulk-key")}
    url = f"/v1/stages/{stage['id']}/tasks"

    added = await api.call("POST", url, 201, json=specs, headers=key)
    assert [t["data"] for t in added] == [s["data"] for s in specs]
    stored = await stored_stage(api, stage["id"])
    assert stored["tasks"] == before + added
    assert stored["summary"]["pending"] == stored["summary"]["total"] == 2503
    log = [e for e in await all_events(api, job["id"]) if e["entity"] == "TASK"]
    assert_created_events(log[3:], added)

    # The stored answer comes back whole; nothing is created twice.
    assert await api.call("POST", url, 201, json=specs, headers=key) == added
    assert (await stored_stage(api, stage["id"]))["summary"]["total"] == 2503
    await assert_invariants(db)


async def test_a_bulk_stage_appended_to_a_job(api: Api, db: Database) -> None:
    job = await api.create_job()
    specs = [task_spec(i) for i in range(1200)]
    body = {"type": unique("bulk"), "data": {}, "startAsWaiting": True, "tasks": specs}
    stage = await api.call("POST", f"/v1/jobs/{job['id']}/stage", 201, json=body)
    assert stage["status"] == "WAITING"
    assert stage == await stored_stage(api, stage["id"])
    assert [t["data"] for t in stage["tasks"]] == [s["data"] for s in specs]
    log = [e for e in await all_events(api, job["id"]) if e["entity"] == "TASK"]
    assert_created_events(log, stage["tasks"])
    assert await api.dequeue(body["type"]) is None  # waiting for approval
    await assert_invariants(db)


class Boom(Exception):
    pass


def job_row(name: str) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "id": uuid.uuid4(),
        "name": name,
        "data": {"big": 2**70, "s": "é"},
        "user_metadata": {},
        "priority": "MEDIUM",
        "status": "PENDING",
        "percentage": 0,
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "tracestate": None,
        "creation_time": now,
        "update_time": now,
    }


async def test_bulk_insert_belongs_to_its_transaction(db: Database) -> None:
    # The very first statement of the transaction: it must not run on its own.
    rolled_back, kept = job_row(unique("gone")), job_row(unique("kept"))

    async def fail(s: AsyncSession) -> None:
        await insert_many(s, Job, [rolled_back])
        raise Boom

    with pytest.raises(Boom):
        await db.transaction(fail)
    await db.transaction(lambda s: insert_many(s, Job, iter([kept])))

    async def names(s: AsyncSession) -> list[str]:
        return list((await s.execute(select(Job.name))).scalars())

    assert await db.transaction(names) == [kept["name"]]

    async def data(s: AsyncSession) -> Any:
        return (await s.execute(select(Job.data))).scalar_one()

    assert await db.transaction(data) == kept["data"]


async def test_bulk_insert_errors_are_sqlalchemy_errors(db: Database) -> None:
    row = {
        "id": uuid.uuid4(),
        "stage_id": uuid.uuid4(),  # no such stage
        "job_id": uuid.uuid4(),
        "stage_type": "t",
        "priority_rank": 1,
        "claimable": False,
        "status": "PENDING",
        "attempts": 0,
        "max_attempts": 1,
        "data": {},
        "user_metadata": {},
        "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        "creation_time": datetime.now(UTC),
        "update_time": datetime.now(UTC),
    }
    with pytest.raises(IntegrityError):
        await db.transaction(lambda s: insert_many(s, Task, [row]))


async def _begun(s: AsyncSession) -> None:
    """A statement first, so what follows runs on the driver's own connection (before
    one, SQLAlchemy's path begins the transaction on PostgreSQL)."""
    await s.execute(select(1))


async def test_rows_inserted_on_the_driver_read_back_as_sqlalchemys(db: Database) -> None:
    tricky = {"who": "é日本🎉", "big": 2**70, "tiny": 1e-05, "none": None, "deep": [{"x": []}]}
    through_sqlalchemy = job_row(unique("orm")) | {"data": tricky, "priority_number": 7}
    on_the_driver = through_sqlalchemy | {"id": uuid.uuid4(), "name": unique("driver")}

    async def both(s: AsyncSession) -> None:
        await s.execute(insert(JOBS), [through_sqlalchemy])
        await insert_rows(s, JOBS, [on_the_driver])

    await db.transaction(both)

    async def rows(s: AsyncSession) -> dict[str, dict[str, Any]]:
        found = (await s.execute(select(JOBS))).mappings()
        return {r["name"]: dict(r) for r in found}

    stored = await db.transaction(rows)
    orm, driver = stored[through_sqlalchemy["name"]], stored[on_the_driver["name"]]
    assert driver["data"] == tricky
    assert {**driver, "id": orm["id"], "name": orm["name"]} == orm


async def test_driver_inserts_belong_to_their_transaction_and_fail_as_sqlalchemy(
    db: Database,
) -> None:
    gone = job_row(unique("gone"))

    async def fail(s: AsyncSession) -> None:
        await _begun(s)
        await insert_rows(s, JOBS, [gone])
        raise Boom

    with pytest.raises(Boom):
        await db.transaction(fail)

    async def names(s: AsyncSession) -> list[str]:
        return list((await s.execute(select(Job.name))).scalars())

    assert await db.transaction(names) == []
    twice = job_row(unique("twice"))

    async def duplicate(s: AsyncSession) -> None:
        await _begun(s)
        await insert_rows(s, JOBS, [twice, twice])

    with pytest.raises(IntegrityError):
        await db.transaction(duplicate)
    assert await db.transaction(names) == []


async def test_rows_alike_store_what_they_were_given(db: Database) -> None:
    """`insert_alike` converts what the rows share once and leaves out a column NULL in
    every row: what is stored is what each row, written out whole, says."""
    shared = job_row(unique("alike"))
    varying = ("id", "name", "data", "tracestate", "partial")
    same = {k: v for k, v in shared.items() if k not in varying} | {"not_before": None}
    values = [
        (uuid.uuid4(), f"{shared['name']}-{i:03}", {"i": i, "s": "é"}, None, i % 2 == 0)
        for i in range(120)  # more than a plain INSERT takes: the bulk path
    ]
    await db.transaction(lambda s: insert_alike(s, Job, same, varying, values))

    async def read(s: AsyncSession) -> list[tuple[Any, ...]]:
        columns = (Job.id, Job.name, Job.data, Job.tracestate, Job.partial, Job.not_before)
        rows = await s.execute(
            select(*columns, Job.priority, Job.creation_time)
            .where(Job.name.like(f"{shared['name']}-%"))
            .order_by(Job.name)
        )
        return [tuple(row) for row in rows]

    assert await db.transaction(read) == [
        (*row, None, "MEDIUM", shared["creation_time"]) for row in values
    ]


def test_a_column_left_out_takes_its_server_default_so_only_those_without_one_are() -> None:
    jobs = cast(Table, Job.__table__)
    assert _needs_null(jobs, "partial")  # server default false: a NULL must be written
    assert not _needs_null(jobs, "reason")


async def test_rows_deferred_together_read_back_as_sqlalchemys_and_belong_to_their_transaction(
    db: Database,
) -> None:
    """Deferred rows of several tables, a foreign key between two of them, in one
    statement on PostgreSQL (rows a table in arrays): stored as SQLAlchemy stores them,
    the child's key checked once every row is in, gone with a rolled back transaction."""
    tricky = {"who": "é日本🎉", "big": 2**70, "tiny": 1e-05, "none": None, "deep": [{"x": []}]}
    through_sqlalchemy = job_row(unique("orm")) | {"data": tricky, "priority_number": 7}
    together = [
        through_sqlalchemy | {"id": uuid.uuid4(), "name": f"{unique('together')}-{i}"}
        for i in range(3)
    ]
    asset = {
        "id": uuid.uuid4(),
        "job_id": together[2]["id"],
        "type": "file",
        "uri": "s3://b/k",
        "created_at": datetime.now(UTC),
        "position": 0,
    }

    assets_table = cast(Table, JobAsset.__table__)
    deferred = [(assets_table, [asset]), (JOBS, together)]
    if db.is_sqlite:  # a table at a time there: the parent first
        deferred.reverse()
    # On PostgreSQL the child first: its key is checked as the one statement ends.

    async def both(s: AsyncSession) -> None:
        await s.execute(insert(JOBS), [through_sqlalchemy])
        for table, rows in deferred:
            defer(s, table, rows)

    await db.transaction(both)

    async def rows(s: AsyncSession) -> dict[str, dict[str, Any]]:
        found = (await s.execute(select(JOBS))).mappings()
        return {r["name"]: dict(r) for r in found}

    stored = await db.transaction(rows)
    orm = stored[through_sqlalchemy["name"]]
    for row in together:
        assert stored[row["name"]] == orm | {"id": row["id"], "name": row["name"]}

    async def assets(s: AsyncSession) -> list[uuid.UUID]:
        return list((await s.execute(select(JobAsset.job_id))).scalars())

    assert await db.transaction(assets) == [together[2]["id"]]

    gone = job_row(unique("gone"))

    async def fail(s: AsyncSession) -> None:
        async with gathered(s):
            await insert_rows(s, JOBS, [gone])
        raise Boom

    with pytest.raises(Boom):
        await db.transaction(fail)
    assert gone["name"] not in await db.transaction(rows)

    orphan = asset | {"job_id": uuid.uuid4()}
    with pytest.raises(IntegrityError):
        await db.transaction(lambda s: _deferred(s, assets_table, [orphan]))


async def _deferred(s: AsyncSession, table: Table, rows: list[dict[str, Any]]) -> None:
    defer(s, table, rows)


async def test_a_small_create_sends_its_rows_in_one_statement(
    api: Api, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A create of a few tasks per stage: its job, stages, tasks and their events go to
    PostgreSQL as one statement (a task's latency from its creation counts each round
    trip), its idempotency key and NOTIFY as another at commit. SQLite's statements
    cost no round trip: there they go one by one."""
    sent: list[str] = []
    real = bulk.run

    async def spy(driver: Any, sql: str, records: list[tuple[Any, ...]]) -> None:
        sent.append(sql)
        await real(driver, sql, records)

    def through_sqlalchemy(*args: Any) -> None:
        sent.append(args[2])  # a traced engine's statements all go this way

    monkeypatch.setattr(bulk, "run", spy)
    engine = db.engine.sync_engine
    sa_event.listen(engine, "before_cursor_execute", through_sqlalchemy)
    try:
        await _create_a_small_job(api, db, sent)
    finally:
        sa_event.remove(engine, "before_cursor_execute", through_sqlalchemy)


async def _create_a_small_job(api: Api, db: Database, sent: list[str]) -> None:
    stage_type = unique("small")
    body = {
        "name": unique("small"),
        "data": {},
        "stages": [
            {"type": stage_type, "data": {}, "tasks": [task_spec(i) for i in range(3)]},
            {"type": unique("next"), "data": {}, "tasks": [task_spec(i) for i in range(2)]},
        ],
    }
    waiting = asyncio.create_task(
        api.call(
            "POST",
            "/v1/tasks/claim",
            json={"stageTypes": [stage_type], "limit": 5, "waitSeconds": 30},
        )
    )
    await asyncio.sleep(0.2)
    key = {"Idempotency-Key": unique("k")}
    answer = await api.call("POST", "/v1/jobs", 201, json=body, headers=key)
    inserts = [sql for sql in sent if "INSERT INTO" in sql]
    tables = ("jobs", "stages", "tasks", "events")
    if db.is_sqlite:
        # A table's rows at a time, as they come; the events at commit.
        into = [sql.split()[2] for sql in inserts]
        assert into == ["jobs", "stages", "tasks", "stages", "tasks", "events", "idempotency_keys"]
    else:
        # The rows wait for the commit, and go with the key's row and the NOTIFY.
        assert len(inserts) == 1, inserts
        [together] = inserts
        assert all(f"INSERT INTO {table} " in together for table in (*tables, "idempotency_keys"))
        assert "pg_notify" in together
    # The NOTIFY went out with it: the waiting claim has the first stage's tasks.
    claimed = (await asyncio.wait_for(waiting, 10))["items"]
    first, second = answer["stages"]
    assert sorted(t["id"] for t in claimed) == sorted(t["id"] for t in first["tasks"])

    assert second == await stored_stage(api, second["id"])  # the first one is claimed
    log = await all_events(api, answer["id"])
    assert [e["id"] for e in log] == sorted(e["id"] for e in log)
    created = [e for e in log if e["fromStatus"] is None]
    assert [(e["entity"], e.get("taskId")) for e in created] == [
        ("JOB", None),
        ("STAGE", None),
        *(("TASK", t["id"]) for t in first["tasks"]),
        ("STAGE", None),
        *(("TASK", t["id"]) for t in second["tasks"]),
    ]
    await assert_invariants(db)


async def test_a_create_of_small_stages_with_many_tasks_in_all(api: Api, db: Database) -> None:
    """Stages of a few tasks each, more than one statement's worth together: the rows
    go table by table, each after those it refers to, and the log keeps its order."""
    body = {
        "name": unique("many"),
        "data": {},
        "stages": [
            {"type": unique(f"s{n}"), "data": {}, "tasks": [task_spec(i) for i in range(40)]}
            for n in range(3)
        ],
    }
    answer = await api.call("POST", "/v1/jobs", 201, json=body)
    for stage in answer["stages"]:
        assert stage == await stored_stage(api, stage["id"])
    log = await all_events(api, answer["id"])
    assert [e["id"] for e in log] == sorted(e["id"] for e in log)
    at = 1
    for stage in answer["stages"]:
        assert (log[at]["entity"], log[at]["entityId"]) == ("STAGE", stage["id"])
        assert_created_events(log[at + 1 : at + 41], stage["tasks"])
        at += 41
    assert at == len(log)
    await assert_invariants(db)
