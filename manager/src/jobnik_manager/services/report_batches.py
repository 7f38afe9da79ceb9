"""Reports of single tasks (a v1 worker's `PUT /v1/tasks/{id}/status`) settled together:
those that arrive while a settlement is under way wait for it and go next, as one
(`reports.settle`), so that sixteen workers' completions cost one transaction and one
durable commit rather than sixteen, each holding its stage's counters while its commit
is flushed. A report that comes alone goes at once, so an idle manager adds no delay.

Each report is still durable before it is answered, and each is settled on its own: a
refused one (a lost lease) does not refuse the others. A batch holds the reports of one
principal only, settled in the context of the first of them, since its event rows name
who made each move.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Sequence

from ..db.engine import Database, acting_name
from ..domain.errors import DomainError
from .reports import Report, TaskView, settle

# The most reports one settlement takes (as a batch call may send).
MOST = 100

Item = tuple[uuid.UUID, Report]
Waiting = tuple[Item, "asyncio.Future[TaskView | DomainError]"]


class _Batcher:
    """The reports of one principal on one event loop, waiting for their turn."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._waiting: list[Waiting] = []
        self._settling: asyncio.Task[None] | None = None

    async def settle(self, item: Item) -> TaskView | DomainError:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[TaskView | DomainError] = loop.create_future()
        # Heard of even when its request has gone (a client that hung up).
        answer.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._waiting.append((item, answer))
        if self._settling is None:
            # Not cancelled with the request that started it: the others wait on it.
            self._settling = loop.create_task(self._settle_all())
        return await asyncio.shield(answer)

    async def _settle_all(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:MOST], self._waiting[MOST:]
                await _settle_batch(self._db, batch)
        finally:
            self._settling = None


async def _settle_batch(db: Database, batch: Sequence[Waiting]) -> None:
    try:
        answers = await settle(db, [item for item, _ in batch])
    except Exception as exc:  # every waiting report hears of it
        for _, answer in batch:
            if not answer.done():
                answer.set_exception(exc)
        return
    except BaseException:
        for _, answer in batch:
            answer.cancel()
        raise
    for (_, answer), settled in zip(batch, answers, strict=True):
        if not answer.done():
            answer.set_result(settled)


_batchers: weakref.WeakKeyDictionary[
    Database, dict[tuple[asyncio.AbstractEventLoop, str | None], _Batcher]
] = weakref.WeakKeyDictionary()


async def settle_one(db: Database, task_id: uuid.UUID, report: Report) -> TaskView | DomainError:
    """Settle one report, with whatever others wait alongside it."""
    loop = asyncio.get_running_loop()
    batchers = _batchers.setdefault(db, {})
    key = (loop, acting_name())
    batcher = batchers.get(key)
    if batcher is None:
        for gone in [k for k in batchers if k[0].is_closed()]:
            del batchers[gone]
        batcher = batchers[key] = _Batcher(db)
    return await batcher.settle((task_id, report))


async def report(db: Database, task_id: uuid.UUID, r: Report) -> TaskView:
    """Record one report; the manager decides RETRIED or FAILED from the attempts left."""
    answer = await settle_one(db, task_id, r)
    if isinstance(answer, DomainError):
        raise answer
    return answer
