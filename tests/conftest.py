"""Shared fixtures: a real database per backend (SQLite and PostgreSQL), migrated once
per run with Alembic and emptied before each test, and an HTTP client on the app."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import os
import re
import tempfile
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from prometheus_client.metrics import MetricWrapperBase
from sqlalchemy import make_url

from jobnik_manager.clock import Clock, SystemClock
from jobnik_manager.db import migrate
from jobnik_manager.db.engine import Database, asyncpg_dsn
from jobnik_manager.domain.auth import Role
from jobnik_manager.observe import metrics as manager_metrics
from jobnik_manager.services import tokens
from jobnik_manager.settings import Settings

from .support.api import Api
from .support.apps import app_on
from .support.engines import lent_database

# The local server over its Unix socket where it has one: a round trip costs the test
# process and the server a fifth less CPU than over TCP on loopback, and the tests make
# hundreds of thousands. Processes the tests start get the same URL.
_SOCKETS = Path("/var/run/postgresql")
POSTGRES_URL = os.environ.get(
    "JOBNIK_TEST_POSTGRES_URL",
    f"postgresql+asyncpg://postgres@/jobnik_test?host={_SOCKETS}"
    if (_SOCKETS / ".s.PGSQL.5432").exists()
    else "postgresql+asyncpg://postgres@127.0.0.1:5432/jobnik_test",
)
# CI sets this so that an unreachable PostgreSQL fails the run instead of skipping.
REQUIRE_POSTGRES = os.environ.get("JOBNIK_TEST_REQUIRE_POSTGRES", "") not in ("", "0", "false")
AMQP_URL = os.environ.get("JOBNIK_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
REQUIRE_RABBITMQ = os.environ.get("JOBNIK_TEST_REQUIRE_RABBITMQ", "") not in ("", "0", "false")
# The API tests' app with authentication on (tests/integration/test_auth_processes.py runs
# the parity suite so).
AUTH_ON = os.environ.get("JOBNIK_TEST_AUTH", "off") == "on"


def database_named(url: str, name: str) -> str:
    """`url` with its database `name` (whatever else it holds: a socket's `?host=`)."""
    return make_url(url).set(database=name).render_as_string(hide_password=False)


async def _admin(url: str, *statements: str) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(database_named(url, "postgres")), timeout=5)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def _amqp_ping(url: str) -> None:
    import aio_pika

    connection = await aio_pika.connect(url, timeout=5)
    await connection.close()


# A test process makes and drops many objects (apps, engines, models, answers): with the
# collector's default thresholds its young-generation passes cost several percent of a run.
gc.set_threshold(50_000, 20, 100)


def pytest_collection_finish(session: pytest.Session) -> None:
    # What was imported and collected lives to the end of the run: kept out of the
    # collector's passes, the last of which (pytest's, at exit) would walk it all again.
    gc.freeze()


# Modules of slow tests alone whose collection itself is costly (the fuzzer builds its
# cases as it collects, seconds in each test process): left out of runs that cannot
# select a slow test, such as the default `-m "not e2e and not slow"`.
SLOW_MODULES = {"test_openapi_fuzz.py"}


def _leaves_out_slow(markexpr: str) -> bool:
    return re.search(r"\bnot\s+slow\b", markexpr) is not None


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.name in SLOW_MODULES and _leaves_out_slow(config.option.markexpr):
        return True
    return None


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # The fuzzer's plugins (schemathesis and hypothesis: a second of each process's
    # start), which pyproject.toml keeps from loading by itself, for runs that may
    # select the fuzzer. Called as this file is loaded, before the options are parsed.
    config = pluginmanager.get_plugin("pytestconfig")
    if not _leaves_out_slow(config.known_args_namespace.markexpr):
        pluginmanager.import_plugin("_hypothesis_pytestplugin")
        pluginmanager.import_plugin("schemathesis.pytest.plugin")


