"""/ojs/v1/admin/workers: an operator tells an Open Job Spec worker to go quiet (stop
fetching, finish what it holds) or to terminate (and then shut down), as the worker
protocol's deployments do before replacing a worker. The worker hears it in the answer
to its next BEAT; its FETCHes get no jobs from then on."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from ...domain.ojs import WorkerState
from ...services.worker_directives import direct
from .. import ojs_wire as wire
from ..deps import DatabaseDep
from ..ojs_wire import BASE
from ..transaction import in_transaction

router = APIRouter(tags=["open job spec"])

WorkerId = Annotated[str, Path(min_length=1, max_length=100)]


@router.post(f"{BASE}/admin/workers/{{workerId}}/quiet")
async def quiet(db: DatabaseDep, workerId: WorkerId) -> Response:
    """From its next heartbeat on, the worker fetches no more jobs and finishes its own."""
    return await _tell(db, workerId, WorkerState.QUIET)


@router.post(f"{BASE}/admin/workers/{{workerId}}/terminate")
async def terminate(db: DatabaseDep, workerId: WorkerId) -> Response:
    """From its next heartbeat on, the worker finishes its jobs and shuts down; it cannot
    be told otherwise after this (409)."""
    return await _tell(db, workerId, WorkerState.TERMINATE)


async def _tell(db: DatabaseDep, worker: str, wanted: WorkerState) -> Response:
    state = await in_transaction(db, direct, worker, wanted)
    return wire.answer({"worker": {"id": worker, "state": state.value}}, 200)
