"""`tile-render-worker` (or `python -m tile_render_worker`): run the worker until SIGTERM
or SIGINT, then exit 0 once every claimed task has been reported."""

from __future__ import annotations

import asyncio
import logging

from jobnik_sdk import AuthenticationError, PermissionDeniedError, TaskLogFilter, tune_gc
from jobnik_sdk.logs import configure_logging

from .app import HandlerNotFoundError, build_client, build_worker, load_handler
from .settings import WorkerSettings


async def _run(settings: WorkerSettings) -> None:
    async with build_client(settings) as client:
        await build_worker(settings, client).run()


def main() -> None:
    settings = WorkerSettings()
    # Text, or with WORKER_LOG_FORMAT (or JOBNIK_LOG_FORMAT) json, one JSON object per
    # line: a handler's lines, whichever logger they come from, carry its task's ids.
    try:
        configure_logging(settings.log_level, settings.log_format)
    except ValueError as exc:  # a level or JOBNIK_LOG_FORMAT it does not know
        raise SystemExit(f"error: {exc}") from None
    # Records logged while a handler runs carry its task_id, job_id and stage_type
    # (empty strings elsewhere), for a text format of your own to use.
    for handler in logging.root.handlers:
        handler.addFilter(TaskLogFilter())
    # httpx logs every request at INFO, which for an idle worker is every poll.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.root.level))
    try:
        # Before anything connects: a handler that is not there is a setting to fix.
        load_handler(settings.handler)
    except HandlerNotFoundError as exc:
        raise SystemExit(f"error: {exc}") from None
    # The worker makes and drops thousands of objects a claim: collected less often.
    tune_gc()
    try:
        asyncio.run(_run(settings))
    except (AuthenticationError, PermissionDeniedError):
        # The worker logged the refusal; a token to fix, not a crash to trace.
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
