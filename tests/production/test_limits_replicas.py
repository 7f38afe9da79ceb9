"""A stage-type rate limit on the production profile (two manager replicas behind one
URL, PostgreSQL, auth on) with eight template workers claiming at once: over a minute,
the tasks handed out are the limit's rate, within 10%, and never more than the
concurrency limit run at once."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import asyncpg
import pytest

from jobnik_sdk import NewStage, NewTask

from ..support.api import unique
from ..support.deployment import Deployment
from ..support.soak_ledger import asyncpg_dsn

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
RATE = 10  # tasks a second
IN_FLIGHT = 20
WINDOW = timedelta(seconds=60)


async def test_a_rate_limit_holds_across_two_replicas_and_eight_workers(
    own_production: Deployment,
) -> None:
    kind = unique("rated")
    async with (
        own_production.client("operator") as operator,
        own_production.client("producer") as producer,
    ):
        await operator.limit_stage_type(kind, rate_per_second=RATE, max_in_flight=IN_FLIGHT)
        tasks = [NewTask(data={"do": "ok", "seconds": 0.1}) for _ in range(1500)]
        await producer.create_job(unique("limited"), stages=[NewStage(type=kind, tasks=tasks)])
        for i in range(8):
            own_production.start_worker(kind, name=f"{kind}-{i}", WORKER_CONCURRENCY="4")
        began = time.monotonic()
        await asyncio.sleep(WINDOW.total_seconds() + 8)  # the workers start within seconds
        await operator.pause_stage_type(kind)
    elapsed = time.monotonic() - began

    conn = await asyncpg.connect(asyncpg_dsn(own_production.database_url))
    try:
        starts = [
            r["time"]
            for r in await conn.fetch(
                "SELECT e.time FROM events e JOIN tasks t ON t.id = e.task_id "
                "WHERE t.stage_type = $1 AND e.to_status = 'IN_PROGRESS' ORDER BY e.time",
                kind,
            )
        ]
        # The most running at once, from the claims and the ends in the event log.
        moves = await conn.fetch(
            "SELECT e.time, e.to_status FROM events e JOIN tasks t ON t.id = e.task_id "
            "WHERE t.stage_type = $1 AND e.entity = 'TASK' "
            "AND (e.to_status = 'IN_PROGRESS' OR e.from_status = 'IN_PROGRESS') "
            "ORDER BY e.time, e.seq",
            kind,
        )
    finally:
        await conn.close()
    first = starts[0]
    in_window = [t for t in starts if t < first + WINDOW]
    expected = RATE * WINDOW.total_seconds()
    assert abs(len(in_window) - expected) <= 0.1 * expected, (len(in_window), elapsed)
    running = most = 0
    for move in moves:
        running += 1 if move["to_status"] == "IN_PROGRESS" else -1
        most = max(most, running)
    assert most <= IN_FLIGHT, most
    print(f"{len(in_window)} handed out in {WINDOW} at {RATE}/s; {most} in flight at most")
