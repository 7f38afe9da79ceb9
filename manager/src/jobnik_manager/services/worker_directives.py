"""Telling an Open Job Spec worker to go quiet or to terminate (the worker protocol's
server-initiated states): the manager keeps what it was told and answers it to each of
its heartbeats; a worker told either gets no more jobs from FETCH, whatever it asks. A
worker is never told to go back (domain.ojs.may_direct)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from ..db.engine import now_in, principal_in
from ..db.models import WorkerDirective
from ..domain.errors import Conflict
from ..domain.ojs import WorkerState, may_direct


class NoWayBack(Conflict):
    """The worker was told to terminate: it cannot be told anything else."""

    code = "WORKER_TERMINATING"

    def __init__(self, worker: str, current: WorkerState, wanted: WorkerState) -> None:
        super().__init__(
            f"Worker '{worker}' was told to {current.value}: it cannot be told to {wanted.value}."
        )


async def direct(s: AsyncSession, worker: str, wanted: WorkerState) -> WorkerState:
    """Tell `worker` to be `wanted` from its next heartbeat on (its row locked, so two
    operators at once are settled in turn); the state it is now told."""
    found = await s.get(WorkerDirective, worker, with_for_update=True)
    current = WorkerState.RUNNING if found is None else WorkerState(found.state)
    if not may_direct(current, wanted):
        raise NoWayBack(worker, current, wanted)
    if found is None:
        s.add(
            WorkerDirective(
                worker=worker, state=wanted.value, set_at=now_in(s), principal=principal_in(s)
            )
        )
    elif current != wanted:
        found.state, found.set_at, found.principal = wanted.value, now_in(s), principal_in(s)
    await s.flush()
    return wanted


async def state_of(s: AsyncSession, worker: str) -> WorkerState:
    """What `worker` is told: `running` unless an operator said otherwise."""
    said = await s.scalar(select(WorkerDirective.state).where(WorkerDirective.worker == worker))
    return WorkerState.RUNNING if said is None else WorkerState(said)
