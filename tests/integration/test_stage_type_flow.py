"""GET /v1/stage-types/{type}/flow: a stage type's tasks created, completed, failed and
retried per minute, read from the event log over a window; on both backends, with the
manager's clock moved by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jobnik_manager.clock import ManualClock

from ..support.api import Api, unique

START = datetime(2026, 3, 1, 12, 0, 30, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


def moved(minute: dict[str, Any]) -> tuple[int, int, int, int]:
    return minute["created"], minute["completed"], minute["failed"], minute["retried"]


async def test_each_minute_counts_the_moves_of_its_type_alone(api: Api, clock: ManualClock) -> None:
    kind, other = unique("flow"), unique("other")
    job = await api.create_job()
    stage = await api.create_stage(job["id"], kind, allowedFailures=5)
    await api.create_tasks(stage["id"], 3)
    await api.create_tasks(stage["id"], 1, maxAttempts=2)
    elsewhere = await api.create_stage((await api.create_job())["id"], other)
    await api.create_tasks(elsewhere["id"], 2)
    await api.run_one(other)

    clock.advance(timedelta(minutes=2))  # 12:02:30
    await api.run_one(kind)
    await api.run_one(kind)
    clock.advance(timedelta(minutes=1))  # 12:03:30
    await api.run_one(kind, "FAILED")
    await api.run_one(kind, "FAILED")  # its first attempt of two: retried

    flow = await api.call("GET", f"/v1/stage-types/{kind}/flow", params={"minutes": 5})
    assert flow["type"] == kind
    assert flow["since"].startswith("2026-03-01T11:58:00")
    starts = [m["start"][:16] for m in flow["minutes"]]
    assert starts == [
        f"2026-03-01T{t}" for t in ("11:58", "11:59", "12:00", "12:01", "12:02", "12:03")
    ]
    assert [moved(m) for m in flow["minutes"]] == [
        (0, 0, 0, 0),
        (0, 0, 0, 0),
        (4, 0, 0, 0),
        (0, 0, 0, 0),
        (0, 2, 0, 0),
        (0, 0, 1, 1),
    ]

    # A narrower window leaves the older minutes out; its first minute is read whole.
    recent = await api.call("GET", f"/v1/stage-types/{kind}/flow", params={"minutes": 1})
    assert [moved(m) for m in recent["minutes"]] == [(0, 2, 0, 0), (0, 0, 1, 1)]


async def test_an_hour_later_the_window_holds_none_of_it(api: Api, clock: ManualClock) -> None:
    _, stage, _ = await api.one_stage_job("flow", tasks=2)
    kind = stage["type"]
    await api.run_one(kind)
    clock.advance(timedelta(hours=2))
    flow = await api.call("GET", f"/v1/stage-types/{kind}/flow")
    assert len(flow["minutes"]) == 61
    assert all(moved(m) == (0, 0, 0, 0) for m in flow["minutes"])
    # A type nothing ever moved has a flow of empty minutes, not a 404.
    never = await api.call("GET", f"/v1/stage-types/{unique('never')}/flow", params={"minutes": 3})
    assert [moved(m) for m in never["minutes"]] == [(0, 0, 0, 0)] * 4


@pytest.mark.parametrize("minutes", ["0", "1441", "-1", "soon", "1.5"])
async def test_a_window_out_of_range_is_refused(api: Api, minutes: str) -> None:
    answer = await api.call("GET", "/v1/stage-types/any/flow", 400, params={"minutes": minutes})
    assert answer["code"] == "VALIDATION_ERROR" and answer["message"]
