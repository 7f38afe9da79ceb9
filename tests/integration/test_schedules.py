"""Schedules: a named cron expression (in a time zone) or interval that makes a job from
its template at each time; created, replaced, listed, paused, resumed, run now and
deleted over HTTP; a missed time after downtime follows the schedule's policy; two
replicas ticking at once make each run once. Bad input answers 400 and changes nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import update

from jobnik_manager.api.routes.schedules import job_of
from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Schedule
from jobnik_manager.maintenance.loop import run_tick
from jobnik_manager.services.schedules import fire_due

from ..support.api import Api, unique
from ..support.invariants import assert_invariants

START = datetime(2026, 11, 28, 11, 59, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    """The manager's time in these tests: a schedule's times come when the test says."""
    return ManualClock(START)


def template(stage_type: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": "nightly-export",
        "data": {"dataset": "roads"},
        "stages": [{"type": stage_type, "data": {}, "tasks": [{"data": {"part": 1}}]}],
        **extra,
    }


async def put(api: Api, name: str, expect: int = 201, **body: Any) -> dict[str, Any]:
    return await api.call("PUT", f"/v1/schedules/{name}", expect, json=body)  # type: ignore[no-any-return]


async def runs(api: Api, name: str) -> list[dict[str, Any]]:
    page = await api.call("GET", f"/v1/schedules/{name}/runs", params={"page_size": 100})
    return page["items"]  # type: ignore[no-any-return]


async def tick(db: Database) -> None:
    await run_tick(db, job_of)


async def test_a_cron_schedule_makes_one_job_at_each_time(
    api: Api, db: Database, clock: ManualClock
) -> None:
    kind = unique("export")
    made = await put(api, "roads", cron="* * * * *", job=template(kind), description="roads")
    assert made["nextRunAt"] == "2026-11-28T12:00:00Z"
    assert (made["runCount"], made["paused"], made["overlapPolicy"], made["missedRuns"]) == (
        0,
        False,
        "skip",
        "one",
    )
    await tick(db)
    assert await runs(api, "roads") == []  # not yet

    clock.advance(30)  # 12:00:00
    await tick(db)
    await tick(db)  # a second tick finds nothing more to do
    [run] = await runs(api, "roads")
    assert (run["runAt"], run["manual"]) == ("2026-11-28T12:00:00Z", False)
    job = await api.job(run["jobId"], should_return_stages=True)
    assert (job["name"], job["data"], job["status"]) == (
        "nightly-export",
        {"dataset": "roads"},
        "PENDING",
    )
    assert [st["type"] for st in job["stages"]] == [kind]
    assert await api.dequeue(kind) is not None  # its task is there to claim

    shown = await api.call("GET", "/v1/schedules/roads")
    assert (shown["runCount"], shown["lastJobId"], shown["nextRunAt"]) == (
        1,
        job["id"],
        "2026-11-28T12:01:00Z",
    )
    await assert_invariants(db)


async def test_an_interval_schedule_in_a_time_zone_and_a_replaced_one(
    api: Api, db: Database, clock: ManualClock
) -> None:
    every = await put(api, "every-90s", intervalSeconds=90, job=template(unique("i")))
    assert every["nextRunAt"] == "2026-11-28T12:01:00Z"  # 90 s after its creation
    # 09:00 in New York is 14:00 UTC in November (EST).
    ny = await put(api, "ny", cron="0 9 * * *", timezone="America/New_York", job=template("t"))
    assert ny["nextRunAt"] == "2026-11-28T14:00:00Z"
    # Six fields: seconds first.
    fast = await put(api, "fast", cron="*/10 * * * * *", job=template("t"))
    assert fast["nextRunAt"] == "2026-11-28T11:59:40Z"

    replaced = await put(api, "ny", 200, cron="@hourly", job=template("t"), paused=True)
    assert (replaced["cron"], replaced["timezone"], replaced["paused"]) == ("@hourly", "UTC", True)
    assert "nextRunAt" not in replaced  # none while paused
    listed = await api.call("GET", "/v1/schedules")
    assert [s["name"] for s in listed["items"]] == ["every-90s", "fast", "ny"]
    assert listed["total"] == 3


async def test_missed_times_after_downtime_make_one_job_or_none(
    api: Api, db: Database, clock: ManualClock
) -> None:
    await put(api, "catch-up", cron="* * * * *", job=template(unique("a")))
    await put(api, "skip-missed", cron="* * * * *", missedRuns="skip", job=template(unique("b")))
    # No tick for ten of their times, 12:00 to 12:09; the clock at 12:09:45.
    clock.advance(timedelta(minutes=10, seconds=15))
    await tick(db)
    [caught] = await runs(api, "catch-up")
    assert (caught["runAt"], caught["skipped"]) == ("2026-11-28T12:09:00Z", None)
    assert caught["jobId"] is not None
    [skipped] = await runs(api, "skip-missed")
    assert (skipped["runAt"], skipped["skipped"], skipped.get("jobId")) == (
        "2026-11-28T12:09:00Z",
        "missed",
        None,
    )
    for name in ("catch-up", "skip-missed"):
        assert (await api.call("GET", f"/v1/schedules/{name}"))[
            "nextRunAt"
        ] == "2026-11-28T12:10:00Z"
    # A time that comes within the grace is made under either policy.
    clock.advance(20)  # 12:10:05
    await tick(db)
    latest = (await runs(api, "skip-missed"))[0]
    assert (latest["runAt"], latest["jobId"] is not None) == ("2026-11-28T12:10:00Z", True)


async def test_overlap_skip_waits_for_the_last_job_and_allow_does_not(
    api: Api, db: Database, clock: ManualClock
) -> None:
    await put(api, "skip", intervalSeconds=60, job=template(unique("s")))
    await put(api, "allow", intervalSeconds=60, overlapPolicy="allow", job=template(unique("a")))
    for _ in range(2):
        clock.advance(60)
        await tick(db)
    skip = await runs(api, "skip")
    assert [r.get("skipped") for r in skip] == ["overlap", None]  # latest first
    assert [r.get("skipped") for r in await runs(api, "allow")] == [None, None]
    # Once its job is final, the next time makes one again.
    await api.set_job_status(skip[1]["jobId"], "ABORTED")
    clock.advance(60)
    await tick(db)
    assert (await runs(api, "skip"))[0].get("skipped") is None
    shown = await api.call("GET", "/v1/schedules/skip")
    assert (shown["runCount"], shown["skippedCount"]) == (2, 1)


async def test_pause_resume_run_now_and_delete(api: Api, db: Database, clock: ManualClock) -> None:
    await put(api, "paused", cron="* * * * *", job=template(unique("p")))
    paused = await api.call("PUT", "/v1/schedules/paused/pause")
    again = await api.call("PUT", "/v1/schedules/paused/pause")
    assert paused["paused"] and again["pausedAt"] == paused["pausedAt"]
    clock.advance(timedelta(minutes=3))  # 12:02:30
    await tick(db)
    assert await runs(api, "paused") == []
    resumed = await api.call("DELETE", "/v1/schedules/paused/pause")
    # On from its first time after now: the three it was paused for are not made up.
    assert (resumed["paused"], resumed["nextRunAt"]) == (False, "2026-11-28T12:03:00Z")

    now = await api.call("POST", "/v1/schedules/paused/run", 201)
    assert (now["manual"], now["runAt"]) == (True, "2026-11-28T12:02:30Z")
    assert (await api.job(now["jobId"]))["name"] == "nightly-export"
    assert (await api.call("GET", "/v1/schedules/paused"))["nextRunAt"] == "2026-11-28T12:03:00Z"

    gone = await api.call("DELETE", "/v1/schedules/paused")
    assert gone["code"] == "SCHEDULE_DELETED_SUCCESSFULLY"
    for method, url in [
        ("GET", "/v1/schedules/paused"),
        ("GET", "/v1/schedules/paused/runs"),
        ("POST", "/v1/schedules/paused/run"),
        ("PUT", "/v1/schedules/paused/pause"),
        ("DELETE", "/v1/schedules/paused"),
    ]:
        answer = await api.call(method, url, 404)
        assert answer["code"] == "SCHEDULE_NOT_FOUND"
    assert (await api.job(now["jobId"]))["id"] == now["jobId"]  # its jobs stay


async def test_a_template_that_no_longer_makes_a_job_is_skipped_not_stuck(
    api: Api, db: Database, clock: ManualClock
) -> None:
    await put(api, "broken", intervalSeconds=60, overlapPolicy="allow", job=template("b"))

    async def break_it(s: Any) -> None:  # as if stored before a rule it now breaks
        await s.execute(update(Schedule).values(job={"name": "", "data": {}}))

    await db.transaction(break_it)
    for _ in range(2):
        clock.advance(60)
        await tick(db)
    assert [r.get("skipped") for r in await runs(api, "broken")] == ["invalid", "invalid"]


async def test_a_held_unique_key_makes_no_job(api: Api, db: Database, clock: ManualClock) -> None:
    await put(
        api,
        "one-at-a-time",
        intervalSeconds=60,
        overlapPolicy="allow",
        job=template(unique("u"), uniqueKey=unique("export-roads")),
    )
    for _ in range(2):
        clock.advance(60)
        await tick(db)
    assert [r.get("skipped") for r in await runs(api, "one-at-a-time")] == ["unique", None]


async def test_two_replicas_ticking_at_once_make_each_run_once(
    api: Api, db: Database, clock: ManualClock
) -> None:
    names = [f"race-{i}" for i in range(5)]
    for name in names:
        await put(api, name, cron="*/10 * * * * *", overlapPolicy="allow", job=template("r"))
    other = Database(db.url, pool_size=5, clock=clock)  # a second manager on the database
    try:
        for _ in range(6):
            clock.advance(10)
            await asyncio.gather(
                fire_due(db, job_of), fire_due(other, job_of), fire_due(db, job_of)
            )
    finally:
        await other.dispose()
    for name in names:
        made = await runs(api, name)
        times = [r["runAt"] for r in made]
        assert len(times) == len(set(times)) == 6, times
        assert all(r.get("jobId") for r in made)
    jobs = await api.call("GET", "/v1/jobs", params={"page_size": 100})
    assert jobs["total"] == 30
    await assert_invariants(db)


BAD = [
    ("malformed cron", {"cron": "61 * * * *"}),
    ("a step of zero", {"cron": "*/0 * * * *"}),
    ("four fields", {"cron": "* * * *"}),
    ("an unknown @ name", {"cron": "@fortnightly"}),
    ("an unknown zone", {"cron": "* * * * *", "timezone": "Mars/Olympus"}),
    ("an offset for a zone", {"cron": "* * * * *", "timezone": "+05:00"}),
    ("an abbreviation for a zone", {"cron": "* * * * *", "timezone": "EST"}),
    ("a fixed-offset Etc zone", {"cron": "* * * * *", "timezone": "Etc/GMT+5"}),
    ("both cron and interval", {"cron": "* * * * *", "intervalSeconds": 60}),
    ("neither cron nor interval", {}),
    ("an interval of zero", {"intervalSeconds": 0}),
    ("a negative interval", {"intervalSeconds": -5}),
    ("an unknown overlap policy", {"cron": "* * * * *", "overlapPolicy": "queue"}),
    ("an unknown missed policy", {"cron": "* * * * *", "missedRuns": "all"}),
    ("an unknown field", {"cron": "* * * * *", "every": 5}),
    ("a cron that is not text", {"cron": 5}),
    ("an interval that is a boolean", {"intervalSeconds": True}),
    ("an interval beyond any duration", {"intervalSeconds": 8.64e13}),
    ("a NUL in the description", {"cron": "@daily", "description": "a\u0000b"}),
    ("a NUL in the zone", {"cron": "@daily", "timezone": "Europe/\u0000"}),
]


@pytest.mark.parametrize(("what", "fields"), BAD, ids=[b[0] for b in BAD])
async def test_bad_schedules_answer_400_and_change_nothing(
    api: Api, what: str, fields: dict[str, Any]
) -> None:
    body = {"job": template("t"), **fields}
    answer = await api.call("PUT", "/v1/schedules/bad", 400, json=body)
    assert set(answer) >= {"message", "code"} and answer["message"], what
    await api.call("GET", "/v1/schedules/bad", 404)


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("Upper-Case", template("t")),
        ("-starts-with-a-dash", template("t")),
        ("x" * 101, template("t")),
        ("ok", {"name": "no data"}),  # the template must be a valid create
        ("ok", template("t", notBefore="2030-01-01T00:00:00Z")),
        ("ok", template("t", deadline="2030-01-01T00:00:00Z")),
    ],
)
async def test_bad_names_and_templates_answer_400(api: Api, name: str, job: dict[str, Any]) -> None:
    answer = await api.call(
        "PUT", f"/v1/schedules/{name}", 400, json={"cron": "@daily", "job": job}
    )
    assert answer["code"] and answer["message"]
    assert (await api.call("GET", "/v1/schedules"))["total"] == 0
