"""A worker process that counts every answer it gets from the manager, by HTTP status
(and transport errors by class), and writes the counts to `COUNTING_OUT` as JSON when it
stops. Its handler sleeps `data["seconds"]`."""

from __future__ import annotations

import asyncio
import collections
import json
import os
from pathlib import Path
from typing import Any

import httpx

from jobnik_sdk import JobnikClient, TaskContext

from ..support.worker_main import run_worker


class CountingTransport(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await super().handle_async_request(request)
        except httpx.TransportError as exc:
            self.counts[type(exc).__name__] += 1
            raise
        self.counts[str(response.status_code)] += 1
        return response


async def handle(data: dict[str, Any], ctx: TaskContext) -> None:
    await asyncio.sleep(float(data.get("seconds", 0)))


if __name__ == "__main__":
    counting = CountingTransport()
    try:
        run_worker(
            lambda: JobnikClient(os.environ["COUNTING_MANAGER"], transport=counting),
            stage_types=os.environ["COUNTING_STAGE_TYPE"],
            handler=handle,
            concurrency=int(os.environ.get("COUNTING_CONCURRENCY", "8")),
            poll_ms=(50, 500),
        )
    finally:
        Path(os.environ["COUNTING_OUT"]).write_text(json.dumps(dict(counting.counts)))
