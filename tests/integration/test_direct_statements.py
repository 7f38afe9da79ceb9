"""PostgreSQL: the claim and the completion run on asyncpg directly (`db.direct`); a
connection of theirs lost between requests is replaced, and the request still answers;
a claim whose connection broke once it was sent is not run again (it may have run), a
completion is (and counted once), and a stage's first claim starts the stage and its
job in the same commit."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text

from jobnik_manager.db.claim import claim_statement
from jobnik_manager.db.complete import complete_statement
from jobnik_manager.db.engine import Database, asyncpg_dsn
from jobnik_manager.dispatch.outbox import Outbox
from jobnik_manager.services import claims

from ..conftest import app_client
from ..support.api import Api, unique
from ..support.invariants import assert_invariants
from ..support.scrape import Scrape

pytestmark = pytest.mark.postgres_only


async def _terminate_other_backends(db: Database) -> int:
    """Terminate every connection to the database but one of its own (outside the
    pools, which lose all theirs), and wait until they are gone and this process has
    seen them close (a connection not yet seen closed is one a statement may be sent
    on)."""
    conn = await asyncpg.connect(asyncpg_dsn(db.url))
    try:
        # Each terminated process waited for, up to 5 s (PostgreSQL 14 and later).
        killed = await conn.fetchval(
            "WITH others AS MATERIALIZED (SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid())"
            " SELECT count(*) FROM others WHERE pg_terminate_backend(pid, 5000)"
        )
    finally:
        await conn.close()
    await asyncio.sleep(0.05)  # the closed sockets' EOF read by this event loop
    return int(killed)


async def _until(conn: Any, sql: str, **params: Any) -> Any:
    """The first row of `sql` whose first column is true, polled for."""
    while True:
        row = (await conn.execute(text(sql), params)).first()
        await conn.rollback()  # pg_stat_activity is read once per transaction
        if row is not None and row[0]:
            return row
        await asyncio.sleep(0.01)


async def _count(db: Database, sql: str, **params: Any) -> int:
    async with db.engine.connect() as conn:
        return int((await conn.execute(text(sql), params)).scalar_one())


async def _running(db: Database, stage_type: str) -> int:
    return await _count(
        db,
        "SELECT count(*) FROM tasks WHERE stage_type = :t AND status = 'IN_PROGRESS'",
        t=stage_type,
    )


async def test_dequeue_and_report_survive_their_connections_being_terminated(
    pg_api: Api, pg_db: Database
) -> None:
    stage_type = unique("direct")
    job = await pg_api.create_job()
    stage = await pg_api.create_stage(job["id"], stage_type)
    await pg_api.create_tasks(stage["id"], 3)

    first = await pg_api.dequeue(stage_type)
    assert first is not None
    assert await _terminate_other_backends(pg_db) >= 1  # the direct pool's connection, at least
    second = await pg_api.dequeue(stage_type)
    assert second is not None and second["id"] != first["id"]

    await _terminate_other_backends(pg_db)
    done = await pg_api.report(first["id"], "COMPLETED")
    assert (done["id"], done["status"]) == (first["id"], "COMPLETED")
    assert done["leaseId"] == first["leaseId"] and "endTime" in done
    # The check reads outside the requests' retries, on new connections: the engine's
    # idle ones were terminated too.
    await pg_db.engine.dispose()
    await assert_invariants(pg_db)


async def test_dequeue_of_several_types_binds_them_as_an_array(pg_api: Api) -> None:
    # The batch claim takes a list of types: one statement whatever the list's length.
    types = [unique("direct-a"), unique("direct-b"), unique("direct-c")]
    job = await pg_api.create_job()
    stage = await pg_api.create_stage(job["id"], types[1])
    (task,) = await pg_api.create_tasks(stage["id"], 1)
    body = {"stageTypes": types, "limit": 5}
    claimed = await pg_api.call("POST", "/v1/tasks/claim", json=body)
    assert [t["id"] for t in claimed["items"]] == [task["id"]]
    assert (await pg_api.call("POST", "/v1/tasks/claim", json=body))["items"] == []


async def test_a_claim_whose_answer_was_lost_is_not_run_again(
    pg_api: Api, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection breaks after the claim committed, before its answer arrives: run
    again, the claim would take more tasks and strand the first. It answers 503."""
    stage_type = unique("lost")
    stage = await pg_api.create_stage((await pg_api.create_job())["id"], stage_type)
    await pg_api.create_tasks(stage["id"], 3)
    claim_sql = {claim_statement(single, a).sql for single in (True, False) for a in (True, False)}
    runs: list[str] = []
    lost: list[Exception] = []
    fetch = asyncpg.Connection.fetch

    async def answer_lost(self: asyncpg.Connection, query: str, *args: Any, **kw: Any) -> Any:
        rows = await fetch(self, query, *args, **kw)
        if query in claim_sql:
            runs.append(query)
            self.terminate()
            raise lost[0]
        return rows

    monkeypatch.setattr(asyncpg.Connection, "fetch", answer_lost)
    for call, error in (
        (
            lambda: pg_api.http.patch(f"/v1/stages/{stage_type}/tasks/dequeue"),
            asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        ),
        (
            lambda: pg_api.http.post("/v1/tasks/claim", json={"stageTypes": [stage_type]}),
            asyncpg.InternalClientError("cannot switch to state 12; another operation (2) ..."),
        ),
    ):
        runs.clear()
        lost[:] = [error]
        before = await _running(pg_db, stage_type)
        answer = await call()
        assert answer.status_code == 503, answer.text
        assert answer.json()["code"] == "DATABASE_RELATED_ERROR"
        assert len(runs) == 1
        assert await _running(pg_db, stage_type) == before + 1  # the one run, nothing more
    monkeypatch.undo()
    await assert_invariants(pg_db)


