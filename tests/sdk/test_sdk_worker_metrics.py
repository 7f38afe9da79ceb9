"""Worker metrics: what the counters and histograms say against what happened to the
tasks, on the manager (both backends) and on the fake; and /metrics over HTTP.

The registry is the process's, shared by every test: each test compares values before
and after, on a stage type of its own."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta
from functools import partial
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from jobnik_sdk import (
    JobStatus,
    NewStage,
    NewTask,
    NonRetryableError,
    RetryLaterError,
    TaskContext,
    TaskRetryPolicy,
    Worker,
)
from jobnik_sdk.testing import FakeJobnik

from ..support import workers
from ..support.api import unique
from ..support.clients import PassThrough
from ..support.handlers import Gate, Held
from .conftest import Surface

# An idle worker here stops at once: its claims do not wait for work.
worker = partial(workers.worker, claim_wait=timedelta(0))

DEADLINE = timedelta(seconds=20)
NO_DELAY = TaskRetryPolicy(initial_delay=timedelta(0))
LEASE = timedelta(seconds=5)


Sampled = dict[tuple[str, frozenset[tuple[str, str]]], float]


def every_sample() -> Sampled:
    # One pass over the process's registry, which holds every test's label sets by now.
    return {
        (each.name, frozenset(each.labels.items())): each.value
        for metric in REGISTRY.collect()
        for each in metric.samples
    }


def sample(name: str, sampled: Sampled | None = None, **labels: str) -> float:
    found = (sampled if sampled is not None else every_sample()).get(
        (name, frozenset(labels.items()))
    )
    return found or 0.0


class Samples:
    """The worker metrics of one stage type, read now, to compare with later."""

    OUTCOMES = ("completed", "failed", "retried", "retry_later", "cancelled", "lost")

    def __init__(self, stage_type: str) -> None:
        self.stage_type = stage_type
        self.values = self.read()

    def read(self) -> dict[str, float]:
        kind, now = self.stage_type, every_sample()
        values = {
            "claims": sample("jobnik_worker_claims_total", now, stage_type=kind),
            "in_flight": sample("jobnik_worker_tasks_in_flight", now, stage_type=kind),
            "leases_lost": sample("jobnik_worker_leases_lost_total", now, stage_type=kind),
            "heartbeats": sample("jobnik_worker_heartbeat_seconds_count", now),
            "empty_polls": sample("jobnik_worker_empty_polls_total", now, stage_type=kind),
        }
        for outcome in self.OUTCOMES:
            values[outcome] = sample(
                "jobnik_worker_handler_seconds_count", now, stage_type=kind, outcome=outcome
            )
        for error in ("NonRetryableError", "RuntimeError", "TimeoutError"):
            values[error] = sample(
                "jobnik_worker_failures_total", now, stage_type=kind, error_type=error
            )
        return values

    def delta(self) -> dict[str, float]:
        now = self.read()
        return {key: now[key] - self.values[key] for key in now if now[key] != self.values[key]}


class Watched(PassThrough):
    """A client whose heartbeats and empty claims set events, to wait on them."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.beat = asyncio.Event()
        self.empty = asyncio.Event()

    async def heartbeat_many(self, *args: Any, **kwargs: Any) -> Any:
        answers = await self.inner.heartbeat_many(*args, **kwargs)
        self.beat.set()
        return answers

    async def claim_with_context(self, *args: Any, **kwargs: Any) -> Any:
        claimed = await self.inner.claim_with_context(*args, **kwargs)
        if not claimed.items:
            self.empty.set()
        return claimed


async def metered_job(name: str, task: NewTask | None = None) -> tuple[FakeJobnik, str, Samples]:
    """A fake with a job `name` of one task (`task`, by default a plain one) of a stage
    type of its own, that type, and the worker metrics before any of it runs."""
    fake, kind = FakeJobnik(), unique(f"metered-{name}")
    await fake.create_job(name, stages=[NewStage(type=kind, tasks=[task or NewTask()])])
    return fake, kind, Samples(kind)


def short_lease_worker(
    client: Any, stage_type: str, handler: Any, *, heartbeats: timedelta
) -> Worker[Any]:
    """A metered worker taking leases of `LEASE`, renewed every `heartbeats`."""
    return worker(
        client, stage_type, handler, metrics=True, lease=LEASE, heartbeat_interval=heartbeats
    )


