"""Long-poll wake-ups: claims waiting for work of some stage types are woken when tasks
of those types become claimable.

A transaction that makes tasks claimable counts them by stage type
(`domain.announcements.tasks_ready`). After it commits, as many waiters of each type in
this process are woken, the longest waiting first, not every one: a thousand idle
workers do not all claim for one new task. On PostgreSQL the same transaction also sends
`NOTIFY jobnik_ready` (a JSON object of counts by type, or `*` where that would not fit
in a NOTIFY: every waiter), so every other replica's listener wakes its
own waiters (`ReadyWaiters` is the transaction hook); a replica's listener passes over
the NOTIFYs its own connections sent, whose waiters were woken at commit. A wake-up is
only a hint to claim again: a lost one costs at most the rest of a claim's wait, a
spurious one an empty claim; a woken claim whose client has gone passes its wake-up on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Container, Iterable, Iterator, Mapping
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.deferred import defer_notify
from ..db.engine import asyncpg_dsn
from ..domain.announcements import EVERY, READY_TYPES

log = logging.getLogger(__name__)

CHANNEL = "jobnik_ready"
# PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more (and the transaction with it).
_PAYLOAD_BYTES = 7_999
EVERY_TYPE = "*"
_RECONNECT = (0.5, 10.0)  # seconds: first and longest pause between listener reconnects


class Waiter:
    """One claim waiting for tasks of `types`."""

    __slots__ = ("event", "types")

    def __init__(self, types: frozenset[str]) -> None:
        self.types = types
        self.event = asyncio.Event()


class ReadyWaiters:
    """The claims of this process that are waiting for work, by stage type; as a
    transaction hook, it announces and delivers the wake-ups of each transaction."""

    info: Mapping[str, Any] = {}

    def __init__(self) -> None:
        # By type, in the order they began to wait (a dict keeps it; its values unused).
        self._by_type: dict[str, dict[Waiter, None]] = {}

    async def before_commit(self, s: AsyncSession) -> None:
        """On PostgreSQL, queue the NOTIFY for the types noted so far; it is delivered
        on commit and dropped on rollback, like the change it announces."""
        ready = s.info.get(READY_TYPES)
        if ready and s.get_bind().dialect.name == "postgresql":
            # Sent with the transaction's other appends, in one statement.
            defer_notify(s, CHANNEL, ready_payload(ready))

    def after_commit(self, info: Mapping[str, Any]) -> None:
        ready = info.get(READY_TYPES)
        if ready:
            self.wake(ready)

    @contextlib.contextmanager
    def waiting(self, types: Iterable[str]) -> Iterator[Waiter]:
        """Register before claiming, so that a wake-up between an empty claim and the
        wait is not lost."""
        waiter = Waiter(frozenset(types))
        for t in waiter.types:
            self._by_type.setdefault(t, {})[waiter] = None
        try:
            yield waiter
        finally:
            for t in waiter.types:
                group = self._by_type.get(t)
                if group is not None:
                    group.pop(waiter, None)
                    if not group:
                        del self._by_type[t]

    def wake_all(self) -> None:
        for group in self._by_type.values():
            for waiter in group:
                waiter.event.set()

    def wake(self, ready: Mapping[str, int]) -> None:
        """Wake up to `count` waiters of each type that are not awake already."""
        for t, count in ready.items():
            left = count
            for waiter in self._by_type.get(t, {}):
                if left <= 0:
                    break
                if not waiter.event.is_set():
                    waiter.event.set()
                    left -= 1

    def pass_on(self, waiter: Waiter) -> None:
        """A woken claim that will not claim (its client went away): wake another."""
        self.wake(dict.fromkeys(waiter.types, 1))


def ready_payload(ready: Mapping[str, int]) -> str:
    """The NOTIFY for `ready`: its counts by type, or, too many to fit, every waiter's."""
    payload = json.dumps(ready, separators=(",", ":"))
    return payload if len(payload.encode()) <= _PAYLOAD_BYTES else EVERY_TYPE


def parse_ready(payload: str) -> dict[str, int] | None:
    """The counts by type a NOTIFY carries; None for every waiter of every type. Replicas
    of earlier versions send "type:count,..." (or a bare type: all of its waiters)."""
    if payload == EVERY_TYPE:
        return None
    if payload.startswith("{"):
        with contextlib.suppress(ValueError):
            counts = json.loads(payload)
            return {str(t): n for t, n in counts.items() if isinstance(n, int)}
        return None  # unreadable: a spurious wake-up costs an empty claim, a lost one more
    ready: dict[str, int] = {}
    for item in payload.split(","):
        name, _, count = item.rpartition(":")
        if name and count.isdigit():
            ready[name] = ready.get(name, 0) + int(count)
        elif item:
            ready[item] = EVERY
    return ready


async def listen(url: str, waiters: ReadyWaiters, own: Container[int] = ()) -> None:
    """Wake this process's waiters on every other replica's NOTIFY, reconnecting as
    needed. `own`: the server process ids of this process's connections (kept up to
    date by its engine), whose NOTIFYs woke its waiters at commit already; waking more
    for them would make a claim per task for nothing."""
    pause = _RECONNECT[0]
    while True:
        try:
            async with _listening(url, waiters, own) as closed:
                pause = _RECONNECT[0]
                await closed.wait()
            log.warning("wake-up listener lost its connection; reconnecting")
        except (OSError, asyncpg.PostgresError) as exc:
            log.warning("wake-up listener cannot connect (%s); retrying in %.1fs", exc, pause)
        await asyncio.sleep(pause)
        pause = min(pause * 2, _RECONNECT[1])


@contextlib.asynccontextmanager
async def _listening(
    url: str, waiters: ReadyWaiters, own: Container[int]
) -> AsyncIterator[asyncio.Event]:
    closed = asyncio.Event()
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        conn.add_termination_listener(lambda _c: closed.set())

        def on_notify(_c: object, pid: int, _channel: str, payload: str) -> None:
            if pid not in own:
                ready = parse_ready(payload)
                if ready is None:
                    waiters.wake_all()
                else:
                    waiters.wake(ready)

        await conn.add_listener(CHANNEL, on_notify)
        # Claims that waited while the listener was away may have missed a wake-up.
        waiters.wake_all()
        yield closed
    finally:
        with contextlib.suppress(Exception):
            await conn.close(timeout=2)
