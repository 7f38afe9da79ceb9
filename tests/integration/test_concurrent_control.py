"""Claims and reports racing with pause, resume, abort, approval and priority changes,
on the production profile (two manager replicas on PostgreSQL, auth on: workers with
their tokens, an operator steering the producer's jobs); every invariant holds
afterwards."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jobnik_manager.db.engine import Database

from ..support.api import Api, unique
from ..support.deployment import Deployment
from ..support.invariants import assert_invariants
from ..support.profiles import production

WORKERS = 8
TASKS = 200  # enough that the jobs outlast the control calls on a fast manager


async def _worker(
    base_url: str,
    token: str | None,
    stage_types: list[str],
    claims: list[tuple[str, int]],
    stop: asyncio.Event,
) -> None:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=base_url, timeout=30, headers=headers) as http:
        while not stop.is_set():
            claimed_any = False
            for stage_type in stage_types:
                got = await http.patch(f"/v1/stages/{stage_type}/tasks/dequeue")
                if got.status_code == 404:
                    continue
                assert got.status_code == 200, got.text
                claimed_any = True
                task = got.json()
                claims.append((task["id"], task["attempts"]))
                outcome = (
                    "FAILED"
                    if task["data"]["i"] % 5 == 0 and task["attempts"] == 0
                    else "COMPLETED"
                )
                reported = await http.put(
                    f"/v1/tasks/{task['id']}/status", json={"status": outcome}
                )
                # A task of an aborted job may no longer be settled; nothing else may fail.
                if reported.status_code != 200:
                    assert reported.json()["code"] == "ILLEGAL_TASK_STATUS_TRANSITION", (
                        reported.text
                    )
            if not claimed_any:
                await asyncio.sleep(0.02)


async def _pause_unless_finished(api: Api, job_id: str) -> None:
    """Pause the job; the workers may finish it between the read and the pause, and
    then the pause is refused as it should be."""
    response = await api.http.put(f"/v1/jobs/{job_id}/status", json={"status": "PAUSED"})
    if response.status_code == 400:
        assert response.json()["code"] == "ILLEGAL_JOB_STATUS_TRANSITION", response.text
        assert (await api.job(job_id))["status"] == "COMPLETED"
    else:
        assert response.status_code == 200, response.text


@pytest.fixture
def profile(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Deployment]:
    with production(request, tmp_path / "profile") as d:
        yield d


def as_role(profile: Deployment, role: str) -> Api:
    return Api(httpx.AsyncClient(base_url=profile.url, headers=profile.headers(role), timeout=30))


@pytest.mark.slow
async def test_control_operations_race_with_workers(profile: Deployment) -> None:
    maker, api = as_role(profile, "producer"), as_role(profile, "operator")
    types = [unique("first"), unique("second")]
    jobs: dict[str, dict[str, object]] = {}
    for role in ("paused", "aborted", "waiting", "reprioritised", "plain"):
        job = await maker.create_job("MEDIUM")
        s1 = await maker.create_stage(job["id"], types[0])
        await maker.create_tasks(s1["id"], TASKS, maxAttempts=2)
        s2 = await maker.create_stage(job["id"], types[1], waiting=role == "waiting")
        await maker.create_tasks(s2["id"], TASKS, maxAttempts=2)
        jobs[role] = {"job": job, "stages": [s1, s2]}

    claims: list[tuple[str, int]] = []
    stop = asyncio.Event()
    rng = random.Random(7)
    # Half straight to each replica, so both processes surely race.
    replicas = [r.url for r in profile.replicas]
    token = profile.worker_token(",".join(types))
    workers = [
        asyncio.create_task(_worker(replicas[i % len(replicas)], token, types, claims, stop))
        for i in range(WORKERS)
    ]
    paused_id = jobs["paused"]["job"]["id"]  # type: ignore[index]
    for round_ in range(12):
        await asyncio.sleep(rng.uniform(0.01, 0.08))
        state = (await api.job(paused_id))["status"]
        if state in ("PENDING", "IN_PROGRESS"):
            await _pause_unless_finished(api, paused_id)
        elif state == "PAUSED":
            await api.set_job_status(paused_id, "PENDING")
        if round_ == 3:
            await api.set_job_status(jobs["aborted"]["job"]["id"], "ABORTED")  # type: ignore[index]
        if round_ == 5:
            # The producer's: an operator steers, but the priority is its owner's.
            await maker.call(
                "PATCH",
                f"/v1/jobs/{jobs['reprioritised']['job']['id']}/priority",  # type: ignore[index]
                json={"priority": "VERY_HIGH"},
            )
    if (await api.job(paused_id))["status"] == "PAUSED":
        await api.set_job_status(paused_id, "PENDING")
    waiting_stage = jobs["waiting"]["stages"][1]  # type: ignore[index]
    for _ in range(2400):  # up to two minutes on a loaded machine
        if (await api.stage(waiting_stage["id"]))["status"] == "WAITING":
            st1 = await api.stage(jobs["waiting"]["stages"][0]["id"])  # type: ignore[index]
            if st1["status"] == "COMPLETED":
                await api.approve(waiting_stage["id"])
                break
        await asyncio.sleep(0.05)
    for _ in range(2400):  # up to two minutes on a loaded machine
        statuses = [(await api.job(j["job"]["id"]))["status"] for j in jobs.values()]  # type: ignore[index]
        if all(s in ("COMPLETED", "FAILED", "ABORTED") for s in statuses):
            break
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.gather(*workers)

    final = {role: (await api.job(j["job"]["id"]))["status"] for role, j in jobs.items()}  # type: ignore[index]
    print(f"\n{len(claims)} claims; final statuses {final}")
    assert final == {
        "paused": "COMPLETED",
        "aborted": "ABORTED",
        "waiting": "COMPLETED",
        "reprioritised": "COMPLETED",
        "plain": "COMPLETED",
    }
    assert max(Counter(claims).values()) == 1, "an attempt of a task was handed out twice"
    await maker.http.aclose()
    await api.http.aclose()
    db = Database(profile.database_url)
    try:
        await assert_invariants(db)
    finally:
        await db.dispose()
