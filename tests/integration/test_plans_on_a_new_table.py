"""The hot path's plans, made on a new database: PostgreSQL plans each of its statements
once per connection and keeps the plan, so a plan made while the tables were small (a
new deployment's first claim and report) is the one its connection still runs a million
tasks later. On tables of a page, each must already read by key or by its index, never
the whole table; and the maintenance tick's scans name the statuses their partial indexes
hold, so that a plan kept for them can use those indexes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from sqlalchemy.dialects import postgresql

from jobnik_manager.clock import SystemClock
from jobnik_manager.db.claim import claim_statement
from jobnik_manager.db.complete import complete_statement
from jobnik_manager.db.engine import Database
from jobnik_manager.db.queries import queries, statement
from jobnik_manager.maintenance import expiry, reaper, time_limits

from ..support.api import Api
from ..support.plans import claim_params, database_at, explain, filled_database, scans_of

pytestmark = pytest.mark.postgres_only

TABLES = ("tasks", "stages", "jobs")


@pytest.fixture(scope="module")
def new_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A new deployment's database after its first job: a page of each table, which
    the planner reads faster whole than through an index."""
    with filled_database(request, first_job) as url:
        yield url


async def first_job(api: Api, _: Database) -> None:
    await api.one_stage_job("first", tasks=5)


@pytest.fixture
async def new(new_url: str) -> AsyncIterator[Database]:
    async with database_at(new_url) as db:
        yield db


def full_scans(plan: Any) -> list[str]:
    return [t for t in TABLES if ("Seq Scan", None) in scans_of(plan, t)]


@pytest.mark.parametrize("announce", [False, True], ids=["quiet", "announcing"])
async def test_a_claim_planned_on_small_tables_reads_the_claim_index(
    new: Database, announce: bool
) -> None:
    plan = await explain(new, claim_statement(True, announce), claim_params(new))
    assert ("Index Scan", "ix_tasks_claim") in scans_of(plan, "tasks")
    assert full_scans(plan) == []


async def test_a_completion_planned_on_small_tables_finds_its_tasks_by_id(new: Database) -> None:
    params = {
        "ids": [uuid.uuid4()],
        "leases": [uuid.uuid4()],
        "results": [None],
        "now": new.clock.now(),
        "principal": None,
    }
    plan = await explain(new, complete_statement(), params)
    assert ("Index Scan", "uq_tasks_id") in scans_of(plan, "tasks")
    assert full_scans(plan) == []


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("task", {"id": uuid.uuid4()}),
        ("stages", {"ids": [uuid.uuid4(), uuid.uuid4()]}),
        ("jobs", {"ids": [uuid.uuid4(), uuid.uuid4()]}),
    ],
    ids=["task", "stages", "jobs"],
)
async def test_a_read_planned_on_small_tables_is_a_key_lookup(
    new: Database, name: str, params: dict[str, Any]
) -> None:
    plan = await explain(new, statement(queries("read")[name]), params)
    assert full_scans(plan) == []


@pytest.mark.parametrize(
    ("module", "status"),
    [(reaper, "'IN_PROGRESS'"), (time_limits, "'IN_PROGRESS'"), (expiry, "'RETRIED'")],
    ids=["reaper", "time limits", "expiry"],
)
def test_the_ticks_scans_write_their_statuses_into_the_sql(module: Any, status: str) -> None:
    # As the driver runs them: the status in the text, where a bound `$1` would keep
    # the partial index out of a plan kept for the statement.
    scan = module.due_scan(SystemClock().now())
    sql = str(
        scan.compile(
            dialect=postgresql.asyncpg.dialect(), compile_kwargs={"render_postcompile": True}
        )
    )
    assert f"tasks.status = {status}" in sql or f"{status})" in sql, sql


@pytest.mark.parametrize(
    ("scan", "statuses"),
    [
        (expiry.due_jobs_scan, "'CREATED', 'PENDING', 'PAUSED'"),
        (time_limits.past_deadline_scan, "'CREATED', 'PENDING', 'IN_PROGRESS', 'PAUSED'"),
    ],
    ids=["expiry", "deadlines"],
)
def test_the_ticks_scans_of_jobs_write_their_statuses_into_the_sql(
    scan: Any, statuses: str
) -> None:
    sql = str(
        scan(SystemClock().now()).compile(
            dialect=postgresql.asyncpg.dialect(), compile_kwargs={"render_postcompile": True}
        )
    )
    assert f"jobs.status IN ({statuses})" in sql, sql
