"""Worker processes started from worker-boilerplate (`python -m worker`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def worker_process(
    manager_url: str, stage_types: str, log: Path, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """Start a worker running tests.sdk.e2e_handlers:handle; SIGTERM it on exit."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "WORKER_MANAGER_URL": manager_url,
        "WORKER_STAGE_TYPE": stage_types,
        "WORKER_HANDLER": "tests.sdk.e2e_handlers:handle",
        "WORKER_POLL_INITIAL_SECONDS": "0.05",
        "WORKER_POLL_MAX_SECONDS": "0.2",
        "WORKER_LOG_LEVEL": "INFO",
        **env,
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "worker"],
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
