"""Single calls of a v1 worker fleet, put together: the reports (`PUT
/v1/tasks/{id}/status`) and the claims (`PATCH /v1/stages/{type}/tasks/dequeue`) that
arrive while one of their kind is under way wait for it and go next, as one
(`reports.settle`, `claims.claim` with a limit), so that sixteen workers' calls cost one
transaction and one commit rather than sixteen, each holding the stage's counters in
turn (a report's while its durable commit is flushed). A call that comes alone goes at
once: an idle manager adds no delay. The reads of a stage or a job by id that the
reference SDK's workers make around each task go together the same way, each batch one
lookup of all their keys: a statement's round trip and transaction cost PostgreSQL
several times what the lookup does. A read waits at most for the batch before it, and
sees every change answered before it was asked.

Each report is still durable before it is answered, and settled on its own: a refused
one (a lost lease) refuses no other. A batch holds the calls of one principal only, made
in the context of the first of them, since the event rows name who made each move; and
claims only with the same stage type, lease and worker name.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Awaitable, Callable, Hashable, Sequence
from datetime import timedelta
from typing import Any, Generic, TypeVar

from ..db import reads
from ..db.engine import Database, acting_name
from ..db.models import Job, Stage
from ..domain.errors import DomainError
from .claims import claim
from .reports import Report, TaskView, settle

I = TypeVar("I")  # noqa: E741  (an item)
A = TypeVar("A")  # its answer

# The most calls one batch takes (as a batch call of the API may hold).
MOST = 100


class _Batches(Generic[I, A]):
    """Items waiting for their turn, then run together by `run` (answers in order)."""

    def __init__(self, run: Callable[[list[I]], Awaitable[list[A]]]) -> None:
        self._run = run
        self._waiting: list[tuple[I, asyncio.Future[A]]] = []
        self._running: asyncio.Task[None] | None = None

    async def submit(self, item: I, *, shielded: bool) -> A:
        """`item`'s answer. `shielded`: the item is run even if its caller stops waiting
        (a report must be recorded); otherwise one whose caller left before its batch
        ran is left out (a claim for nobody would strand its task)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[A] = loop.create_future()
        # Heard of even when its caller has gone (a client that hung up).
        answer.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._waiting.append((item, answer))
        if self._running is None:
            # Not cancelled with the call that started it: the others wait on it.
            self._running = loop.create_task(self._run_all())
        return await (asyncio.shield(answer) if shielded else answer)

    async def _run_all(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:MOST], self._waiting[MOST:]
                await self._run_batch([(i, a) for i, a in batch if not a.cancelled()])
        finally:
            self._running = None

    async def _run_batch(self, batch: Sequence[tuple[I, asyncio.Future[A]]]) -> None:
        if not batch:
            return
        try:
            answers = await self._run([item for item, _ in batch])
        except Exception as exc:  # every waiting call hears of it
            for _, answer in batch:
                if not answer.done():
                    answer.set_exception(exc)
            return
        except BaseException:
            for _, answer in batch:
                answer.cancel()
            raise
        for (_, answer), result in zip(batch, answers, strict=True):
            if not answer.done():
                answer.set_result(result)


_all: weakref.WeakKeyDictionary[
    Database, dict[tuple[asyncio.AbstractEventLoop, Hashable], _Batches[Any, Any]]
] = weakref.WeakKeyDictionary()


def _batches(
    db: Database, key: Hashable, run: Callable[[list[I]], Awaitable[list[A]]]
) -> _Batches[I, A]:
    """The batches of `key` (with the acting principal) on this event loop. `run` is
    that of the call that made them: the key holds everything it depends on, so every
    caller of the key passes one that does the same."""
    loop = asyncio.get_running_loop()
    mine = _all.setdefault(db, {})
    full_key = (loop, (key, acting_name()))
    found = mine.get(full_key)
    if found is None:
        for gone in [k for k in mine if k[0].is_closed()]:
            del mine[gone]
        found = mine[full_key] = _Batches(run)
    return found


async def report(db: Database, task_id: uuid.UUID, r: Report) -> TaskView:
    """Record one report; the manager decides RETRIED or FAILED from the attempts left."""

    async def run(items: list[tuple[uuid.UUID, Report]]) -> list[TaskView | DomainError]:
        return await settle(db, items)

    answer = await _batches(db, "report", run).submit((task_id, r), shielded=True)
    if isinstance(answer, DomainError):
        raise answer
    return answer


async def dequeue(
    db: Database, stage_type: str, lease: timedelta | None, worker: str | None
) -> Any | None:
    """Claim one ready task of the stage type (its row), or None."""

    async def run(items: list[None]) -> list[Any | None]:
        rows = (await claim(db, [stage_type], limit=len(items), lease=lease, worker=worker)).rows
        return rows + [None] * (len(items) - len(rows))

    return await _batches(db, ("dequeue", stage_type, lease, worker), run).submit(
        None, shielded=False
    )


async def stage(db: Database, stage_id: uuid.UUID) -> Stage | None:
    """The stage's columns (`db.reads.stages`), or None."""

    async def run(ids: list[uuid.UUID]) -> list[Stage | None]:
        found = await reads.stages(db, ids)
        return [found.get(i) for i in ids]

    return await _batches(db, "stage", run).submit(stage_id, shielded=False)


async def job(db: Database, job_id: uuid.UUID) -> tuple[Job, list[Stage]] | None:
    """The job and its stages (`db.reads.jobs_and_stages`), or None."""

    async def run(ids: list[uuid.UUID]) -> list[tuple[Job, list[Stage]] | None]:
        found = await reads.jobs_and_stages(db, ids)
        return [found.get(i) for i in ids]

    return await _batches(db, "job", run).submit(job_id, shielded=False)