async def test_counters_and_histograms_follow_the_tasks_outcomes(surface: Surface) -> None:
    kind = unique("metered")
    watched = Watched(surface)
    later: set[str] = set()

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        what = data["do"]
        if what == "complete":
            await watched.beat.wait()  # a heartbeat is timed while it runs
        elif what == "fail":
            raise NonRetryableError("bad tile")
        elif what == "later" and what not in later:
            later.add(what)
            raise RetryLaterError(timedelta(0), "not yet")
        elif what == "flaky" and ctx.attempt == 1:
            raise RuntimeError("flaked")

    job = await surface.create_job(
        unique("metered-job"),
        stages=[
            NewStage(
                type=kind,
                allowed_failures=1,  # the failed task does not abort the others
                retry_policy=NO_DELAY,
                tasks=[
                    NewTask(data={"do": "complete"}),
                    NewTask(data={"do": "fail"}, max_attempts=3),
                    NewTask(data={"do": "later"}),
                    NewTask(data={"do": "flaky"}, max_attempts=2),
                ],
            )
        ],
    )
    before = Samples(kind)
    async with worker(
        watched,
        kind,
        handler,
        concurrency=4,
        metrics=True,
        lease=timedelta(seconds=5),
        heartbeat_interval=timedelta(milliseconds=20),
    ):
        done = await surface.wait(
            job.id, timeout=DEADLINE, poll_interval=timedelta(milliseconds=20)
        )
        assert done.status is JobStatus.COMPLETED
        watched.empty.clear()
        await asyncio.wait_for(watched.empty.wait(), DEADLINE.total_seconds())
    delta = before.delta()
    assert delta.pop("heartbeats") >= 1
    assert delta.pop("empty_polls") >= 1
    assert delta == {
        # Each attempt claimed: the later and the flaky tasks twice.
        "claims": 6,
        "completed": 3,
        "failed": 1,  # NonRetryableError: attempts left, but not to be retried
        "NonRetryableError": 1,
        "retried": 1,  # the flaky task's first attempt: it had a second one
        "RuntimeError": 1,
        "retry_later": 1,
    }
    assert sample("jobnik_worker_tasks_in_flight", stage_type=kind) == 0


async def test_a_lost_lease_is_counted() -> None:
    held = Held()
    fake, kind, before = await metered_job("lost")
    async with short_lease_worker(fake, kind, held, heartbeats=timedelta(milliseconds=20)):
        await asyncio.wait_for(held.started.wait(), DEADLINE.total_seconds())
        assert before.delta() == {"claims": 1, "in_flight": 1}
        fake.clock.advance(LEASE * 2)  # the lease runs out: the next heartbeat hears so
        await asyncio.wait_for(held.cancelled.wait(), DEADLINE.total_seconds())
    delta = before.delta()
    delta.pop("heartbeats", None)
    assert delta == {"claims": 1, "leases_lost": 1, "lost": 1}


async def test_empty_polls_name_all_the_stage_types() -> None:
    fake = FakeJobnik()
    kinds = [unique("metered-a"), unique("metered-b")]
    watched = Watched(fake)
    label = ",".join(kinds)
    before = sample("jobnik_worker_empty_polls_total", stage_type=label)
    async with worker(watched, kinds, Held(), metrics=True):
        await asyncio.wait_for(watched.empty.wait(), DEADLINE.total_seconds())
    assert sample("jobnik_worker_empty_polls_total", stage_type=label) - before >= 1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_metrics_port_serves_the_metrics_over_http_while_the_worker_runs() -> None:
    fake, kind = FakeJobnik(), unique("metered-http")
    ran = asyncio.Event()

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        ran.set()

    await fake.create_job("served", stages=[NewStage(type=kind, tasks=[NewTask()])])
    port = free_port()
    async with worker(fake, kind, handler, metrics_port=port), httpx.AsyncClient() as http:
        await asyncio.wait_for(ran.wait(), DEADLINE.total_seconds())
        response = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert response.status_code == 200
    assert f'jobnik_worker_claims_total{{stage_type="{kind}"}} 1.0' in response.text
    for name in (
        "jobnik_worker_tasks_in_flight",
        "jobnik_worker_handler_seconds",
        "jobnik_worker_failures_total",
        "jobnik_worker_empty_polls_total",
        "jobnik_worker_heartbeat_seconds",
        "jobnik_worker_leases_lost_total",
    ):
        # A counter's TYPE line names it with or without _total, by the library's version.
        assert f"# TYPE {name.removesuffix('_total')}" in response.text
    # Stopped with the worker: the port is free again.
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT
        probe.bind(("0.0.0.0", port))
        probe.listen()


def test_metrics_are_off_by_default_and_a_bad_port_is_refused() -> None:
    fake = FakeJobnik()
    assert not worker(fake, "plain", Held())._meter.enabled
    with pytest.raises(ValueError, match="metrics_port"):
        worker(fake, "plain", Held(), metrics_port=0)


async def test_a_handler_stopped_at_its_time_limit_is_a_failure() -> None:
    held = Held()
    fake, kind, before = await metered_job("timed", NewTask(timeout_seconds=0.05, max_attempts=2))
    async with worker(fake, kind, held, metrics=True):
        await asyncio.wait_for(held.cancelled.wait(), DEADLINE.total_seconds())
    delta = before.delta()
    delta.pop("heartbeats", None)
    # The first of two attempts: the manager offers it again.
    assert delta == {"claims": 1, "retried": 1, "TimeoutError": 1}


async def test_a_lease_lost_before_the_report_is_counted_too() -> None:
    # The handler ends after its lease ran out and before a heartbeat heard so: the
    # manager refuses the report (LEASE_LOST), and that is a lost lease as well.
    gate = Gate(1)
    fake, kind, before = await metered_job("late")
    async with short_lease_worker(fake, kind, gate, heartbeats=timedelta(seconds=4)):
        await asyncio.wait_for(gate.all_running.wait(), DEADLINE.total_seconds())
        fake.clock.advance(LEASE * 2)  # ran out; the next heartbeat is seconds away
        gate.release.set()
        for _ in range(200):
            if before.delta().get("leases_lost"):
                break
            await asyncio.sleep(0.01)
    delta = before.delta()
    assert delta.get("leases_lost") == 1, delta
