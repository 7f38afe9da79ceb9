"""The schedule calls of JobnikClient (`/v1/schedules`, an extension): named schedules
that make a job at each time of a cron expression or an interval."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Literal
from urllib.parse import quote

from ._http import Http
from ._models import NewJob, Page, Schedule, ScheduleRun, seconds, wire


class ScheduleCalls:
    """Schedules: put (create or replace), read, list, pause, resume, run now, delete."""

    _http: Http

    async def put_schedule(
        self,
        name: str,
        job: NewJob | Mapping[str, Any],
        *,
        cron: str | None = None,
        interval: timedelta | None = None,
        timezone: str = "UTC",
        overlap_policy: Literal["skip", "allow"] = "skip",
        missed_runs: Literal["one", "skip"] = "one",
        description: str | None = None,
        paused: bool = False,
    ) -> Schedule:
        """Create the schedule `name` (lower-case letters, digits, '-' and '.'), or
        replace the one of that name (its runs and counts stay). Give `cron` (5 fields,
        6 with seconds first, or @hourly, @daily, ...; read in the IANA `timezone`) or
        `interval` (from now). At each time it makes `job`; `overlap_policy` "skip"
        makes none while the last one is not final; after a downtime, `missed_runs`
        "one" makes one job for the times missed, "skip" none. `job` may also be a
        mapping, sent as it is: a body as POST /v1/jobs takes it."""
        body: dict[str, Any] = {
            "job": wire(job) if isinstance(job, NewJob) else dict(job),
            "timezone": timezone,
            "overlapPolicy": overlap_policy,
            "missedRuns": missed_runs,
            "paused": paused,
        }
        if cron is not None:
            body["cron"] = cron
        if interval is not None:
            body["intervalSeconds"] = seconds(interval)
        if description is not None:
            body["description"] = description
        response = await self._http.request(
            "PUT",
            _path(name),
            json=body,
            repeatable=True,  # replacing is idempotent
        )
        return Schedule.model_validate_json(response.content)

    async def get_schedule(self, name: str) -> Schedule:
        """The schedule `name`, with its next and last time and its counts (NotFoundError
        when there is none)."""
        response = await self._http.request("GET", _path(name))
        return Schedule.model_validate_json(response.content)

    async def list_schedules(self, *, page: int = 1, page_size: int = 10) -> Page[Schedule]:
        """One page of the schedules, by name (a producer's token: its own only)."""
        params = {"page": page, "page_size": page_size}
        response = await self._http.request("GET", "/v1/schedules", params=params)
        return Page[Schedule].model_validate_json(response.content)

    async def pause_schedule(self, name: str) -> Schedule:
        """Make no job until resumed; pausing again changes nothing."""
        response = await self._http.request("PUT", f"{_path(name)}/pause", repeatable=True)
        return Schedule.model_validate_json(response.content)

    async def resume_schedule(self, name: str) -> Schedule:
        """Go on from the first time after now; the times it was paused for are not made up."""
        response = await self._http.request("DELETE", f"{_path(name)}/pause", repeatable=True)
        return Schedule.model_validate_json(response.content)

    async def run_schedule(self, name: str) -> ScheduleRun:
        """Make the schedule's job now, beside its times."""
        response = await self._http.request("POST", f"{_path(name)}/run")
        return ScheduleRun.model_validate_json(response.content)

    async def list_schedule_runs(
        self, name: str, *, page: int = 1, page_size: int = 10
    ) -> Page[ScheduleRun]:
        """One page of the schedule's runs, the latest first."""
        params = {"page": page, "page_size": page_size}
        response = await self._http.request("GET", f"{_path(name)}/runs", params=params)
        return Page[ScheduleRun].model_validate_json(response.content)

    async def delete_schedule(self, name: str) -> None:
        """Delete the schedule and its runs; the jobs it made stay."""
        await self._http.request("DELETE", _path(name))


def _path(name: str) -> str:
    return f"/v1/schedules/{quote(name, safe='')}"
