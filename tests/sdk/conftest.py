"""SDK fixtures: a JobnikClient on the real app in-process, and a `surface` that is
either that client (on SQLite or PostgreSQL) or the in-memory FakeJobnik, so the same
test holds the fake to the manager's behaviour."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import httpx
import pytest

from jobnik_manager.app import create_app
from jobnik_manager.clock import Clock, ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings
from jobnik_sdk import Backoff, JobnikClient, RequestRetryPolicy
from jobnik_sdk.testing import FakeJobnik

FAST_RETRY = RequestRetryPolicy(
    max_attempts=3,
    backoff=Backoff(initial=timedelta(milliseconds=1), maximum=timedelta(milliseconds=5)),
)


def in_process_client(database: Database) -> JobnikClient:
    app = create_app(Settings(database_url=database.url), database=database)
    return JobnikClient("http://manager", transport=httpx.ASGITransport(app=app), retry=FAST_RETRY)


@pytest.fixture
async def jobnik(db: Database) -> AsyncIterator[JobnikClient]:
    async with in_process_client(db) as client:
        yield client


@pytest.fixture(params=["sqlite", "postgres", "fake"])
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
    """The manager (through the SDK) on each backend, and the fake. Tests use unique
    names and stage types, so rows left by earlier tests do not matter. The manager's
    time is `clock`."""
    if surface_url is None:
        yield FakeJobnik()
        return
    database = Database(surface_url, pool_size=5, clock=clock)
    try:
        async with in_process_client(database) as client:
            yield client
    finally:
        await database.dispose()


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
