"""A heartbeat that gets no answer gives up before the leases it renews run out, so
the worker's next beat goes out on time."""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from jobnik_sdk._attempt import Attempt
from jobnik_sdk._leases import LeaseKeeper

from ..support.sdk_tasks import a_claimed_task

LEASE = timedelta(seconds=0.6)


class SilentManager:
    """A manager that takes heartbeats and never answers them."""

    def __init__(self) -> None:
        self.calls = 0
        self.abandoned = 0

    async def heartbeat_many(self, beats: Any, *, lease: timedelta) -> Any:
        self.calls += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.abandoned += 1
            raise


async def test_a_heartbeat_without_an_answer_gives_up_before_the_lease_ends() -> None:
    manager = SilentManager()
    log = logging.getLogger("test")
    keeper = LeaseKeeper(
        manager,  # type: ignore[arg-type]
        lease=LEASE,
        interval=timedelta(seconds=10),  # longer than the lease: the lease must bound it
        log=log,
    )
    attempt = Attempt(
        a_claimed_task(lease_id=uuid.uuid4(), lease_expires_at=datetime.now(UTC) + LEASE),
        log=log,
        on_progress=lambda: None,
    )
    keeper.add(attempt)
    # The beat must return of itself while the lease still runs; the guard only keeps a
    # failing test from hanging.
    await asyncio.wait_for(keeper._beat([attempt]), timeout=LEASE.total_seconds())
    assert manager.calls == 1 and manager.abandoned == 1


def test_a_beat_after_every_lease_ran_out_here_waits_to_hear_whether_it_was_lost() -> None:
    log = logging.getLogger("test")
    keeper = LeaseKeeper(
        SilentManager(),  # type: ignore[arg-type]
        lease=LEASE,
        interval=timedelta(milliseconds=100),
        log=log,
    )
    live, lapsed = (
        Attempt(a_claimed_task(lease_id=uuid.uuid4()), log=log, on_progress=lambda: None)
        for _ in range(2)
    )
    keeper.add(live)
    keeper.add(lapsed)
    now = keeper._good_until[lapsed.task.id]
    keeper._good_until[lapsed.task.id] = now - 1  # ran out a second ago, as far as it knows
    # Alone, the lapsed lease has nothing to save: its beat waits half a lease for the
    # manager's answer (LEASE_LOST), where cutting it short would never hear it.
    assert keeper._deadline([lapsed], now) == LEASE.total_seconds() / 2
    # Beside a live lease, the live one sets the pace; a lease about to end, the margin.
    keeper._good_until[live.task.id] = now + 10
    assert keeper._deadline([live, lapsed], now) == 0.1
    keeper._good_until[live.task.id] = now + 0.1
    assert keeper._deadline([live, lapsed], now) == 0.05
