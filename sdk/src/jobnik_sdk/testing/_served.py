"""The manager's app served on the manager loop (`_loop`), with the maintenance its own
loop would run: what ran out (leases, retry delays, time limits, deadlines) is settled
before a request once the fake's clock has moved, or every `TICK` of real time, and
every `TICK` while a request waits (a long-polling claim)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import httpx
from fastapi import FastAPI

from jobnik_manager.api.routes.schedules import job_of
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.loop import run_tick

from ._clock import FakeClock

log = logging.getLogger(__name__)

# How often, in real time, maintenance settles what ran out while requests are open (a
# moved clock settles at once): a tick costs four statements.
TICK = 0.2  # seconds
# Connections idle this long are closed: each holds a thread, which would keep the
# program from ending.
IDLE = 0.5  # seconds

Headers = Sequence[tuple[bytes, bytes]]
Answer = tuple[int, Headers, bytes]


class Served:
    """One manager app, answering requests on the manager loop."""

    def __init__(self, app: FastAPI, database: Database, clock: FakeClock) -> None:
        self.app = app
        self.database = database
        self._asgi = httpx.ASGITransport(app=app)
        self._clock = clock
        self._seen_moves = clock._moves
        self._ticked = float("-inf")
        self._tick: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._idle: asyncio.TimerHandle | None = None
        self._closing: asyncio.Future[None] | None = None
        self._unanswered: set[asyncio.Future[httpx.Response]] = set()

    async def answer(self, method: str, url: str, headers: Headers, body: bytes) -> Answer:
        """The app's answer to one request."""
        self._in_flight += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        try:
            await self.maintain()
            request = httpx.Request(method, url, headers=headers, content=body)
            answering = asyncio.ensure_future(self._asgi.handle_async_request(request))
            # A caller that gives up (a heartbeat past its deadline) leaves the request to
            # finish, as a server does: cancelled inside its transaction, it would leave
            # SQLite's write lock held by a connection never given back.
            self._unanswered.add(answering)
            answering.add_done_callback(self._answered)
            while not answering.done():
                await asyncio.wait([answering], timeout=TICK)
                if not answering.done():
                    await self.maintain()
            response = answering.result()
            return response.status_code, response.headers.raw, await response.aread()
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle = asyncio.get_running_loop().call_later(IDLE, self._close_idle)

    async def maintain(self) -> None:
        """Settle what ran out, if the clock moved or a tick's time passed since the last
        settling; a request that comes while one is under way waits for it."""
        loop = asyncio.get_running_loop()
        while True:
            if self._tick is not None and not self._tick.done():
                await asyncio.shield(self._tick)
                continue
            moved = self._clock._moves != self._seen_moves
            if not moved and loop.time() - self._ticked < TICK:
                return
            self._seen_moves, self._ticked = self._clock._moves, loop.time()
            self._tick = asyncio.ensure_future(self._run_tick())

    async def _run_tick(self) -> None:
        try:
            # The app's view of the database, whose hooks wake its waiting claims.
            await run_tick(self.app.state.database, job_of)
        except Exception:
            log.exception("the fake manager's maintenance failed")

    def _answered(self, answering: asyncio.Future[httpx.Response]) -> None:
        self._unanswered.discard(answering)
        if self._in_flight == 0 and not self._unanswered and self._idle is None:
            self._idle = asyncio.get_running_loop().call_later(IDLE, self._close_idle)

    def _close_idle(self) -> None:
        self._idle = None
        quiet = self._in_flight == 0 and not self._unanswered
        if quiet and (self._tick is None or self._tick.done()):
            # Closes the connections now in the pool; the next request opens new ones.
            self._closing = asyncio.ensure_future(self.database.engine.dispose())

    async def close(self) -> None:
        """Close the database's connections for good, once what is still being answered
        has ended: a long-polling claim whose client went away would otherwise go on
        against a database file that is gone (and SQLite would make a new, empty one)."""
        if self._idle is not None:
            self._idle.cancel()
        left: list[asyncio.Future[Any]] = [*self._unanswered]
        if self._tick is not None:
            left.append(self._tick)
        for work in left:
            work.cancel()
        await asyncio.gather(*left, return_exceptions=True)
        await self.database.dispose()
