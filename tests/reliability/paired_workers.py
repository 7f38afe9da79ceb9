"""A process running two Workers at once (`asyncio.gather`) on one client, one per
stage type of `MARKER_STAGE_TYPES`, each with marker_worker's handler, as an
application that serves two kinds of work does. It stops only if a signal reaches both."""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import timedelta

from jobnik_sdk import Backoff, JobnikClient, Worker

from .marker_worker import handle


def seconds(variable: str, default: float) -> timedelta:
    return timedelta(seconds=float(os.environ.get(variable, default)))


async def main() -> None:
    async with JobnikClient(os.environ["MARKER_MANAGER"]) as client:
        workers = [
            Worker(
                client,
                stage_types=kind,
                handler=handle,
                name=f"{os.environ.get('MARKER_NAME', 'paired')}-{kind}",
                poll_backoff=Backoff(
                    initial=timedelta(milliseconds=50), maximum=timedelta(milliseconds=200)
                ),
                lease=seconds("MARKER_LEASE", 2),
                heartbeat_interval=seconds("MARKER_HEARTBEAT", 0.5),
                shutdown_grace=seconds("MARKER_GRACE", 30),
            )
            for kind in os.environ["MARKER_STAGE_TYPES"].split(",")
        ]
        await asyncio.gather(*(worker.run() for worker in workers))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    asyncio.run(main())
