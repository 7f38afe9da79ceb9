"""The SDK's WorkerSettings: the Worker's own settings read from the environment, by the
rules the Worker keeps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from jobnik_sdk import Worker, WorkerSettings
from jobnik_sdk._settings import DEFAULT_POLL_BACKOFF, MAX_PREFETCH


async def handler(data: object, ctx: object) -> None:
    return None


def test_the_defaults_are_the_workers() -> None:
    settings = WorkerSettings.from_env(environ={})
    assert settings.worker_options() == {
        "concurrency": 1,
        "name": None,
        "lease": timedelta(seconds=30),
        "heartbeat_interval": timedelta(seconds=10),
        "shutdown_grace": timedelta(seconds=30),
        "claim_wait": timedelta(seconds=30),
        "poll_backoff": DEFAULT_POLL_BACKOFF,
        "amqp_url": None,
        "safety_poll": timedelta(seconds=30),
        "metrics_port": None,
        "health_file": None,
        "prefetch": MAX_PREFETCH,
        "report_batch_size": 100,
        "report_linger": timedelta(milliseconds=5),
        "report_timeout": timedelta(minutes=5),
    }


def test_variables_under_the_prefix_are_read() -> None:
    settings = WorkerSettings.from_env(
        "APP_",
        environ={
            "APP_CONCURRENCY": "4",
            "APP_LEASE_SECONDS": "60",
            "APP_HEARTBEAT_SECONDS": "15",
            "APP_POLL_INITIAL_SECONDS": "0.1",
            "APP_POLL_MAX_SECONDS": "1",
            "APP_NAME": "tiler-7",
            "JOBNIK_WORKER_CONCURRENCY": "9",  # another prefix: not read
        },
    )
    assert (settings.concurrency, settings.name) == (4, "tiler-7")
    assert (settings.lease, settings.heartbeat_interval) == (
        timedelta(seconds=60),
        timedelta(seconds=15),
    )
    assert settings.poll_backoff.initial == timedelta(seconds=0.1)
    assert settings.poll_backoff.maximum == timedelta(seconds=1)


def test_the_sdks_metrics_port_variable_serves_any_prefix() -> None:
    settings = WorkerSettings.from_env("APP_", environ={"JOBNIK_WORKER_METRICS_PORT": "9100"})
    assert settings.metrics_port == 9100


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("CONCURRENCY", "0", "concurrency"),
        ("LEASE_SECONDS", "0.5", "lease"),
        ("HEARTBEAT_SECONDS", "30", "heartbeat_interval"),  # not less than the 30 s lease
        ("CLAIM_WAIT_SECONDS", "61", "claim_wait"),
        ("NAME", "", "name"),
        ("METRICS_PORT", "0", "metrics_port"),
        ("PREFETCH", "201", "prefetch"),
        ("POLL_MAX_SECONDS", "0", "poll_max_seconds"),
    ],
)
def test_what_the_worker_would_refuse_is_refused(name: str, value: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        WorkerSettings.from_env(environ={f"JOBNIK_WORKER_{name}": value})


def test_the_options_make_a_worker() -> None:
    settings = WorkerSettings(concurrency=3, amqp_url="amqp://broker/", safety_poll_seconds=12)
    worker = Worker(
        "http://manager", stage_types="tiles", handler=handler, **settings.worker_options()
    )
    assert (worker.amqp_url, worker.safety_poll) == ("amqp://broker/", timedelta(seconds=12))


def test_the_worker_keeps_the_same_rules() -> None:
    with pytest.raises(ValueError, match="heartbeat_interval"):
        Worker(
            "http://manager",
            stage_types="tiles",
            handler=handler,
            lease=timedelta(seconds=5),
            heartbeat_interval=timedelta(seconds=5),
        )
