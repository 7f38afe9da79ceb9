"""A worker process for the chaos test: SDK Worker with a 2 s lease, requests spread
round-robin over the manager replicas given in CHAOS_MANAGERS (comma-separated)."""

from __future__ import annotations

import asyncio
import logging
import os
import random
from datetime import timedelta
from typing import Any

from jobnik_sdk import Backoff, JobnikClient, TaskContext, Worker

from .round_robin import RoundRobinTransport


async def handle(data: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    # Long enough that SIGKILLs land mid-task, short enough for 2,000 tasks.
    await asyncio.sleep(random.uniform(0.01, 0.08))
    return {"seen": data["i"]}


async def main() -> None:
    managers = os.environ["CHAOS_MANAGERS"].split(",")
    client = JobnikClient(managers[0], transport=RoundRobinTransport(managers))
    worker = Worker(
        client,
        stage_types=os.environ["CHAOS_STAGE_TYPES"].split(","),
        handler=handle,
        concurrency=4,
        lease=timedelta(seconds=2),
        heartbeat_interval=timedelta(milliseconds=500),
        poll_backoff=Backoff(
            initial=timedelta(milliseconds=20), maximum=timedelta(milliseconds=200)
        ),
        name=f"chaos-{os.getpid()}",
    )
    try:
        await worker.run()
    finally:
        await client.aclose()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(main())
