"""A schedule run on a deployment of two manager replicas while one of them is killed
and restarted: what the slow test checks on a five-second schedule and
scripts/schedule_replicas.py on a one-minute schedule for ten minutes."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from jobnik_sdk import NewJob, Schedule, ScheduleRun

from .api import unique
from .deployment import Deployment


@dataclass
class ScheduleOutcome:
    made: Schedule  # as put, with its first time
    paused: Schedule  # at the end, its counts
    runs: list[ScheduleRun]  # by time
    job_ids: list[str]  # the jobs of the template's name, whatever made them
    elapsed: float  # seconds from the put to the pause
    every: timedelta

    def listing(self) -> str:
        return "\n".join(
            f"{r.run_at:%Y-%m-%d %H:%M:%S} -> job {r.job_id} (made {r.made_at:%H:%M:%S.%f})"
            for r in self.runs
        )

    def problems(self) -> list[str]:
        """What breaks "one job a time, none twice, none lost"; empty when none does."""
        times = [r.run_at for r in self.runs]
        found = []
        if not times or times[0] != self.made.next_run_at:
            found.append(f"the first run is not the schedule's first time {self.made.next_run_at}")
        expected = [times[0] + self.every * i for i in range(len(times))] if times else []
        if times != expected:
            found.append("the runs are not one a time, consecutive")
        if len(times) < int(self.elapsed // self.every.total_seconds()) - 1:
            found.append(f"{len(times)} runs in {self.elapsed:.0f} s")
        if any(r.job_id is None or r.skipped for r in self.runs):
            found.append("a run made no job")
        if sorted(self.job_ids) != sorted(str(r.job_id) for r in self.runs):
            found.append("the jobs made are not the runs' jobs")
        if self.paused.run_count != len(self.runs):
            found.append(f"run count {self.paused.run_count} for {len(self.runs)} runs")
        return found


async def run_across_replicas(
    d: Deployment, cron: str, every: timedelta, *, before: float, down: float, after: float
) -> ScheduleOutcome:
    """Put a schedule (`cron`, whose times are `every` apart), let it run `before`
    seconds, kill the first replica for `down` seconds, restart it, let it run `after`
    seconds more, pause it and read what it made."""
    name, job_name = unique("replicas"), unique("scheduled")
    async with d.client("producer") as producer:
        made = await producer.put_schedule(
            name, NewJob(name=job_name), cron=cron, overlap_policy="allow"
        )
        started = time.monotonic()
        await asyncio.sleep(before)
        d.replicas[0].kill()  # the other replica goes on alone
        await asyncio.sleep(down)
        d.replicas[0].start()
        await asyncio.sleep(after)
        paused = await producer.pause_schedule(name)
        elapsed = time.monotonic() - started
        runs = (await producer.list_schedule_runs(name, page_size=100)).items
        jobs = [str(j.id) async for j in producer.iter_jobs(name=job_name)]
    return ScheduleOutcome(made, paused, sorted(runs, key=_time), jobs, elapsed, every)


def _time(run: ScheduleRun) -> datetime:
    return run.run_at
