"""SDK fixtures: a JobnikClient on the real app in-process, and a `surface` that is
either the FakeJobnik (the manager in-process on SQLite, as users test with it) or a
client on the manager in-process on PostgreSQL, so the SDK's tests run on both
backends."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
import pytest

from jobnik_manager.clock import Clock, ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.dispatch.outbox import Outbox
from jobnik_manager.maintenance.loop import run_tick
from jobnik_manager.settings import Settings
from jobnik_sdk import Backoff, JobnikClient, RequestRetryPolicy
from jobnik_sdk.testing import FakeClock, FakeJobnik, FakeManager

from ..support import workers
from ..support.api import Api
from ..support.apps import app_on
from ..support.engines import lent_database
from ..support.invariants import assert_invariants
from ..support.profiles import running  # noqa: F401  (the end-to-end tests' deployments)

# What the SDK tests run against: the manager through the SDK, or the fake (the manager
# on SQLite).
Surface = JobnikClient | FakeJobnik

# A Worker's pauses between empty claims in tests: a few milliseconds.
QUICK = workers.QUICK

FAST_RETRY = RequestRetryPolicy(
    max_attempts=3,
    backoff=Backoff(initial=timedelta(milliseconds=1), maximum=timedelta(milliseconds=5)),
)


@asynccontextmanager
async def in_process_client(database: Database) -> AsyncIterator[JobnikClient]:
    with app_on(database) as app:
        transport = httpx.ASGITransport(app=app)
        async with JobnikClient("http://manager", transport=transport, retry=FAST_RETRY) as client:
            yield client


@pytest.fixture
async def jobnik(db: Database) -> AsyncIterator[JobnikClient]:
    async with in_process_client(db) as client:
        yield client


@pytest.fixture(params=["fake", "postgres"])
def surface_url(request: pytest.FixtureRequest) -> str | None:
    # A sync fixture: the session URL fixtures migrate with their own event loop.
    if request.param == "fake":
        return None
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture
async def surface(
    surface_url: str | None, clock: Clock
) -> AsyncIterator[JobnikClient | FakeJobnik]:
    """The fake (the manager on SQLite), and the manager on PostgreSQL through the SDK.
    Tests use unique names and stage types, so rows left by earlier tests do not
    matter. The manager's time is the fake's clock, or `clock`."""
    if surface_url is None:
        yield FakeJobnik()
        return
    async with (
        lent_database(surface_url, pool_size=5, clock=clock) as database,
        in_process_client(database) as client,
    ):
        yield client


@pytest.fixture
def advance(surface: JobnikClient | FakeJobnik, clock: Clock) -> Callable[[timedelta], None]:
    """Moves the surface's time on, so leases and retry delays run out without a sleep:
    the fake's clock, or the manager's (a test module that moves time gives a
    `ManualClock` as its `clock` fixture)."""

    def move(by: timedelta) -> None:
        if isinstance(surface, FakeJobnik):
            surface.clock.advance(by)
        else:
            assert isinstance(clock, ManualClock), "the manager's clock must be a ManualClock"
            clock.advance(by)

    return move


@pytest.fixture
async def api(surface_url: str | None) -> AsyncIterator[Api]:
    """Raw HTTP on the manager (each backend, in-process; the fake's on SQLite), with
    the helpers of tests/support/api.py: for what the SDK does not (yet) say. On
    PostgreSQL, DESIGN.md's invariants are checked once the test is done."""
    if surface_url is None:
        transport: httpx.AsyncBaseTransport = FakeManager().transport
        async with httpx.AsyncClient(transport=transport, base_url="http://fake") as http:
            yield Api(http)
        return
    async with lent_database(surface_url, pool_size=5) as database:
        with app_on(database) as app:
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://manager"
            ) as http:
                yield Api(http)
        await assert_invariants(database)


@dataclass
class Timed:
    """Raw HTTP on the manager (the fake's, or in-process on PostgreSQL), and its time."""

    api: Api
    now: Callable[[], datetime]
    # Moves time on, and lets the manager's maintenance tick run once.
    advance: Callable[[timedelta], Awaitable[None]]
    database: Database | None


@pytest.fixture
async def timed(surface_url: str | None) -> AsyncIterator[Timed]:
    """As `api`, with the backend's clock moved by hand: the fake's (which settles what
    ran out before its next request), or the manager's (its maintenance tick run by
    `advance`, with the outbox on)."""
    if surface_url is None:
        fake = FakeManager(FakeClock())

        async def advance_fake(by: timedelta) -> None:
            fake.clock.advance(by)

        async with httpx.AsyncClient(transport=fake.transport, base_url="http://fake") as http:
            yield Timed(Api(http), fake.clock.now, advance_fake, None)
        return
    clock = ManualClock()
    async with lent_database(surface_url, pool_size=5, clock=clock) as lent:
        database = lent.with_hooks(Outbox())
        with app_on(database, Settings(database_url=surface_url, maintenance=False)) as app:

            async def advance(by: timedelta) -> None:
                clock.advance(by)
                # The app's own view of the database, whose hooks wake its waiting claims.
                await run_tick(app.state.database)

            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://manager"
            ) as http:
                yield Timed(Api(http), clock.now, advance, database)
        await assert_invariants(database)
