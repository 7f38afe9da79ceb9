"""`jobnik-manager serve --demo`: once the API is up, walk one job through it over HTTP.

A producer creates a three-stage job (the middle stage waits for approval), a worker
claims and completes every task (one fails once and is retried), and the progress is
logged at each step. The manager keeps serving afterwards.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI

from .settings import Settings

log = logging.getLogger("jobnik_manager.demo")
# Each request would be logged between the progress lines otherwise.
logging.getLogger("httpx").setLevel(logging.WARNING)
# A pause between tasks, so that the job can be watched on the dashboard as it runs.
PACE = 0.5  # seconds


class _Quiet(logging.Filter):
    """Keeps the access log out of the demo's progress lines while the demo runs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


def attach_demo(app: FastAPI, settings: Settings) -> None:
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    base_url = f"http://{host}:{settings.port}"
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[Any]:
        async with inner(a) as state:
            task = asyncio.create_task(run_demo(base_url))
            yield state
            task.cancel()

    app.router.lifespan_context = lifespan


async def _wait_until_up(client: httpx.AsyncClient) -> None:
    for _ in range(100):
        try:
            if (await client.get("/liveness")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError("the manager did not come up")


async def _progress(client: httpx.AsyncClient, job_id: str) -> str:
    job = (await client.get(f"/v1/jobs/{job_id}", params={"should_return_stages": True})).json()
    stages = ", ".join(f"{st['type']}={st['status']}" for st in job["stages"])
    return f"job {job['status']} {job['percentage']}% [{stages}]"


async def _work_stage(client: httpx.AsyncClient, job_id: str, stage_type: str) -> None:
    """Act as a worker for one stage type until its queue is empty."""
    while True:
        claimed = await client.patch(f"/v1/stages/{stage_type}/tasks/dequeue")
        if claimed.status_code == 404:
            return
        claimed.raise_for_status()
        task = claimed.json()
        outcome = "COMPLETED"
        if task["data"].get("flaky") and task["attempts"] == 0:
            outcome = "FAILED"  # fails once; the manager offers it again (RETRIED)
        reported = (
            await client.put(f"/v1/tasks/{task['id']}/status", json={"status": outcome})
        ).json()
        await asyncio.sleep(PACE)
        log.info(
            "  %s task %s -> %s; %s",
            stage_type,
            task["data"],
            reported["status"],
            await _progress(client, job_id),
        )


async def run_demo(base_url: str) -> None:
    quiet, access = _Quiet(), logging.getLogger("uvicorn.access")
    access.addFilter(quiet)
    try:
        async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
            await _wait_until_up(client)
            job = (
                await client.post(
                    "/v1/jobs", json={"name": "demo-map-tiles", "data": {"area": "demo"}}
                )
            ).json()
            job_id = job["id"]
            stages = [
                ("demo-render", False, 3),
                ("demo-review", True, 1),
                ("demo-publish", False, 2),
            ]
            for stage_type, waiting, n in stages:
                stage = (
                    await client.post(
                        f"/v1/jobs/{job_id}/stage",
                        json={"type": stage_type, "data": {}, "startAsWaiting": waiting},
                    )
                ).json()
                tasks = [
                    {
                        "data": {"n": i, "flaky": stage_type == "demo-render" and i == 0},
                        "maxAttempts": 3,
                    }
                    for i in range(n)
                ]
                await client.post(f"/v1/stages/{stage['id']}/tasks", json=tasks)
                if waiting:
                    review_id = stage["id"]
            log.info("demo: created job %s; %s", job_id, await _progress(client, job_id))
            log.info("demo: watch it at %s/ui#/jobs/%s", base_url, job_id)
            await _work_stage(client, job_id, "demo-render")
            log.info("demo: stage demo-review is WAITING; approving it")
            await client.put(f"/v1/stages/{review_id}/status", json={"status": "PENDING"})
            await _work_stage(client, job_id, "demo-review")
            await _work_stage(client, job_id, "demo-publish")
            log.info("demo: done; %s", await _progress(client, job_id))
            log.info(
                "demo: the manager keeps running at %s (API docs at %s/docs)", base_url, base_url
            )
    except Exception:
        log.exception("demo failed")
    finally:
        access.removeFilter(quiet)
