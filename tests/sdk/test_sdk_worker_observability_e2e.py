"""End to end, on the production profile: a worker process from worker-boilerplate with
WORKER_LOG_FORMAT=json and WORKER_METRICS_PORT logs one JSON object per line, its task's
lines carrying the task's ids, and serves its metrics over HTTP."""

from __future__ import annotations

import json
import socket
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from jobnik_sdk import JobStatus, NewStage, NewTask

from ..support.api import unique
from ..support.profiles import production

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_a_worker_process_logs_json_and_serves_metrics(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    kind, port = unique("observed"), free_port()
    with production(request, tmp_path) as profile:
        profile.start_worker(kind, name="observed", WORKER_METRICS_PORT=str(port))
        log = profile.logs / "worker-observed.log"
        async with profile.client("producer") as jobnik, httpx.AsyncClient() as http:
            job = await jobnik.create_job(
                unique("observed-job"),
                stages=[NewStage(type=kind, tasks=[NewTask(data={"do": "ok", "seconds": 0.1})])],
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
