"""/ojs/v1 beyond a job's own calls: the queues (our stage types) and an operator's purge
of one, the dead letters (tasks FAILED for good) with their retry and delete, and the
jobs' events read from the event log, as the Open Job Spec's binding words them; each on
the service v1's own calls use."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from sqlalchemy.ext.asyncio import AsyncSession

from ...db.models import WorkflowEvent
from ...domain import ojs
from ...domain.ojs import State
from ...domain.statuses import TaskStatus
from ...domain.workflows import EVENT_TYPES
from ...observe.state import read_state
from ...services import flow, stage_type_pauses, workflow_events
from ...services import queue_stats as queue_stats_of
from ...services.dead_letters import (
    DeadLetterFilter,
    Selection,
    discard_dead_letters,
    list_dead_letters,
    retry_dead_letters,
)
from ...services.history import read_events
from ...services.pages import PageRequest
from ...services.purge import purge_stage_type
from .. import ojs_wire as wire
from ..auth import listing_owner
from ..deps import DatabaseDep
from ..ojs_wire import BASE, OjsError, invalid
from ..transaction import in_transaction

router = APIRouter(tags=["open job spec"])

Limit = Annotated[int, Query(ge=1, le=100)]
QueueName = Annotated[str, Path(min_length=1, max_length=50)]
Offset = Annotated[int, Query(ge=0, le=1_000_000)]


@router.get(f"{BASE}/queues")
async def queues(db: DatabaseDep) -> Response:
    """The queues with work waiting or running, or paused, by name."""
    state = await read_state(db)
    names = sorted(set(state.ready) | set(state.in_flight) | state.paused)
    listed = [{"name": n, "status": "paused" if n in state.paused else "active"} for n in names]
    pagination = {"total": len(listed), "has_more": False}
    return wire.answer({"queues": listed, "pagination": pagination}, 200)


@router.post(BASE + "/queues/{stageType}/pause")
async def pause_queue(db: DatabaseDep, stageType: QueueName) -> Response:
    """Hand out none of the queue's jobs until it is resumed (a stage-type pause): FETCH
    finds none of them; PUSH goes on, and running jobs finish."""
    await in_transaction(db, stage_type_pauses.pause, stageType)
    return wire.answer({"queue": {"name": stageType, "paused": True, "status": "paused"}}, 200)


@router.post(BASE + "/queues/{stageType}/resume")
async def resume_queue(db: DatabaseDep, stageType: QueueName) -> Response:
    """Hand the queue's jobs out again."""
    await in_transaction(db, stage_type_pauses.resume, stageType)
    return wire.answer({"queue": {"name": stageType, "paused": False, "status": "active"}}, 200)


@router.get(BASE + "/queues/{stageType}/stats")
async def queue_stats(db: DatabaseDep, stageType: QueueName) -> Response:
    """The queue's jobs by state and in all (`total`), and its flow: those completed and
    failed in the last hour, and the completions a second over it."""

    async def read(s: AsyncSession) -> tuple[dict[str, int], bool, flow.Flow]:
        # One transaction: the counts and the flow of one moment.
        counts = await queue_stats_of.queue_counts(s, stageType)
        return (
            counts,
            await queue_stats_of.is_paused(s, stageType),
            await flow.flow(s, stageType, 60),
        )

    counts, paused, hour = await in_transaction(db, read)
    completed = sum(m.completed for m in hour.minutes)
    stats = {
        **counts,
        "completed_last_hour": completed,
        "failed_last_hour": sum(m.failed for m in hour.minutes),
        "throughput_per_second": round(completed / 3600, 4),
    }
    queue = {
        "name": stageType,
        "paused": paused,
        "status": "paused" if paused else "active",
        **{k: counts[k] for k in ("total", "available", "active", "completed")},
        "stats": stats,
    }
    said = {"queue": queue, "status": queue["status"], "stats": stats}
    return wire.answer({**said, "computed_at": wire.when(db.clock.now())}, 200)


@router.delete(BASE + "/admin/queues/{stageType}/jobs")
async def purge(request: Request, db: DatabaseDep, stageType: str) -> Response:
    """Delete the queue's jobs (those of its type alone) in the states named (all by
    default), running ones aborted first; `confirm: true` is required."""
    body = await wire.read_body(request)
    if body.get("confirm") is not True:
        raise invalid("confirm: true is required to purge a queue")
    named = body.get("states", [s.value for s in State])
    if not isinstance(named, list) or not all(n in State._value2member_map_ for n in named):
        raise invalid(f"states: a list of {', '.join(s.value for s in State)}")
    statuses = {status for n in named for status in ojs.STATUSES[State(n)]}
    purged = await purge_stage_type(db, stageType, statuses)
    return wire.answer({"purged_count": purged, "queue": stageType, "states": named}, 200)