@pytest.fixture(scope="session")
def amqp_url() -> str:
    """A reachable RabbitMQ, or a skip (a failure when CI requires it)."""
    try:
        # In a thread of its own: the fixture may be asked for from inside a running loop.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(lambda: asyncio.run(_amqp_ping(AMQP_URL))).result()
    except Exception as exc:
        if REQUIRE_RABBITMQ:
            pytest.fail(f"RabbitMQ is required but unreachable at {AMQP_URL}: {exc}")
        pytest.skip(f"RabbitMQ unreachable at {AMQP_URL}: {exc}")
    return AMQP_URL


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    # A database of this run's own, so that concurrent runs never disturb each other.
    name = f"{make_url(POSTGRES_URL).database}_{os.getpid()}"
    url = database_named(POSTGRES_URL, name)
    try:
        outside_any_loop(
            _admin(url, f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"')
        )
    except (OSError, asyncpg.PostgresError) as exc:
        if REQUIRE_POSTGRES:
            pytest.fail(f"PostgreSQL is required but unreachable at {POSTGRES_URL}: {exc}")
        pytest.skip(f"PostgreSQL unreachable at {POSTGRES_URL}: {exc}")
    # Alembic runs its own event loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(migrate.upgrade, url).result()
    yield url
    outside_any_loop(_admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def outside_any_loop(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` to its end in a thread of its own: a session fixture may first be
    asked for from inside a running event loop (an async test, or Playwright's sync
    API), where asyncio.run would refuse, and its error would stay for the session."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, work).result()


@pytest.fixture(scope="session")
def sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'jobnik.db'}"
        migrate.upgrade(url)
        yield url


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


TABLES = (
    "events",
    "tasks",
    "stages",
    "unique_job_keys",
    "job_assets",
    "dead_letter_discards",
    "jobs",
    "idempotency_keys",
    "outbox",
    "api_tokens",
    "workers",
    "stage_type_pauses",
    "schedule_runs",
    "schedules",
    "stage_type_limits",
    "workflow_events",
    "workflow_jobs",
    "workflows",
    "worker_directives",
)
# The tables with a row: a test leaves most of them empty, and a DELETE, even of nothing,
# cost SQLite a statement compiled each time.
FILLED = " UNION ALL ".join(f"SELECT '{t}' WHERE EXISTS (SELECT 1 FROM {t})" for t in TABLES)


@asynccontextmanager
async def _emptied(url: str, clock: Clock) -> AsyncIterator[Database]:
    """The database at `url` with every table emptied, lent for the block (kept for the
    process's next test: tests/support/engines.py)."""
    async with lent_database(url, pool_size=20, clock=clock) as database:
        # DELETE, children first, on PostgreSQL too: on tables this small it takes a
        # quarter of a TRUNCATE's time, which a thousand tests would pay. The tables
        # with rows in one script sent to the driver, one transaction: one round trip,
        # where a statement apiece took seventeen, each prepared.
        async with database.engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            if database.is_sqlite:
                filled = [row[0] for row in driver.sqlite.execute(FILLED)]
            else:
                filled = [row[0] for row in await driver.fetch(FILLED)]
            # TABLES' order (a table's rows before those they refer to); one script.
            empty = " ".join(f"DELETE FROM {t};" for t in TABLES if t in filled)
            if empty and database.is_sqlite:
                await driver.executescript(f"BEGIN IMMEDIATE; {empty} COMMIT;")
            elif empty:
                await driver.execute(empty)  # several statements: one implicit transaction
        yield database


# The manager's counters and histograms are the test process's, and those of tasks are
# labelled by stage type: a run's thousands of tests, each with types of its own, left tens
# of thousands of series, which every later scrape wrote out and read back (a tenth of the
# API tests' time). Each test starts with none. (The requests' series, by route template,
# are few, and the app keeps hold of them.)
_BY_STAGE_TYPE = [
    metric
    for metric in vars(manager_metrics).values()
    if isinstance(metric, MetricWrapperBase) and "stage_type" in metric._labelnames
]


@pytest.fixture(autouse=True)
def _task_metrics_of_this_test_alone() -> None:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        for metric in _BY_STAGE_TYPE:
            metric.clear()


@pytest.fixture
def clock() -> Clock:
    """The manager's clock in a test: the real one, unless a test module gives a
    `ManualClock` to move on instead of sleeping."""
    return SystemClock()


@pytest.fixture
async def db(database_url: str, clock: Clock) -> AsyncIterator[Database]:
    async with _emptied(database_url, clock) as database:
        yield database


@asynccontextmanager
async def app_client(db: Database) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client on the real app, in-process. With JOBNIK_TEST_AUTH=on the app
    requires tokens and the client sends an admin's, as a v1 client given one would."""
    settings, headers = None, {}
    if AUTH_ON:
        made = await db.transaction(lambda s: tokens.create(s, "test-admin", Role.ADMIN))
        settings = Settings(database_url=db.url, auth="on")
        headers = {"authorization": f"Bearer {made.token}"}
    with app_on(db, settings) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://manager", headers=headers
        ) as c:
            yield c


@pytest.fixture
async def client(db: Database) -> AsyncIterator[httpx.AsyncClient]:
    async with app_client(db) as c:
        yield c


@pytest.fixture
def api(client: httpx.AsyncClient) -> Api:
    return Api(client)


# PostgreSQL only: for what SQLite cannot show (several manager processes, row locks).


@pytest.fixture
async def pg_db(postgres_url: str, clock: Clock) -> AsyncIterator[Database]:
    async with _emptied(postgres_url, clock) as database:
        yield database


@pytest.fixture
async def pg_api(pg_db: Database) -> AsyncIterator[Api]:
    async with app_client(pg_db) as c:
        yield Api(c)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # After pytest's last collection (which reports what its finalisers raise), the heap
    # is kept out of the interpreter's own passes at exit: a test process holds a million
    # objects by then, and walking them again held each process's exit up for seconds.
    gc.freeze()
