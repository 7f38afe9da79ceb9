"""The maintenance loop a manager process runs beside its API."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from ..db.engine import Database
from ..services.claimability import open_due_retries
from ..services.schedules import JobBuilder, fire_due
from ..services.workers import forget_gone
from ..services.workflow_events import watch_workflows
from ..services.workflows import fire_due_batches
from .cleanup import forget_old_keys
from .expiry import expire
from .reaper import reap_expired
from .retention import REST_PER_WORK, delete_finished_before
from .time_limits import enforce_deadlines, time_out_attempts

log = logging.getLogger(__name__)
CLEANUP_EVERY = 60  # ticks


async def run_tick(db: Database, build: JobBuilder | None = None) -> None:
    """One tick's work on time: expired leases, tasks due (retry delays over, their
    not-before come), attempts past their time limit, jobs past their deadline, jobs and
    tasks past their expiry not started, the callbacks of batches whose jobs all ended,
    the workflow events not yet told, and, given
    how a schedule's job is made (`build`), the runs of schedules due."""
    reaped = await reap_expired(db)
    opened = await open_due_retries(db)
    timed_out = await time_out_attempts(db)
    past_deadline = await enforce_deadlines(db)
    expired = await expire(db)
    runs = 0 if build is None else await fire_due(db, build)
    batches = await fire_due_batches(db)
    told = await watch_workflows(db)  # after the batches: a callback fired may end one
    if reaped or opened or timed_out or past_deadline or expired or runs or batches or told:
        log.info(
            "maintenance: %d expired leases reaped, %d tasks due, %d attempts timed out, "
            "%d jobs past their deadline, %d jobs and tasks expired, %d schedule runs, "
            "%d batches' callbacks fired, %d workflow events",
            reaped,
            opened,
            timed_out,
            past_deadline,
            expired,
            runs,
            batches,
            told,
        )


async def run_maintenance(
    db: Database,
    interval: timedelta,
    retention: timedelta | None = None,
    build: JobBuilder | None = None,
) -> None:
    """Reap expired leases and open due retries every `interval`, until cancelled; and,
    beside it, so that a long deletion never holds up a tick, keep `retention`.

    A failing tick (database down, say) is logged and the next one tries again.
    """
    keeping = None
    if retention is not None:
        keeping = asyncio.create_task(keep_retention(db, retention, interval * CLEANUP_EVERY))
    try:
        tick = 0
        while True:
            try:
                await run_tick(db, build)
                if tick % CLEANUP_EVERY == 0:
                    await db.transaction(forget_old_keys)
                    await db.transaction(forget_gone)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("maintenance tick failed; retrying next tick")
            tick += 1
            await asyncio.sleep(interval.total_seconds())
    finally:
        if keeping is not None:
            keeping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeping


async def keep_retention(db: Database, retention: timedelta, every: timedelta) -> None:
    """Delete the jobs that ended over `retention` ago, then again every `every`, at the
    pace that leaves the rest of the manager's work its speed (`REST_PER_WORK`)."""
    while True:
        try:
            before = db.clock.now() - retention
            deleted = await delete_finished_before(db, before, rest_per_work=REST_PER_WORK)
            if deleted.jobs:
                log.info("retention: deleted %s that ended over %s ago", deleted, retention)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("retention failed; retrying in %s", every)
        await asyncio.sleep(every.total_seconds())
