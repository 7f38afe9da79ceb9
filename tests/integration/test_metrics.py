"""/metrics scraped while a job runs, on both backends: what it reads from the database
follows the tasks (waiting, running, jobs and stages by status as the tables hold them),
and its counters match the job's event log, each settlement counted once."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from jobnik_manager.clock import ManualClock
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Job, Stage
from jobnik_manager.maintenance.loop import run_tick
from jobnik_manager.observe.metrics import MetricsHook

from ..support.api import Api, unique
from ..support.scrape import Scrape


@pytest.fixture
def clock() -> ManualClock:
    """Leases and time limits run out when the test moves the manager's time on."""
    return ManualClock()


async def scrape(api: Api) -> Scrape:
    response = await api.http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return Scrape(response.text)


async def by_status(db: Database) -> dict[str, dict[str, int]]:
    async def read(s: Any) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for name, model in (("jobnik_jobs", Job), ("jobnik_stages", Stage)):
            rows = await s.execute(select(model.status, func.count()).group_by(model.status))
            counts[name] = {str(status): n for status, n in rows}
        return counts

    return await db.transaction(read)


async def assert_status_gauges(api: Api, db: Database) -> None:
    """The jobs and stages by status that a scrape answers are what the tables hold."""
    got = await scrape(api)
    for name, counts in (await by_status(db)).items():
        for status, n in counts.items():
            assert got.value(name, status=status) == n, (name, status)
        assert sum(got.value(name, status=s) for s in counts) == got.value(name)


async def test_a_scrape_follows_a_job_and_counts_what_its_event_log_holds(
    api: Api, db: Database, clock: ManualClock
) -> None:
    kind = unique("metered")
    job = await api.create_job()
    # One failure allowed: the timed task's leaves the job running to its end.
    stage = await api.create_stage(job["id"], kind, allowedFailures=1)
    tasks = await api.create_tasks(stage["id"], 6, maxAttempts=2)
    timed = await api.create_tasks(stage["id"], 1, maxAttempts=1, timeoutSeconds=5)
    first = await scrape(api)
    assert first.value("jobnik_tasks_ready", stage_type=kind) == 7
    assert first.value("jobnik_tasks_in_flight", stage_type=kind) == 0
    assert first.value("jobnik_tasks_oldest_ready_age_seconds", stage_type=kind) >= 0
    await assert_status_gauges(api, db)

    # Waiting tasks fall and running ones rise as they are claimed.
    claimed = []
    for n in range(1, 8):
        task = await api.call(
            "PATCH", f"/v1/stages/{kind}/tasks/dequeue", params={"lease_seconds": 10}
        )
        claimed.append(task)
        now = await scrape(api)
        assert now.value("jobnik_tasks_ready", stage_type=kind) == 7 - n
        assert now.value("jobnik_tasks_in_flight", stage_type=kind) == n
    assert {t["id"] for t in claimed} == {t["id"] for t in [*tasks, *timed]}
    one, two, three, four, _reaped, six = (t for t in claimed if t["id"] != timed[0]["id"])

    await api.report(one["id"], "COMPLETED")
    await api.call("PUT", f"/v1/tasks/{two['id']}/status", json={"status": "FAILED", "reason": "x"})
    later = {"status": "RETRIED", "retryAfterSeconds": 1}
    await api.call("PUT", f"/v1/tasks/{three['id']}/status", json=later)
    for t in (four, six):
        await api.report(t["id"], "COMPLETED")
    # The timed task's limit passes (timed out), then the fifth one's lease runs out.
    ticking = db.with_hooks(MetricsHook())
    clock.advance(timedelta(seconds=6))
    await run_tick(ticking)
    clock.advance(timedelta(seconds=5))
    await run_tick(ticking)
    # The ones handed back run again, and end.
    for _ in range(3):
        again = await api.call("PATCH", f"/v1/stages/{kind}/tasks/dequeue")
        await api.report(again["id"], "COMPLETED")
    assert await api.dequeue(kind) is None
    ended = await api.job(job["id"])
    assert (ended["status"], ended["partial"]) == ("COMPLETED", True)

    log = (await api.call("GET", f"/v1/jobs/{job['id']}/events", params={"page_size": 1000}))[
        "items"
    ]
    moves = Counter((e["fromStatus"], e["toStatus"]) for e in log if e["entity"] == "TASK")
    reasons = Counter(e["reason"] for e in log if e["entity"] == "TASK" and e["reason"])
    got = await scrape(api)
    claims = sum(n for (_, to), n in moves.items() if to == "IN_PROGRESS")
    assert claims == 10
    assert got.value("jobnik_task_claims_total", stage_type=kind) == claims
    completions = sum(n for (_, to), n in moves.items() if to == "COMPLETED")
    assert got.value("jobnik_task_completions_total", stage_type=kind) == completions == 6
    settled_retried = moves[("IN_PROGRESS", "RETRIED")]
    assert got.value("jobnik_task_retries_total", stage_type=kind) == settled_retried == 3
    failed = moves[("IN_PROGRESS", "FAILED")]
    assert failed == 1
    failures = {
        (c, f): got.value("jobnik_task_failures_total", stage_type=kind, reason_class=c, final=f)
        for c in ("reported", "lease_expired", "timed_out")
        for f in ("true", "false")
    }
    assert failures == {
        ("reported", "false"): 1,
        ("reported", "true"): 0,
        ("lease_expired", "false"): 1,
        ("lease_expired", "true"): 0,
        ("timed_out", "false"): 0,
        ("timed_out", "true"): 1,
    }
    assert got.value("jobnik_leases_reaped_total", stage_type=kind) == reasons["lease expired"]
    assert got.value("jobnik_task_timeouts_total", stage_type=kind) == reasons["timed out"] == 1
    # Every attempt that ran was settled once: ten claims, ten run times.
    run_times = got.value("jobnik_task_run_seconds_count", stage_type=kind)
    settled = sum(n for (frm, _), n in moves.items() if frm == "IN_PROGRESS")
    assert run_times == settled == claims
    assert got.value("jobnik_claim_latency_seconds_count", stage_type=kind) >= claims
    assert got.value("jobnik_tasks_ready", stage_type=kind) == 0
    assert got.value("jobnik_tasks_in_flight", stage_type=kind) == 0
    await assert_status_gauges(api, db)


async def test_requests_are_counted_by_route_template_and_status(api: Api) -> None:
    before = await scrape(api)
    job = await api.create_job()
    await api.call("GET", f"/v1/jobs/{job['id']}")
    await api.call("GET", "/v1/jobs/00000000-0000-0000-0000-000000000000", 404)
    await api.call("GET", "/nowhere", 404)
    after = await scrape(api)

    def more(**labels: str) -> float:
        name = "jobnik_http_requests_total"
        return after.value(name, **labels) - before.value(name, **labels)

    assert more(method="POST", route="/v1/jobs", status="201") == 1
    assert more(method="GET", route="/v1/jobs/{jobId}", status="200") == 1
    assert more(method="GET", route="/v1/jobs/{jobId}", status="404") == 1
    assert more(method="GET", route="other", status="404") == 1
    assert not [n for n, ls in after.samples if "job_id" in dict(ls) or "jobId" in dict(ls)]
    assert after.value("jobnik_build_info") == 1


async def test_metrics_can_be_turned_off(db: Database) -> None:
    import httpx

    from jobnik_manager.app import create_app
    from jobnik_manager.settings import Settings

    app = create_app(Settings(database_url=db.url, metrics=False), database=db)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://m") as c:
        response = await c.get("/metrics")
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"
