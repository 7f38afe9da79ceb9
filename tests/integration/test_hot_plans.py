"""The plans the hot path depends on, held by tests instead of comments: on PostgreSQL
with a million tasks, the claim reads the partial claim index in order and the
completion finds its tasks by id; neither scans the tasks table, before PostgreSQL has
analysed it (a stage created a moment ago) and after.

Each statement is explained on a connection of the hot path's own pool, with its
settings (no bitmap scans, generic plans), and the very parameters a run would bind."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy.dialects import postgresql

from jobnik_manager.db.claim import claim_statement
from jobnik_manager.db.complete import complete_statement
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.expiry import due_jobs_scan
from jobnik_manager.maintenance.time_limits import past_deadline_scan
from jobnik_manager.services.claimability import due_query
from jobnik_manager.services.tasks import TaskFilter, tasks_query

from ..support.api import Api
from ..support.plans import (
    claim_params,
    database_at,
    explain,
    filled_database,
    scans_of,
    sorts_of,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TASKS = 1_000_000
COPIES = 50_000  # of each of the 20 tasks made through the API


@pytest.fixture(scope="module")
def big_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with filled_database(request, populate) as url:
        yield url


async def populate(api: Api, db: Database) -> None:
    """A million claimable tasks: two stage types in one job, made through the API, then
    each task copied (new ids) in one statement."""
    job = await api.create_job()
    for stage_type in ("hot", "cold"):
        stage = await api.create_stage(job["id"], stage_type)
        await api.create_tasks(stage["id"], 10)
    async with db.direct_transaction() as conn:
        columns = [
            r["column_name"]
            for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_name = 'tasks' AND column_name NOT IN ('seq', 'id')"
                " ORDER BY ordinal_position"
            )
        ]
        listed = ", ".join(columns)
        await conn.execute(
            f"INSERT INTO tasks (id, {listed})"
            f" SELECT gen_random_uuid(), {listed} FROM tasks, generate_series(1, {COPIES})"
        )
        assert await conn.fetchval("SELECT count(*) FROM tasks") == TASKS + 20


@pytest.fixture
async def big(big_url: str) -> AsyncIterator[Database]:
    async with database_at(big_url) as db:
        yield db


async def analysed(db: Database, yes: bool) -> None:
    async with db.direct_transaction() as conn:
        await conn.execute("ANALYZE tasks" if yes else "SELECT 1")


@pytest.mark.parametrize("analyse", [False, True], ids=["fresh", "analysed"])
@pytest.mark.parametrize("announce", [False, True], ids=["quiet", "announcing"])
async def test_a_claim_reads_the_claim_index_in_order(
    big: Database, analyse: bool, announce: bool
) -> None:
    await analysed(big, analyse)
    plan = await explain(big, claim_statement(True, announce), claim_params(big))
    scans = scans_of(plan, "tasks")
    assert ("Index Scan", "ix_tasks_claim") in scans, scans
    assert not [s for s in scans if s[0] in ("Seq Scan", "Bitmap Heap Scan")], scans
    # The claim takes the first `n` in the index's order: nothing sorts the table (the
    # statement sorts only the few rows it claimed, and the events it writes).
    assert not sorts_of(plan, "tasks"), json.dumps(plan, indent=1)


@pytest.mark.parametrize("analyse", [False, True], ids=["fresh", "analysed"])
async def test_a_completion_finds_its_tasks_by_id(big: Database, analyse: bool) -> None:
    await analysed(big, analyse)
    ids = [uuid.uuid4() for _ in range(100)]
    params = {
        "ids": ids,
        "leases": [None] * 100,
        "results": [None] * 100,
        "now": big.clock.now(),
        "principal": None,
    }
    plan = await explain(big, complete_statement(), params)
    reads = [scan for scan in scans_of(plan, "tasks") if scan[0] != "ModifyTable"]
    assert ("Index Scan", "uq_tasks_id") in reads, reads
    assert all(kind == "Index Scan" for kind, _ in reads), reads


@pytest.mark.parametrize("analyse", [False, True], ids=["fresh", "analysed"])
async def test_the_search_for_due_tasks_reads_only_the_tasks_that_wait(
    big: Database, analyse: bool
) -> None:
    # The maintenance loop's, once a second, and an OJS fetch's that comes back short.
    # Joined to the stages, it was planned from a running stage's side on a stage with
    # no statistics yet, and walked all its tasks each time (tens of milliseconds a
    # second at 100,000 tasks, during their drain).
    await analysed(big, analyse)
    query = due_query(big.clock.now())
    sql = query.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    async with big.direct_transaction() as conn:
        rows = await conn.fetch(f"EXPLAIN (FORMAT JSON) {sql}")
    plan = rows[0][0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    assert scans_of(plan, "tasks") == [("Index Scan", "ix_tasks_not_before")], plan


@pytest.mark.parametrize("analyse", [False, True], ids=["fresh", "analysed"])
@pytest.mark.parametrize(
    ("scan", "index"),
    [(due_jobs_scan, "ix_jobs_expiring"), (past_deadline_scan, "ix_jobs_deadline")],
    ids=["expired", "past deadline"],
)
async def test_the_tick_reads_only_the_jobs_its_search_can_find(
    big: Database, analyse: bool, scan: Callable[[datetime], Any], index: str
) -> None:
    # The maintenance tick's searches for jobs, once a second. An Open Job Spec push
    # makes a job of every task: here 20,000 finished ones (in a savepoint undone after),
    # one in a hundred with an expiry and a deadline that no longer matter.
    rows: list[Any] = []
    async with big.direct_transaction() as conn:
        with contextlib.suppress(Undone):
            async with conn.transaction():
                await _finished_jobs(conn, 20_000)
                if analyse:
                    await conn.execute("ANALYZE jobs")
                sql = scan(big.clock.now()).compile(
                    dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}
                )
                rows = list(await conn.fetch(f"EXPLAIN (FORMAT JSON) {sql}"))
                raise Undone
    plan = rows[0][0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    assert scans_of(plan, "jobs") == [("Index Scan", index)], plan


class Undone(Exception):
    pass


async def _finished_jobs(conn: Any, n: int) -> None:
    """`n` copies of the module's job, COMPLETED; every hundredth with an expiry and a
    deadline, both passed."""
    columns = await conn.fetch(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'jobs'"
        " AND column_name NOT IN"
        " ('id', 'status', 'start_time', 'end_time', 'expires_at', 'deadline')"
    )
    listed = ", ".join(r["column_name"] for r in columns)
    await conn.execute(
        f"INSERT INTO jobs (id, status, start_time, end_time, expires_at, deadline, {listed})"
        " SELECT gen_random_uuid(), 'COMPLETED', now(), now(),"
        " CASE WHEN n % 100 = 0 THEN now() END, CASE WHEN n % 100 = 0 THEN now() END,"
        f" {listed} FROM jobs, generate_series(1, {n}) AS n"
    )


async def test_the_checks_see_a_scan_and_a_sort_of_the_table(big: Database) -> None:
    # What the tests above refuse is there to see when a plan does read and sort the table.
    async with big.direct_transaction() as conn:
        rows = await conn.fetch(
            "EXPLAIN (FORMAT JSON) SELECT * FROM tasks WHERE worker IS NULL ORDER BY data::text"
        )
    plan = rows[0][0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    assert ("Seq Scan", None) in scans_of(plan, "tasks")
    assert sorts_of(plan, "tasks")


LATE = 20_000  # tasks of a stage made after the million: 2% of the table, at its end


async def late_stage(db: Database) -> uuid.UUID:
    """A stage of LATE tasks inserted after all the others (made once per module)."""
    async with db.direct_transaction() as conn:
        found = await conn.fetchval("SELECT stage_id FROM tasks WHERE stage_type = 'late' LIMIT 1")
        if found is not None:
            return uuid.UUID(str(found))
        stage = uuid.uuid4()
        columns = await conn.fetch(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_name IN ('stages', 'tasks')"
            " AND column_name NOT IN ('id', 'seq', 'type', 'stage_id', 'stage_type', 'stage_order')"
            " ORDER BY ordinal_position"
        )
        of = {
            t: ", ".join(r["column_name"] for r in columns if r["table_name"] == t)
            for t in ("stages", "tasks")
        }
        await conn.execute(
            f"INSERT INTO stages (id, type, stage_order, {of['stages']})"
            f" SELECT $1, 'late', 3, {of['stages']} FROM stages WHERE type = 'cold'",
            stage,
        )
        await conn.execute(
            f"INSERT INTO tasks (id, stage_id, stage_type, {of['tasks']})"
            f" SELECT gen_random_uuid(), $1, 'late', {of['tasks']} FROM tasks"
            f" WHERE stage_type = 'cold' LIMIT {LATE}",
            stage,
        )
    return stage


@pytest.mark.parametrize("analyse", [False, True], ids=["fresh", "analysed"])
async def test_a_page_of_a_stages_tasks_reads_the_stage_in_order(
    big: Database, analyse: bool
) -> None:
    # Not the hot path, but the dashboard's job page: with `stage_id` alone indexed, the
    # planner took the primary key in order and filtered it, reading every task ahead
    # of the stage's (1.8 s for a stage of 1% at the end of ten million). The service's
    # own statement, for a stage whose tasks came last. With the stage as an equality,
    # an ANALYZE now and then still tipped the planner to that walk; random reads made
    # dearer tip it every time, and the statement must hold its plan through them.
    stage = await late_stage(big)
    await analysed(big, analyse)
    page = tasks_query(TaskFilter(stage_id=stage)).offset(40).limit(20)
    sql = page.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True})
    for random_page_cost in (4, 40):
        async with big.direct_transaction() as conn:
            await conn.execute(f"SET LOCAL random_page_cost = {random_page_cost}")
            rows = await conn.fetch(f"EXPLAIN (FORMAT JSON) {sql}")
        plan = rows[0][0]
        plan = json.loads(plan) if isinstance(plan, str) else plan
        assert scans_of(plan, "tasks") == [("Index Scan", "ix_tasks_stage_id_seq")], plan
        assert not sorts_of(plan, "tasks"), json.dumps(plan, indent=1)
