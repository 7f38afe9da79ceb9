"""A file a running Worker keeps fresh, for a container's health check to read
(`python -m jobnik_sdk.health FILE`): fresh means the process is up and its event loop
is not stuck, e.g. behind a handler that blocks it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path

# How often the file is touched; a check allows several misses (HEALTH_MAX_AGE).
HEALTH_INTERVAL = 5.0
HEALTH_MAX_AGE = 30.0


async def keep_fresh(
    path: Path, every: float = HEALTH_INTERVAL, log: logging.Logger | None = None
) -> None:
    """Touch `path` every `every` seconds until cancelled, then remove it: a stopped
    worker is not healthy. A file it cannot write (a read-only file system, say) is
    logged once and tried again; the worker itself runs on."""
    log = log or logging.getLogger("jobnik_sdk.worker")
    failing = False
    # On the event loop itself, not in a thread: a loop that cannot run this is what the
    # check is for (a touch is one quick system call).
    try:
        while True:
            try:
                path.touch()  # noqa: ASYNC240
                failing = False
            except OSError as exc:
                if not failing:
                    log.warning(
                        "cannot write the health file %s (%s): health checks fail", path, exc
                    )
                failing = True
            await asyncio.sleep(every)
    finally:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)  # noqa: ASYNC240


def age(path: str | os.PathLike[str]) -> float | None:
    """Seconds since the file was last touched; None if there is none."""
    import time

    try:
        return time.time() - os.stat(path).st_mtime
    except FileNotFoundError:
        return None
