"""`tile-render-worker` (or `python -m tile_render_worker`): run the worker until SIGTERM
or SIGINT, then exit 0 once every claimed task has been reported."""

from __future__ import annotations

import asyncio
import logging

from jobnik_sdk import TaskLogFilter

from .app import HandlerNotFoundError, build_client, build_worker, load_handler
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
    # Records logged while a handler runs carry its task_id, job_id and stage_type,
    # whichever logger they come from (empty strings elsewhere), for the format to use.
    for handler in logging.root.handlers:
        handler.addFilter(TaskLogFilter())
    # httpx logs every request at INFO, which for an idle worker is every poll.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.root.level))
    try:
        # Before anything connects: a handler that is not there is a setting to fix.
        load_handler(settings.handler)
    except HandlerNotFoundError as exc:
        raise SystemExit(f"error: {exc}") from None
    asyncio.run(_run(settings))


if __name__ == "__main__":
    main()
