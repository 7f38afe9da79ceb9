"""The worker's health file (`Worker(health_file=...)`) and its check
(`python -m jobnik_sdk.health`): fresh while the worker runs, gone once it stops, and a
stuck event loop lets it go stale."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from jobnik_sdk import NewStage, NewTask, TaskContext, Worker
from jobnik_sdk.health import main as check
from jobnik_sdk.testing import FakeJobnik

from ..support.api import unique

pytestmark = pytest.mark.unit


@asynccontextmanager
async def worker_with_a_task_run(health: Path) -> AsyncIterator[None]:
    """A Worker with `health_file=health`, running, once it has run a task."""
    fake, kind = FakeJobnik(), unique("health")
    ran = asyncio.Event()

    async def handler(data: dict[str, object], ctx: TaskContext) -> None:
        ran.set()

    await fake.create_job("health", stages=[NewStage(type=kind, tasks=[NewTask()])])
    worker = Worker(
        fake, stage_types=kind, handler=handler, health_file=health, handle_signals=False
    )
    async with worker:
        await asyncio.wait_for(ran.wait(), 10)
        yield


async def test_the_file_is_fresh_while_the_worker_runs_and_gone_after(tmp_path: Path) -> None:
    health = tmp_path / "alive"
    async with worker_with_a_task_run(health):
        assert health.exists()
        assert check([str(health)]) == 0
    assert not health.exists()
    assert check([str(health)]) == 1


def test_a_stale_file_is_unhealthy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    health = tmp_path / "alive"
    health.touch()
    old = time.time() - 60
    os.utime(health, (old, old))
    assert check([str(health)]) == 1
    assert "last touched 60 s ago" in capsys.readouterr().out
    assert check([str(health), "--max-age", "120"]) == 0


def test_the_check_runs_as_a_module(tmp_path: Path) -> None:
    # As a Dockerfile's HEALTHCHECK runs it.
    done = subprocess.run(
        [sys.executable, "-m", "jobnik_sdk.health", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "does not exist" in done.stdout


async def test_a_file_it_cannot_write_is_logged_and_the_worker_runs_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    health = tmp_path / "missing-folder" / "alive"  # its folder does not exist
    async with worker_with_a_task_run(health):
        pass
    assert [r.message for r in caplog.records if "health file" in r.message] == [
        f"cannot write the health file {health} ([Errno 2] No such file or directory: "
        f"'{health}'): health checks fail"
    ]
