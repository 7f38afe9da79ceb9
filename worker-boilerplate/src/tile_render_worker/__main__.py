"""`python -m worker`: run the worker until SIGTERM or SIGINT, then exit 0 once every
claimed task has been reported."""

from __future__ import annotations

import asyncio
import logging

from .app import build_client, build_worker
from .settings import WorkerSettings


async def _run(settings: WorkerSettings) -> None:
    async with build_client(settings) as client:
        await build_worker(settings, client).run()


def main() -> None:
    settings = WorkerSettings()
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # httpx logs every request at INFO, which for an idle worker is every poll.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.root.level))
    asyncio.run(_run(settings))


if __name__ == "__main__":
    main()
