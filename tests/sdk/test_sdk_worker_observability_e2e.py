"""End to end: a worker process from worker-boilerplate with WORKER_LOG_FORMAT=json and
WORKER_METRICS_PORT logs one JSON object per line, its task's lines carrying the task's
ids, and serves its metrics over HTTP."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from jobnik_manager.db.engine import Database
from jobnik_sdk import JobnikClient, JobStatus, NewStage, NewTask

from ..support.api import unique
from ..support.processes import manager_process
from .workers import worker_process

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_a_worker_process_logs_json_and_serves_metrics(
    pg_db: Database, tmp_path: Path
) -> None:
    kind, port, log = unique("observed"), free_port(), tmp_path / "worker.log"
    with (
        manager_process(pg_db.url) as url,
        worker_process(url, kind, log, WORKER_LOG_FORMAT="json", WORKER_METRICS_PORT=str(port)),
    ):
        async with JobnikClient(url) as jobnik, httpx.AsyncClient() as http:
            job = await jobnik.create_job(
                unique("observed-job"),
                stages=[NewStage(type=kind, tasks=[NewTask(data={"x": 1, "y": 2, "zoom": 3})])],
            )
            done = await jobnik.wait(
                job.id, poll_interval=timedelta(milliseconds=100), timeout=timedelta(seconds=60)
            )
            assert done.status is JobStatus.COMPLETED
            metrics = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
            (stage,) = await jobnik.get_job_stages(job.id, with_tasks=True)
    assert f'jobnik_worker_claims_total{{stage_type="{kind}"}} 1.0' in metrics
    assert stage.tasks is not None
    task = stage.tasks[0]
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    about_task = [line for line in lines if line.get("task_id") == str(task.id)]
    assert any("started" in line["message"] for line in about_task)
    for line in about_task:
        assert line["job_id"] == str(job.id) and line["stage_type"] == kind
