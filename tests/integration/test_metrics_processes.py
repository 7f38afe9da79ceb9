"""/metrics with more than one manager process on one PostgreSQL database: on the
production profile each replica counts what it did (a sum over replicas counts
everything once) and reads the same database state; `serve --workers N` answers the
counts of all its processes from any."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from ..support.api import unique
from ..support.processes import manager_process
from ..support.profiles import production
from ..support.scrape import Scrape

# The tokens of the calls below; none on a manager with auth off.
Headers = dict[str, str]

pytestmark = pytest.mark.e2e  # manager processes


def scrape(base: str) -> Scrape:
    response = httpx.get(f"{base}/metrics", timeout=10)
    assert response.status_code == 200
    return Scrape(response.text)


def one_stage_job(base: str, kind: str, tasks: int, headers: Headers | None = None) -> str:
    body = {
        "name": unique("job"),
        "data": {},
        "stages": [{"type": kind, "data": {}, "tasks": [{"data": {}} for _ in range(tasks)]}],
    }
    response = httpx.post(f"{base}/v1/jobs", json=body, timeout=10, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def claim(base: str, kind: str, headers: Headers | None = None) -> str:
    response = httpx.patch(f"{base}/v1/stages/{kind}/tasks/dequeue", timeout=10, headers=headers)
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


def complete(base: str, task_id: str, headers: Headers | None = None) -> None:
    response = httpx.put(
        f"{base}/v1/tasks/{task_id}/status", json={"status": "COMPLETED"}, headers=headers
    )
    assert response.status_code == 200, response.text


def test_two_replicas_count_their_own_work_and_read_the_same_state(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    kind = unique("replicas")
    with production(request, tmp_path) as profile:
        a, b = (r.url for r in profile.replicas)
        token = profile.worker_token(kind)
        worker = {"authorization": f"Bearer {token}"}
        job_id = one_stage_job(a, kind, 20, profile.headers("producer"))
        claimed: dict[str, list[str]] = {a: [], b: []}
        for i in range(20):
            by = (a, b)[i % 2]
            claimed[by].append(claim(by, kind, worker))
            left = 20 - (i + 1)
            for base in (a, b):
                assert scrape(base).value("jobnik_tasks_ready", stage_type=kind) == left
        # Each replica's claims are completed through the other.
        for task_id in claimed[a]:
            complete(b, task_id, worker)
        for task_id in claimed[b]:
            complete(a, task_id, worker)
        job = httpx.get(f"{a}/v1/jobs/{job_id}", headers=profile.headers("producer")).json()
        assert job["status"] == "COMPLETED"
        at_a, at_b = scrape(a), scrape(b)

    for name in ("jobnik_task_claims_total", "jobnik_task_completions_total"):
        assert at_a.value(name, stage_type=kind) == 10
        assert at_b.value(name, stage_type=kind) == 10
    runs = "jobnik_task_run_seconds_count"
    assert at_a.value(runs, stage_type=kind) + at_b.value(runs, stage_type=kind) == 20
    # What the database holds is the same from either.
    for name in ("jobnik_jobs", "jobnik_stages"):
        for status in ("COMPLETED", "PENDING", "IN_PROGRESS", "FAILED"):
            assert at_a.value(name, status=status) == at_b.value(name, status=status)
    assert at_a.value("jobnik_jobs", status="COMPLETED") >= 1


def test_serve_with_several_processes_answers_all_their_counts(
    postgres_url: str, tmp_path: Path
) -> None:
    kind = unique("workers")
    shared = tmp_path / "metrics"
    shared.mkdir()
    with manager_process(
        postgres_url,
        log=tmp_path / "m.log",
        args=["--workers", "2"],
        PROMETHEUS_MULTIPROC_DIR=str(shared),
    ) as base:
        one_stage_job(base, kind, 30)
        # A new connection per call: the kernel spreads them over both processes.
        for _ in range(30):
            complete(base, claim(base, kind))
        counts = {scrape(base).value("jobnik_task_claims_total", stage_type=kind) for _ in range(6)}
        completions = scrape(base).value("jobnik_task_completions_total", stage_type=kind)
    pids = {m[1] for f in shared.iterdir() if (m := re.search(r"_(\d+)\.db$", f.name))}
    assert len(pids) >= 2, "both processes counted"
    # Whichever process answered each scrape, it counted both processes' claims.
    assert counts == {30}
    assert completions == 30
