"""Unique jobs: a create with a unique key answers the job holding the key (200, that
job and its stages) instead of making another, while that job is not final or, with a
window, until the window after its creation has passed; then the next create takes the
key. Concurrent creates with one key make one job. Bad keys and windows are refused."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.apps import app_on


@pytest.fixture
def clock() -> ManualClock:
    """The manager's time: windows pass when the test moves it on."""
    return ManualClock()


def body(key: str | None, window: float | None = None, **extra: Any) -> dict[str, Any]:
    made: dict[str, Any] = {
        "name": "nightly-export",
        "data": {},
        "stages": [{"type": "export", "data": {}, "tasks": [{"data": {}}]}],
        **extra,
    }
    if key is not None:
        made["uniqueKey"] = key
    if window is not None:
        made["uniqueWindowSeconds"] = window
    return made


async def test_while_the_holder_is_not_final_a_create_answers_it(api: Api) -> None:
    key = unique("dataset-7")
    first = await api.call("POST", "/v1/jobs", 201, json=body(key))
    assert first["uniqueKey"] == key
    again = await api.call("POST", "/v1/jobs", 200, json=body(key, priority="HIGH"))
    assert again["id"] == first["id"] and again["priority"] == "MEDIUM"  # nothing changed
    assert [st["id"] for st in again["stages"]] == [st["id"] for st in first["stages"]]
    listed = await api.call("GET", "/v1/jobs", params={"job_name": "nightly-export"})
    assert [j["id"] for j in listed["items"] if j.get("uniqueKey") == key] == [first["id"]]
    # Another key, or none, makes a job of its own.
    other = await api.call("POST", "/v1/jobs", 201, json=body(unique("dataset-8")))
    plain = await api.call("POST", "/v1/jobs", 201, json=body(None))
    assert len({first["id"], other["id"], plain["id"]}) == 3 and "uniqueKey" not in plain

    # Once the holder is final, the next create takes the key.
    await api.set_job_status(first["id"], "ABORTED")
    after = await api.call("POST", "/v1/jobs", 201, json=body(key))
    assert after["id"] != first["id"]
    assert (await api.call("POST", "/v1/jobs", 200, json=body(key)))["id"] == after["id"]


async def test_with_a_window_the_key_is_held_that_long_whatever_the_status(
    api: Api, clock: ManualClock
) -> None:
    key = unique("daily")
    first = await api.call("POST", "/v1/jobs", 201, json=body(key, window=3600))
    await api.set_job_status(first["id"], "ABORTED")  # final, yet within its window
    clock.advance(timedelta(minutes=59))
    assert (await api.call("POST", "/v1/jobs", 200, json=body(key, window=3600)))["id"] == (
        first["id"]
    )
    clock.advance(timedelta(minutes=2))
    second = await api.call("POST", "/v1/jobs", 201, json=body(key, window=3600))
    assert second["id"] != first["id"]


async def test_deleting_the_holder_frees_the_key(api: Api) -> None:
    key = unique("deleted")
    first = await api.call("POST", "/v1/jobs", 201, json=body(key))
    await api.set_job_status(first["id"], "ABORTED")
    await api.call("DELETE", f"/v1/jobs/{first['id']}")
    assert (await api.call("POST", "/v1/jobs", 201, json=body(key)))["id"] != first["id"]


async def test_concurrent_creates_with_one_key_make_one_job(api: Api, db: Database) -> None:
    key = unique("race")
    other = Database(db.url, pool_size=5)  # a second manager on the same database
    try:
        with app_on(other) as app:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://m2") as second:
                clients = [api.http, second] * 8
                answers = await asyncio.gather(
                    *(c.post("/v1/jobs", json=body(key)) for c in clients)
                )
    finally:
        await other.dispose()
    assert sorted(a.status_code for a in answers) == [200] * 15 + [201], [a.text for a in answers]
    assert len({a.json()["id"] for a in answers}) == 1


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"uniqueKey": ""}, "uniqueKey"),
        ({"uniqueKey": "k" * 256}, "uniqueKey"),
        ({"uniqueKey": 7}, "uniqueKey"),
        ({"uniqueKey": "k", "uniqueWindowSeconds": 0}, "uniqueWindowSeconds"),
        ({"uniqueKey": "k", "uniqueWindowSeconds": -5}, "uniqueWindowSeconds"),
        ({"uniqueKey": "k", "uniqueWindowSeconds": 400 * 86400}, "uniqueWindowSeconds"),
        ({"uniqueWindowSeconds": 60}, "uniqueWindowSeconds goes with a uniqueKey"),
    ],
)
async def test_bad_keys_and_windows_are_refused_and_make_nothing(
    api: Api, extra: dict[str, Any], why: str
) -> None:
    before = (await api.call("GET", "/v1/jobs"))["total"]
    answer = await api.call("POST", "/v1/jobs", 400, json=body(None, **extra))
    assert answer["code"] == "VALIDATION_ERROR" and why in answer["message"]
    assert (await api.call("GET", "/v1/jobs"))["total"] == before
