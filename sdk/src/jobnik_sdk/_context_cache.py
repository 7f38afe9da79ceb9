"""The job and stage a handler's TaskContext names, kept for a few seconds, so that a
Worker reads each once per burst of tasks rather than twice per task."""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from datetime import timedelta
from typing import Any, TypeVar

from ._client import ConsumerClient
from ._clock import SYSTEM_CLOCK, Clock
from ._models import Job, Stage

T = TypeVar("T")
DEFAULT_TTL = timedelta(seconds=5)
DEFAULT_SIZE = 256

_Entries = OrderedDict[uuid.UUID, tuple[float, asyncio.Future[T]]]


class ContextCache:
    """Jobs and stages by id, read through `client` and kept for `ttl`, at most `size`
    of each (the least recently used go first). Readers of an id that is not kept yet
    share one read, however many ask at once; a read that fails is not kept."""

    def __init__(
        self,
        client: ConsumerClient,
        *,
        ttl: timedelta = DEFAULT_TTL,
        size: int = DEFAULT_SIZE,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._client = client
        self._clock = clock
        self._ttl = ttl.total_seconds()
        self._size = size
        self._stages: _Entries[Stage] = OrderedDict()
        self._jobs: _Entries[Job] = OrderedDict()

    async def stage(self, stage_id: uuid.UUID) -> Stage:
        """The stage, as read at most `ttl` ago."""
        return await self._read(self._stages, stage_id, lambda: self._client.get_stage(stage_id))

    async def job(self, job_id: uuid.UUID) -> Job:
        """The job, as read at most `ttl` ago."""
        return await self._read(self._jobs, job_id, lambda: self._client.get_job(job_id))

    def known_stage(self, stage_id: uuid.UUID) -> Stage | None:
        """The stage if it is kept and read already, without waiting for anything."""
        return self._known(self._stages, stage_id)

    def known_job(self, job_id: uuid.UUID) -> Job | None:
        """The job if it is kept and read already, without waiting for anything."""
        return self._known(self._jobs, job_id)

    def _known(self, entries: _Entries[T], key: uuid.UUID) -> T | None:
        entry = entries.get(key)
        if entry is None or entry[0] <= self._clock.monotonic():
            return None
        read = entry[1]
        if not read.done() or read.cancelled() or read.exception() is not None:
            return None
        entries.move_to_end(key)
        return read.result()

    def put(self, stages: list[Stage], jobs: list[Job]) -> None:
        """Keep these, as just read (a claim's answer carries them)."""
        now = self._clock.monotonic()
        for entries, items in ((self._stages, stages), (self._jobs, jobs)):
            for item in items:
                read: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                read.set_result(item)
                self._keep(entries, item.id, now, read)

    def close(self) -> None:
        """Cancel reads still under way; nobody is left to wait for them."""
        for entries in (self._stages, self._jobs):
            for _, read in entries.values():
                read.cancel()
            entries.clear()

    async def _read(
        self,
        entries: _Entries[T],
        key: uuid.UUID,
        fetch: Callable[[], Coroutine[Any, Any, T]],
    ) -> T:
        now = self._clock.monotonic()
        entry = entries.get(key)
        if entry is not None and entry[0] > now:
            entries.move_to_end(key)
            read = entry[1]
            if read.done() and not read.cancelled() and read.exception() is None:
                return read.result()
        else:
            read = asyncio.create_task(fetch())
            read.add_done_callback(lambda done: _forget_failure(entries, key, done))
            self._keep(entries, key, now, read)
        # Shielded: one reader being cancelled (its task aborted) must not fail the others.
        return await asyncio.shield(read)

    def _keep(
        self, entries: _Entries[T], key: uuid.UUID, now: float, read: asyncio.Future[T]
    ) -> None:
        entries[key] = (now + self._ttl, read)
        entries.move_to_end(key)
        while len(entries) > self._size:
            entries.popitem(last=False)


def _forget_failure(entries: _Entries[T], key: uuid.UUID, read: asyncio.Future[T]) -> None:
    # Reading the exception also keeps asyncio from warning that nobody did.
    failed = read.cancelled() or read.exception() is not None
    entry = entries.get(key)
    if failed and entry is not None and entry[1] is read:
        del entries[key]
