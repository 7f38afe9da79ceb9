"""FakeManager: the Jobnik manager itself, in-process on a SQLite file of its own, reached
through an httpx transport; and FakeJobnik: a JobnikClient on one, for tests."""

from __future__ import annotations

import asyncio
import threading
import warnings
import weakref
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from jobnik_manager.app import create_app, use_database
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings

from .._client import JobnikClient
from .._models import NewStage, NewTask
from .._reports import TaskHeartbeat
from . import _files, _loop
from ._clock import FakeClock
from ._served import Served

FAKE_URL = "http://jobnik.fake"


class FakeManager:
    """The Jobnik manager, in-process, reached through `transport`.

    It is the manager's own app (`jobnik_manager`), its API, rules and event history,
    on a SQLite database of its own in a temporary file, removed with it. Its time is
    `clock`: what runs out on it (leases, retry delays, time limits, deadlines) is
    settled before the next request once the clock has moved, as the manager's
    maintenance would settle it. Nothing leaves the process.

    Put any JobnikClient on it with `JobnikClient(url, transport=manager.transport)`:
    the client's real HTTP, serialization, error mapping and retries run against it, on
    any event loop.
    """

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.clock = clock or FakeClock()
        path = _files.new_database()
        database = Database(_files.url(path), clock=self.clock)
        self._served = Served(_lend_app(database), database, self.clock)
        weakref.finalize(self, _close, self._served, path)
        _warm_up()

    @property
    def transport(self) -> httpx.AsyncBaseTransport:
        """A transport to this manager, for a JobnikClient."""
        # Made on each use: one kept here would hold the manager in a cycle, closed only
        # by a garbage collection, where the last client's end now closes it.
        return _Transport(self)


class _Transport(httpx.AsyncBaseTransport):
    """Requests to a FakeManager, answered on the manager loop."""

    def __init__(self, manager: FakeManager) -> None:
        self.manager = manager  # kept as long as a client uses it

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        answer = self.manager._served.answer(
            request.method, str(request.url), request.headers.raw, body
        )
        if asyncio.get_running_loop() is _loop.background():
            status, headers, content = await answer
        else:
            status, headers, content = await _loop.on_manager_loop(answer)
        return httpx.Response(status, headers=headers, content=content)


# Apps no FakeManager serves now, kept for the next: an app prepares its routes on its
# first requests (tens of milliseconds of CPU), which a suite of a few hundred fakes
# would otherwise pay once each.
_idle_apps: list[FastAPI] = []
_idle_lock = threading.Lock()


def _lend_app(database: Database) -> FastAPI:
    with _idle_lock:
        app = _idle_apps.pop() if _idle_apps else None
    if app is None:
        # The manager's defaults, whatever the environment says (JOBNIK_AUTH, ...); its
        # maintenance is `Served`'s.
        settings = Settings.model_construct(
            database_url=database.url, maintenance=False, metrics=False
        )
        return create_app(settings, database=database)
    use_database(app, database)
    return app


_warming = threading.Lock()
_warm = False


def _warm_up() -> None:
    """Once per process: run the calls a test makes most through a manager of its own,
    so that what the manager prepares on first use (imports, compiled statements) is
    done before a test's first heartbeat is timed."""
    global _warm
    with _warming:
        if _warm:
            return
        _warm = True
    _loop.wait_on_manager_loop(_exercise(FakeJobnik()))


async def _exercise(fake: FakeJobnik) -> None:
    async with fake:
        stages = [NewStage(type="warm-up", tasks=[NewTask(max_attempts=2), NewTask()])]
        job = await fake.create_job("warm-up", stages=stages)
        first, second = (await fake.claim_with_context("warm-up", limit=2)).items
        await fake.heartbeat_many(
            [TaskHeartbeat(task_id=first.id, lease_id=first.lease_id, progress=50)]
        )
        await fake.set_task_user_metadata(first.id, {"warm": True})
        await fake.add_task_event(first.id, "warm-up", lease_id=first.lease_id)
        await fake.fail(first.id, lease_id=first.lease_id, reason="warm-up")
        await fake.abort(job.id)
        await fake.get_job(job.id)
        await fake.get_task(second.id)
        _ = [event async for event in fake.iter_events(job.id)]


def _close(served: Served, path: Path) -> None:
    try:
        _loop.submit(_closed(served, path))
    except RuntimeError:  # the program is ending
        _files.remove(path)


async def _closed(served: Served, path: Path) -> None:
    await served.close()
    _files.remove(path)
    with _idle_lock:
        _idle_apps.append(served.app)


class FakeJobnik(JobnikClient):
    """A JobnikClient on a FakeManager (a new one unless `manager` is given), for tests.

    Use it wherever a JobnikClient goes, a Worker included: every call takes the SDK's
    own path (HTTP, JSON, errors, retries) to the manager in-process. `clock` is the
    manager's; `clock.advance(...)` lets leases and retry delays run out without
    waiting. `client(...)` is another client on the same manager, with other options;
    `transport` puts a client of your own on it. `options` are JobnikClient's
    (`retry`, `timeout`, `headers`, ...). Its `wait` polls every 10 ms by default.
    """

    _wait_poll_interval = timedelta(milliseconds=10)

    def __init__(self, manager: FakeManager | None = None, **options: Any) -> None:
        self.manager = manager or FakeManager()
        super().__init__(FAKE_URL, transport=self.manager.transport, **options)

    @property
    def clock(self) -> FakeClock:
        """The fake manager's clock."""
        return self.manager.clock

    @property
    def transport(self) -> httpx.AsyncBaseTransport:
        """The fake manager's transport, for a JobnikClient of your own."""
        return self.manager.transport

    def client(self, **options: Any) -> FakeJobnik:
        """Another client on the same fake manager; `options` as JobnikClient's."""
        return FakeJobnik(self.manager, **options)

    def advance(self, by: timedelta) -> None:
        """Deprecated: `clock.advance(by)`."""
        warnings.warn(
            "FakeJobnik.advance is deprecated; use fake.clock.advance",
            DeprecationWarning,
            stacklevel=2,
        )
        self.clock.advance(by)

    def __repr__(self) -> str:
        return "FakeJobnik()"
