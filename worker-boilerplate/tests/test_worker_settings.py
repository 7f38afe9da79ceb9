"""Settings come from WORKER_ environment variables."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from jobnik_sdk import JobnikClient
from jobnik_sdk.testing import FakeJobnik
from tile_render_worker.app import build_client, build_worker
from tile_render_worker.settings import HANDLER, STAGE_TYPE, WorkerSettings


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "WORKER_MANAGER_URL",
        "WORKER_STAGE_TYPE",
        "WORKER_CONCURRENCY",
        "WORKER_LEASE_SECONDS",
        "WORKER_HEARTBEAT_SECONDS",
        "WORKER_NAME",
        "WORKER_CLAIM_WAIT_SECONDS",
        "WORKER_HANDLER",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = WorkerSettings(_env_file=None)  # type: ignore[call-arg]
    assert settings.manager_url == "http://127.0.0.1:8080"
    assert settings.stage_types == [STAGE_TYPE]
    assert settings.handler == HANDLER
    assert settings.concurrency == 1
    assert settings.shutdown_grace == timedelta(seconds=30)
    assert settings.lease == timedelta(seconds=30)
    assert settings.heartbeat_interval == timedelta(seconds=10)
    assert settings.claim_wait == timedelta(seconds=30)
    assert settings.name is None


def test_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKER_MANAGER_URL", "http://manager:8080")
    monkeypatch.setenv("WORKER_STAGE_TYPE", "alpha, beta")
    monkeypatch.setenv("WORKER_CONCURRENCY", "4")
    monkeypatch.setenv("WORKER_SHUTDOWN_GRACE_SECONDS", "2.5")
    monkeypatch.setenv("WORKER_POLL_INITIAL_SECONDS", "0.1")
    monkeypatch.setenv("WORKER_POLL_MAX_SECONDS", "1")
    monkeypatch.setenv("WORKER_LEASE_SECONDS", "60")
    monkeypatch.setenv("WORKER_HEARTBEAT_SECONDS", "15")
    monkeypatch.setenv("WORKER_NAME", "worker-7")
    monkeypatch.setenv("WORKER_CLAIM_WAIT_SECONDS", "0")
    settings = WorkerSettings(_env_file=None)  # type: ignore[call-arg]
    assert settings.manager_url == "http://manager:8080"
    assert settings.stage_types == ["alpha", "beta"]
    assert settings.concurrency == 4
    assert settings.shutdown_grace == timedelta(seconds=2.5)
    assert settings.poll_backoff.initial == timedelta(seconds=0.1)
    assert settings.poll_backoff.maximum == timedelta(seconds=1)
    assert settings.lease == timedelta(seconds=60)
    assert settings.heartbeat_interval == timedelta(seconds=15)
    assert settings.name == "worker-7"
    assert settings.claim_wait == timedelta(0)
    assert build_worker(settings, FakeJobnik()).long_polls is False


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("WORKER_CONCURRENCY", "0"),
        ("WORKER_STAGE_TYPE", " , "),
        ("WORKER_POLL_MAX_SECONDS", "0"),
        ("WORKER_LEASE_SECONDS", "0.5"),
        ("WORKER_HEARTBEAT_SECONDS", "30"),  # not less than the default 30 s lease
        ("WORKER_NAME", ""),
        ("WORKER_CLAIM_WAIT_SECONDS", "61"),
        ("WORKER_METRICS_PORT", "0"),
        ("WORKER_LOG_FORMAT", "xml"),
    ],
)
def test_bad_values_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        WorkerSettings(_env_file=None)  # type: ignore[call-arg]


def test_rabbitmq_settings_reach_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKER_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")
    monkeypatch.setenv("WORKER_SAFETY_POLL_SECONDS", "12")
    worker = build_worker(WorkerSettings(_env_file=None), FakeJobnik())  # type: ignore[call-arg]
    assert worker.amqp_url == "amqp://guest:guest@127.0.0.1:5672/"
    assert worker.safety_poll == timedelta(seconds=12)


@pytest.mark.parametrize("name", ["WORKER_METRICS_PORT", "JOBNIK_WORKER_METRICS_PORT"])
def test_a_metrics_port_reaches_the_worker(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    for unset in ("WORKER_METRICS_PORT", "JOBNIK_WORKER_METRICS_PORT"):
        monkeypatch.delenv(unset, raising=False)
    assert WorkerSettings(_env_file=None).metrics_port is None  # type: ignore[call-arg]
    monkeypatch.setenv(name, "9100")
    worker = build_worker(WorkerSettings(_env_file=None), FakeJobnik())  # type: ignore[call-arg]
    assert worker.metrics_port == 9100


def test_the_log_format_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKER_LOG_FORMAT", raising=False)
    # Unset: configure_logging reads JOBNIK_LOG_FORMAT, else logs text.
    assert WorkerSettings(_env_file=None).log_format is None  # type: ignore[call-arg]
    monkeypatch.setenv("WORKER_LOG_FORMAT", "JSON")
    assert WorkerSettings(_env_file=None).log_format == "json"  # type: ignore[call-arg]


TOKEN = "jnk_" + "t0ken-Of_the-worker" * 2 + "abcde"


@pytest.mark.parametrize(
    ("worker_token", "jobnik_token", "expected"),
    [
        (None, None, None),
        (TOKEN, None, TOKEN),
        (None, TOKEN, TOKEN),  # the SDK's own variable serves too
        (TOKEN, "jnk_other", TOKEN),  # WORKER_TOKEN first
        ("", None, None),  # empty is unset
    ],
)
def test_the_token_is_read(
    monkeypatch: pytest.MonkeyPatch,
    worker_token: str | None,
    jobnik_token: str | None,
    expected: str | None,
) -> None:
    for name, value in (("WORKER_TOKEN", worker_token), ("JOBNIK_TOKEN", jobnik_token)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    settings = WorkerSettings(_env_file=None)  # type: ignore[call-arg]
    token = settings.token.get_secret_value() if settings.token is not None else None
    assert token == expected
    assert TOKEN not in repr(settings)
    assert TOKEN not in str(settings.model_dump())


async def test_the_token_goes_out_with_every_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOBNIK_TOKEN", raising=False)
    monkeypatch.setenv("WORKER_TOKEN", TOKEN)
    sent: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("Authorization"))
        return httpx.Response(200, json={"items": [], "total": 0})

    def on_mock(url: str, **options: Any) -> JobnikClient:
        return JobnikClient(url, transport=httpx.MockTransport(answer), **options)

    monkeypatch.setattr("tile_render_worker.app.JobnikClient", on_mock)
    client = build_client(WorkerSettings(_env_file=None))  # type: ignore[call-arg]
    async with client:
        await client.list_jobs()
        assert TOKEN not in repr(client)
    assert sent == [f"Bearer {TOKEN}"]
