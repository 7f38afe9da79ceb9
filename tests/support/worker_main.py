"""The body of the worker processes tests start (`python -m tests.<folder>.<script>`):
one SDK Worker, run until SIGTERM, on a client the script makes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from jobnik_sdk import Backoff, JobnikClient, Worker


def run_worker(
    connect: Callable[[], JobnikClient],
    *,
    poll_ms: tuple[float, float],
    log_level: int = logging.INFO,
    **options: Any,
) -> None:
    """Log at `log_level` and run a Worker (`options` as Worker takes them, polling with
    a backoff from `poll_ms[0]` to `poll_ms[1]` milliseconds) on the client `connect`
    makes in the worker's event loop; the client is closed when the worker stops."""
    logging.basicConfig(level=log_level)
    initial, maximum = (timedelta(milliseconds=ms) for ms in poll_ms)
    asyncio.run(_run(connect, poll_backoff=Backoff(initial=initial, maximum=maximum), **options))


async def _run(connect: Callable[[], JobnikClient], **options: Any) -> None:
    client = connect()
    try:
        await Worker(client, **options).run()
    finally:
        await client.aclose()
