"""The scenarios of a team's day on the production profile (PostgreSQL, RabbitMQ,
authentication on with each role's token, two replicas behind one URL, metrics, JSON
logs, traces, template workers with worker tokens) and on the minimal one (SQLite, no
authentication, no broker): every scenario ends as it should on both, a worker killed
mid-task has its task finished by another, and what the event log records agrees with
the counters and names who did it (with JSON logs and traces on production)."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from jobnik_sdk import JobStatus, NewStage, NewTask, TaskStatus

from ..support.api import unique
from ..support.deployment import Deployment
from ..support.scrape import Scrape
from ..support.soak_scenarios import SCENARIOS, Actors

pytestmark = pytest.mark.e2e


async def test_every_scenario_ends_as_its_scenario_expects(running: Deployment) -> None:
    made: dict[str, str] = {}
    async with (
        running.client("producer") as producer,
        running.client("operator") as operator,
        httpx.AsyncClient(base_url=running.url, headers=running.headers("producer")) as ojs,
    ):
        actors = Actors(producer, operator, ojs)

        async def run(scenario_index: int) -> None:
            scenario = SCENARIOS[scenario_index]
            await scenario.run(actors, lambda job_id: made.__setitem__(scenario.name, job_id))

        await asyncio.gather(*(run(i) for i in range(len(SCENARIOS))))
        ended = {}
        for scenario in SCENARIOS:
            job = await operator.wait(made[scenario.name], timeout=_seconds(120))
            ended[scenario.name] = job.status
    assert ended == {s.name: s.expect for s in SCENARIOS}


async def test_a_task_of_a_killed_worker_is_finished_by_another(
    running: Deployment, tmp_path: Path
) -> None:
    kind = unique("victim")
    first = running.start_worker(kind, name=f"{kind}-first", WORKER_LEASE_SECONDS="3")
    async with running.client("producer") as producer:
        job = await producer.create_job(
            unique("kill"),
            stages=[
                NewStage(
                    type=kind, tasks=[NewTask(data={"do": "ok", "seconds": 30}, max_attempts=3)]
                )
            ],
        )
        task_id = job.stages[0].tasks[0].id if job.stages and job.stages[0].tasks else None
        assert task_id is not None
        deadline = time.monotonic() + 60
        while (await producer.get_task(task_id)).status is not TaskStatus.IN_PROGRESS:
            assert time.monotonic() < deadline, "never claimed"
            await asyncio.sleep(0.2)
        first.send_signal(signal.SIGKILL)
        first.wait()
        # Its lease runs out; the reaper hands the task back, and the second finishes it
        # (the second runs it quickly: a retry attempt of "ok" sleeps as long, so it is
        # given less to do through its lease only: the attempt after a lost lease). The
        # second holds a lease of the default length: only the killed worker's is meant
        # to run out, and a 3 s one renewed every second through 30 s of work was once
        # lost on a loaded machine (a heartbeat more than 2 s late).
        running.start_worker(kind, name=f"{kind}-second")
        done = await producer.wait(job.id, timeout=_seconds(120))
        task = await producer.get_task(task_id)
    assert done.status is JobStatus.COMPLETED
    assert task.attempts == 1  # the lost lease spent one
    assert task.worker == f"{kind}-second"


async def test_counters_equal_the_event_log_and_events_name_their_principal(
    running: Deployment,
) -> None:
    kind = unique("counted")
    running.start_worker(kind, name=f"{kind}-w")
    async with running.client("producer") as producer, running.client("operator") as operator:
        before = await _counters(running, kind)
        job = await producer.create_job(
            unique("counted"),
            stages=[
                NewStage(
                    type=kind,
                    tasks=[
                        *(NewTask(data={"do": "ok"}, max_attempts=3) for _ in range(5)),
                        NewTask(data={"do": "flaky"}, max_attempts=3),
                    ],
                )
            ],
        )
        done = await producer.wait(job.id, timeout=_seconds(120))
        assert done.status is JobStatus.COMPLETED
        events = [e async for e in operator.iter_events(job.id)]
        after = await _counters(running, kind)
    tasks = [e for e in events if e.entity == "TASK" and e.to_status is not None]
    claims = sum(1 for e in tasks if e.to_status == "IN_PROGRESS")
    completions = sum(1 for e in tasks if e.to_status == "COMPLETED")
    retries = sum(1 for e in tasks if e.from_status == "IN_PROGRESS" and e.to_status == "RETRIED")
    assert (claims, completions, retries) == (7, 6, 1)
    assert {k: after[k] - before[k] for k in after} == {
        "claims": claims,
        "completions": completions,
        "retries": retries,
    }
    if running.auth:
        # Who did each move: the producer created, the worker's token claimed and settled.
        by_move = {(e.from_status, e.to_status): e.principal for e in tasks}
        assert by_move[(None, "PENDING")] == "producer"
        assert by_move[("PENDING", "IN_PROGRESS")] == f"worker-{kind}"
        assert by_move[("IN_PROGRESS", "COMPLETED")] == f"worker-{kind}"
        # Every line each replica logged is JSON, and spans reached the collector.
        for replica in running.replicas:
            lines = [line for line in replica.log.read_text().splitlines() if line.strip()]
            assert lines and all(json.loads(line) for line in lines)
        deadline = time.monotonic() + 30
        while running.balancer_answers()["traceExports"] == 0:
            assert time.monotonic() < deadline, "no span export reached the collector"
            await asyncio.sleep(0.5)
    else:
        assert all(e.principal is None for e in events)


async def _counters(running: Deployment, kind: str) -> dict[str, float]:
    names = {
        "claims": "jobnik_task_claims_total",
        "completions": "jobnik_task_completions_total",
        "retries": "jobnik_task_retries_total",
    }
    total = dict.fromkeys(names, 0.0)
    async with httpx.AsyncClient(timeout=30) as http:
        for replica in running.replicas:
            scrape = Scrape((await http.get(f"{replica.url}/metrics")).text)
            for key, name in names.items():
                total[key] += scrape.value(name, stage_type=kind)
    return total


def _seconds(n: float) -> timedelta:
    return timedelta(seconds=n)


async def test_a_hostile_body_is_refused_not_a_server_error(running: Deployment) -> None:
    kind = unique("hostile")
    token = running.worker_token(kind)
    nested = "[" * 50_000 + "]" * 50_000
    async with running.client("producer") as producer:
        job = await producer.create_job(
            unique("hostile"), stages=[NewStage(type=kind, tasks=[NewTask()])]
        )
    task_id = job.stages[0].tasks[0].id if job.stages and job.stages[0].tasks else None
    async with httpx.AsyncClient(base_url=running.url, timeout=30) as http:
        answers = []
        for headers in (
            {"authorization": f"Bearer {token}"} if token else {},
            {"authorization": "Bearer jnk_not-a-token"},
        ):
            answer = await http.put(
                f"/v1/tasks/{task_id}/status",
                content=nested,
                headers={**headers, "content-type": "application/json"},
            )
            answers.append((answer.status_code, answer.json()["code"]))
    # Refused as input (or, with a token that is not one, as unauthenticated): never 5xx.
    assert answers[0] == (400, "VALIDATION_ERROR")
    assert answers[1] == ((401, "UNAUTHORIZED") if running.auth else (400, "VALIDATION_ERROR"))