async def test_a_claim_whose_connection_is_terminated_as_it_runs_is_not_run_again(
    pg_api: Api, pg_db: Database
) -> None:
    """The claim waits for its stage's row; its server process is terminated meanwhile:
    the claim answers 503 and took nothing, and the task is there for the next claim."""
    stage_type = unique("cut")
    stage = await pg_api.create_stage((await pg_api.create_job())["id"], stage_type)
    (task,) = await pg_api.create_tasks(stage["id"], 1)
    blocker = await pg_db.engine.connect()
    try:
        await blocker.begin()
        await blocker.execute(
            text("SELECT 1 FROM stages WHERE id = :id FOR UPDATE"), {"id": stage["id"]}
        )
        claiming = asyncio.create_task(pg_api.http.patch(f"/v1/stages/{stage_type}/tasks/dequeue"))
        waiting = (
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE '%claimed%'"
        )
        async with pg_db.engine.connect() as conn:
            (pid,) = await _until(conn, waiting)
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            # Gone before the stage's row is free: the claim never got past the lock.
            gone = "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = :pid)"
            await _until(conn, gone, pid=pid)
    finally:
        await blocker.rollback()
        await blocker.close()
    answer = await claiming
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "DATABASE_RELATED_ERROR"
    assert await _running(pg_db, stage_type) == 0
    again = await pg_api.dequeue(stage_type)
    assert again is not None and again["id"] == task["id"]
    await assert_invariants(pg_db)


@pytest.mark.parametrize("announce", [False, True], ids=["quiet", "announcing"])
async def test_a_first_claim_starts_its_stages_and_jobs_in_the_same_commit(
    pg_db: Database, monkeypatch: pytest.MonkeyPatch, announce: bool
) -> None:
    """After every commit of a claim, a reader on another connection finds no running
    task in a PENDING stage or job: one by dequeue (one stage), one by batch claim (the
    first of several fresh stages of several jobs at once)."""
    outbox = Outbox()
    db = pg_db.with_hooks(outbox) if announce else pg_db
    stage_type = unique("first")
    async with app_client(db) as client:
        api = Api(client)
        for _ in range(4):
            job = await api.create_job()
            stage = await api.create_stage(job["id"], stage_type)
            await api.create_tasks(stage["id"], 2)
    outbox.written.clear()

    seen: list[int] = []
    direct = db.direct

    async def observed(*args: Any, **kw: Any) -> Any:
        rows = await direct(*args, **kw)
        seen.append(
            await _count(
                db,
                "SELECT count(*) FROM tasks t JOIN stages s ON s.id = t.stage_id"
                " JOIN jobs j ON j.id = s.job_id WHERE t.status = 'IN_PROGRESS'"
                " AND (s.status = 'PENDING' OR j.status = 'PENDING')",
            )
        )
        return rows

    monkeypatch.setattr(db, "direct", observed)
    one = await claims.claim(db, [stage_type])
    rest = await claims.claim(db, [stage_type], limit=10, with_context=True)
    assert len(one.rows) == 1 and len(rest.rows) == 7
    assert seen and seen == [0] * len(seen)
    assert {st.status for st in rest.stages} == {"IN_PROGRESS"}
    assert {j.status for j in rest.jobs} == {"IN_PROGRESS"}
    starts = await _count(
        db,
        "SELECT count(*) FROM events e JOIN stages s ON s.job_id = e.job_id"
        " WHERE s.type = :t AND e.from_status = 'PENDING' AND e.to_status = 'IN_PROGRESS'"
        " AND e.entity IN ('STAGE', 'JOB')",
        t=stage_type,
    )
    assert starts == 8  # each of the four stages and jobs once
    messages = await _count(
        db, "SELECT count(*) FROM outbox WHERE routing_key LIKE '%.in_progress'"
    )
    assert messages == (8 if announce else 0)
    assert outbox.written.is_set() == announce
    monkeypatch.undo()
    await assert_invariants(pg_db)


