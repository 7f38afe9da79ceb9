"""The maintenance loop a manager process runs beside its API."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from ..db.engine import Database
from .cleanup import forget_old_keys
from .reaper import open_due_retries, reap_expired

log = logging.getLogger(__name__)
CLEANUP_EVERY = 60  # ticks


async def run_maintenance(db: Database, interval: timedelta) -> None:
    """Reap expired leases and open due retries every `interval`, until cancelled.

    A failing tick (database down, say) is logged and the next one tries again.
    """
    tick = 0
    while True:
        try:
            reaped = await reap_expired(db)
            opened = await open_due_retries(db)
            if reaped or opened:
                log.info("maintenance: %d expired leases reaped, %d retries due", reaped, opened)
            if tick % CLEANUP_EVERY == 0:
                await db.transaction(forget_old_keys)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("maintenance tick failed; retrying next tick")
        tick += 1
        await asyncio.sleep(interval.total_seconds())