@router.get(f"{BASE}/dead-letter")
async def dead_letters(
    db: DatabaseDep, queue: str | None = None, limit: Limit = 50, offset: Offset = 0
) -> Response:
    """The jobs discarded for good, the latest first, each with its errors."""
    if queue is not None and not ojs.QUEUE_PATTERN.fullmatch(queue):
        raise invalid("queue: a queue name")
    found = DeadLetterFilter(owner=listing_owner(), stage_type=queue)
    page = PageRequest(offset // limit + 1, limit) if offset % limit == 0 else None
    if page is None:
        raise invalid("offset: a multiple of limit")
    total, letters = await in_transaction(db, list_dead_letters, found, page)
    now = db.clock.now()
    jobs: list[dict[str, Any]] = []
    for letter in letters:
        job = wire.envelope(_columns(letter.task), now)
        job["errors"] = [wire.error_entry(f) for f in letter.errors]
        jobs.append(job)
    pagination = {"total": total, "has_more": offset + len(jobs) < total}
    return wire.answer({"jobs": jobs, "pagination": pagination}, 200)


def _columns(task: Any) -> dict[str, Any]:
    return {c.key: getattr(task, c.key) for c in task.__table__.columns}


@router.post(BASE + "/dead-letter/{taskId}/retry")
async def retry_dead_letter(db: DatabaseDep, taskId: str) -> Response:
    """Run a discarded job again from its first attempt (the job is replayed)."""
    task = await wire.task_of(db, taskId)
    task_id = uuid.UUID(str(task["id"]))
    done = await retry_dead_letters(db, Selection(task_ids=[task_id]), listing_owner())
    if not done.tasks:
        raise OjsError(404, "not_found", f"Job '{taskId}' is not a dead letter.")
    job = wire.envelope(await wire.task_of(db, taskId), db.clock.now())
    return wire.answer({"job": job}, 200)


@router.delete(BASE + "/dead-letter/{taskId}")
async def delete_dead_letter(db: DatabaseDep, taskId: str) -> Response:
    """Take a discarded job off the dead letters (it stays discarded)."""
    task = await wire.task_of(db, taskId)
    selection = Selection(task_ids=[uuid.UUID(str(task["id"]))])
    taken, _ = await in_transaction(db, discard_dead_letters, selection, listing_owner())
    if not taken:
        raise OjsError(404, "not_found", f"Job '{taskId}' is not a dead letter.")
    return wire.answer({"deleted": True, "job_id": taskId}, 200)


# Each OJS event type, as the task moves it names (`None`: its creation).
_EVENT_MOVES: dict[str, TaskStatus | None] = {
    "job.enqueued": None,
    "job.started": TaskStatus.IN_PROGRESS,
    "job.completed": TaskStatus.COMPLETED,
    "job.failed": TaskStatus.FAILED,
    "job.retrying": TaskStatus.RETRIED,
    "job.cancelled": TaskStatus.ABORTED,
}
_EVENT_TYPES = {move: name for name, move in _EVENT_MOVES.items()}


Cursor = Annotated[str, Query(max_length=41, pattern=r"^[0-9]{1,20}(\.[0-9]{1,20})?$")]


@router.get(f"{BASE}/events")
async def events(
    db: DatabaseDep,
    types: str | None = None,
    queues: str | None = None,
    limit: Limit = 50,
    after: Cursor = "0",
) -> Response:
    """The jobs' and the workflows' events, oldest first, after the cursor `after` (the
    last answer's `cursor`: how far each log was read, `<jobs>.<workflows>`), of the types
    and queues named (comma-separated; a workflow's events belong to no queue, so naming
    queues leaves them out). Two logs read side by side, merged by time."""
    named = [t for t in (types or "").split(",") if t] or [*_EVENT_MOVES, *EVENT_TYPES]
    if unknown := [t for t in named if t not in _EVENT_MOVES and t not in EVENT_TYPES]:
        raise invalid(f"types: unknown event type {unknown[0]!r}")
    queue_names = [q for q in (queues or "").split(",") if q]
    jobs_after, _, flows_after = after.partition(".")
    seen = [int(jobs_after), int(flows_after or 0)]
    moves = [_EVENT_MOVES[t] for t in named if t in _EVENT_MOVES]
    kinds = [t for t in named if t in EVENT_TYPES and not queue_names]
    owner = listing_owner()

    async def both(s: AsyncSession) -> list[tuple[datetime, int, int, dict[str, Any]]]:
        found: list[tuple[datetime, int, int, dict[str, Any]]] = []
        if moves:
            rows = await read_events(s, moves, queue_names, seen[0], limit + 1, owner)
            found += [(r["time"], 0, r["seq"], _event(r)) for r in rows]
        if kinds:
            flows = await workflow_events.read_events(s, kinds, seen[1], limit + 1, owner)
            found += [(e.time, 1, e.seq, _workflow_event(e)) for e in flows]
        return found

    merged = sorted(await in_transaction(db, both), key=lambda f: f[:3])
    for _, log, seq, _ in merged[:limit]:
        seen[log] = seq
    listed = [said for *_, said in merged[:limit]]
    cursor = f"{seen[0]}.{seen[1]}" if seen[1] else str(seen[0])
    return wire.answer({"events": listed, "cursor": cursor, "has_more": len(merged) > limit}, 200)


def _workflow_event(event: WorkflowEvent) -> dict[str, Any]:
    said_id = workflow_events.event_id(event.seq)
    return ojs.event(said_id, event.type, event.time, str(event.workflow_id), event.data)


def _event(row: Mapping[str, Any]) -> dict[str, Any]:
    move = None if row["from_status"] is None else TaskStatus(row["to_status"])
    kind = _EVENT_TYPES[move]
    job_id = str(row["task_id"])
    data = row["data"] if isinstance(row["data"], dict) else {}
    said: dict[str, Any] = {
        "job_id": job_id,
        "job_type": data.get("type", row["stage_type"]),
        "queue": row["stage_type"],
    }
    if move is not None:  # runs begun: the one a start or completion ends is one more
        running = move in (TaskStatus.IN_PROGRESS, TaskStatus.COMPLETED)
        said["attempt"] = row["attempt"] + 1 if running else row["attempt"]
    if move is TaskStatus.COMPLETED and row["start_time"] is not None:
        said["duration_ms"] = int((row["time"] - row["start_time"]).total_seconds() * 1000)
    return ojs.event(f"evt_{row['seq']}", kind, row["time"], job_id, said)
