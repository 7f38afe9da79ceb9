"""Running one scenario through the SDK on the fake and on the manager, and what is
compared of the two: every job's full event history and final state, with ids, lease
ids and times replaced by names that do not depend on the run."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.maintenance.reaper import open_due_retries, reap_expired
from jobnik_sdk import Event, JobnikClient

Advance = Callable[[timedelta], Awaitable[None]]


@dataclass
class Env:
    """A client on one backend, and how to move that backend's time on."""

    client: JobnikClient
    # Moves the clock and lets the backend settle what ran out (expired leases, retry
    # delays over): the manager's maintenance loop, which the fake needs not.
    advance: Advance


Scenario = Callable[[Env], Awaitable[list[uuid.UUID]]]


def manager_advance(db: Database, clock: ManualClock) -> Advance:
    async def advance(by: timedelta) -> None:
        clock.advance(by)
        await reap_expired(db)
        await open_due_retries(db)

    return advance


# ---- what is compared ---------------------------------------------------------------------


async def outcome(client: JobnikClient, job_ids: list[uuid.UUID]) -> dict[str, Any]:
    """Each job's final state and event history, named by position, not by id."""
    names: dict[uuid.UUID, str] = {}
    state: dict[str, Any] = {}
    for j, job_id in enumerate(job_ids, start=1):
        job = await client.get_job(job_id)
        names[job.id] = f"J{j}"
        for stage in await client.get_job_stages(job_id, with_tasks=True):
            stage_name = names[stage.id] = f"J{j}.S{stage.order}"
            state[stage_name] = (
                stage.status,
                stage.percentage,
                stage.summary,
                stage.reason,
                stage.partial,
                _span(stage.start_time, stage.end_time),
            )
            for t, task in enumerate(stage.tasks or (), start=1):
                names[task.id] = f"{stage_name}.T{t}"
                state[names[task.id]] = (
                    task.status,
                    task.attempts,
                    task.reason,
                    task.result,
                    task.progress,
                    task.worker,
                    task.not_before is not None,
                    task.user_metadata,
                )
        state[f"J{j}"] = (
            job.status,
            job.percentage,
            job.priority,
            job.reason,
            job.partial,
            names.get(job.failed_task_id) if job.failed_task_id else None,
            names.get(job.failed_stage_id) if job.failed_stage_id else None,
            _span(job.start_time, job.end_time),
        )
    histories = {
        names[job_id]: _history([e async for e in client.iter_events(job_id)], names)
        for job_id in job_ids
    }
    return {"state": state, "events": histories}


def _span(start: datetime | None, end: datetime | None) -> tuple[bool, bool]:
    """Whether it started and ended (the two clocks' times differ; their order does not)."""
    assert start is None or end is None or start <= end
    return start is not None, end is not None


EventRow = tuple[str, str, str | None, str, int | None, str | None, str | None, str | None]


def _history(events: list[Event], names: dict[uuid.UUID, str]) -> list[EventRow]:
    leases: dict[uuid.UUID, dict[uuid.UUID, str]] = {}
    rows: list[EventRow] = []
    for e in events:
        lease = None
        if e.lease_id is not None:
            of_task = leases.setdefault(e.entity_id, {})
            lease = of_task.setdefault(e.lease_id, f"L{len(of_task) + 1}")
        assert e.job_id in names and (e.stage_id is None or e.stage_id in names)
        rows.append(
            (
                e.entity,
                names[e.entity_id],
                e.from_status,
                e.to_status,
                e.attempt,
                lease,
                e.worker,
                e.reason,
            )
        )
    return _in_order_of_names(rows)


def _in_order_of_names(rows: list[EventRow]) -> list[EventRow]:
    """One statement that moves several entities alike (a claim of many tasks, an
    abort) logs them in an order the database chooses: within such a run of events
    that differ in their entity only, order them by name."""
    ordered: list[EventRow] = []
    run: list[EventRow] = []
    for row in rows:
        if run and _alike(run[-1]) != _alike(row):
            ordered += sorted(run, key=lambda r: r[1])
            run = []
        run.append(row)
    return ordered + sorted(run, key=lambda r: r[1])


def _alike(row: EventRow) -> tuple[Any, ...]:
    return (row[0], *row[2:])