async def test_a_create_whose_commit_broke_is_not_run_again(
    pg_api: Api, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection breaks as the COMMIT of a create is answered: the job exists, and
    run again the transaction would make a second one. It answers 503 and leaves one."""
    commit = asyncpg.transaction.Transaction.commit
    broken: list[bool] = []

    async def answer_lost(self: asyncpg.transaction.Transaction) -> None:
        await commit(self)
        if not broken:
            broken.append(True)
            self._connection.terminate()
            raise asyncpg.ConnectionDoesNotExistError(
                "connection was closed in the middle of operation"
            )

    name = unique("once")
    monkeypatch.setattr(asyncpg.transaction.Transaction, "commit", answer_lost)
    answer = await pg_api.http.post("/v1/jobs", json={"name": name, "data": {}})
    monkeypatch.undo()
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "DATABASE_RELATED_ERROR"
    assert broken == [True]
    listed = await pg_api.call("GET", "/v1/jobs", params={"job_name": name})
    assert len(listed["items"] if isinstance(listed, dict) else listed) == 1


class AnswerLost:
    """Patched in as asyncpg's `fetch`: the completion statement's first run commits,
    then its connection breaks before the answer is read. `runs` counts its runs."""

    def __init__(self) -> None:
        self.runs = 0
        self._statement = complete_statement().sql
        self._fetch = asyncpg.Connection.fetch

    def patch(self, monkeypatch: pytest.MonkeyPatch) -> None:
        lost = self

        async def fetch(conn: asyncpg.Connection, query: str, *args: Any, **kw: Any) -> Any:
            rows = await lost._fetch(conn, query, *args, **kw)
            if query == lost._statement:
                lost.runs += 1
                if lost.runs == 1:
                    conn.terminate()
                    raise asyncpg.ConnectionDoesNotExistError(
                        "connection was closed in the middle of operation"
                    )
            return rows

        monkeypatch.setattr(asyncpg.Connection, "fetch", fetch)


async def completions(api: Api, stage_type: str) -> float:
    """The manager's count of completions of `stage_type`, from its /metrics."""
    text_ = (await api.http.get("/metrics")).text
    return Scrape(text_).value("jobnik_task_completions_total", stage_type=stage_type)


async def test_a_completion_whose_answer_was_lost_is_run_again_and_counted_once(
    pg_api: Api, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection breaks after a batch's completion statement committed: run again,
    it finds nothing to do, and the full path answers the tasks as completed. The
    metrics count each completion once, as the event log holds it."""
    stage_type = unique("recount")
    stage = await pg_api.create_stage((await pg_api.create_job())["id"], stage_type)
    # One task more than the batch settles: a batch that would finish its stage is left
    # to the full path, and the completion statement would not run at all.
    await pg_api.create_tasks(stage["id"], 4)
    body = {"stageTypes": [stage_type], "limit": 3, "leaseSeconds": 60}
    claimed = (await pg_api.call("POST", "/v1/tasks/claim", json=body))["items"]
    assert len(claimed) == 3
    lost = AnswerLost()
    before = await completions(pg_api, stage_type)
    reports = [{"taskId": t["id"], "status": "COMPLETED", "leaseId": t["leaseId"]} for t in claimed]
    # One completed, and counted, before: repeated in the batch, it is not counted again.
    await pg_api.call("POST", "/v1/tasks/reports", json={"reports": reports[2:]})
    assert await completions(pg_api, stage_type) == before + 1
    lost.patch(monkeypatch)
    answer = await pg_api.call("POST", "/v1/tasks/reports", json={"reports": reports})
    monkeypatch.undo()
    assert lost.runs == 2  # run again after the break
    assert [item["task"]["status"] for item in answer["items"]] == ["COMPLETED"] * 3
    assert await completions(pg_api, stage_type) == before + 3
    # A worker's own repeat of the same reports (its answer lost on the way) counts none.
    await pg_api.call("POST", "/v1/tasks/reports", json={"reports": reports})
    assert await completions(pg_api, stage_type) == before + 3
    await assert_invariants(pg_db)


async def test_a_v1_completion_whose_answer_was_lost_is_answered_as_done(
    pg_api: Api, pg_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Jobnik v1 report names no lease. Its completion statement committed, the
    connection broke before the answer was read, and the statement ran again and found
    the task done: the worker is answered with its task COMPLETED, not refused as an
    illegal move, and the metrics count it once."""
    stage_type = unique("v1recount")
    stage = await pg_api.create_stage((await pg_api.create_job())["id"], stage_type)
    await pg_api.create_tasks(stage["id"], 2)
    task = await pg_api.dequeue(stage_type)
    assert task is not None
    lost = AnswerLost()
    before = await completions(pg_api, stage_type)
    lost.patch(monkeypatch)
    answer = await pg_api.report(task["id"], "COMPLETED")
    monkeypatch.undo()
    assert lost.runs == 2  # run again after the break
    assert answer["status"] == "COMPLETED"
    assert await completions(pg_api, stage_type) == before + 1
    # Sent again by the worker itself, the report is a move from COMPLETED: refused.
    await pg_api.report(task["id"], "COMPLETED", expect=400)
    assert await completions(pg_api, stage_type) == before + 1
    await assert_invariants(pg_db)
