"""Worker processes started from worker-boilerplate (`python -m tile_render_worker`)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..support.processes import module_process


@contextmanager
def worker_process(
    manager_url: str, stage_types: str, log: Path, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    """Start a worker running tests.sdk.e2e_handlers:handle; SIGTERM it on exit."""
    settings = {
        "WORKER_MANAGER_URL": manager_url,
        "WORKER_STAGE_TYPE": stage_types,
        "WORKER_HANDLER": "tests.sdk.e2e_handlers:handle",
        "WORKER_POLL_INITIAL_SECONDS": "0.05",
        "WORKER_POLL_MAX_SECONDS": "0.2",
        "WORKER_LOG_LEVEL": "INFO",
        **env,
    }
    with module_process("tile_render_worker", log, **settings) as proc:
        yield proc
