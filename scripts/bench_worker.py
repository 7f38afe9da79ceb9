"""The SDK Worker's own CPU per task, without PostgreSQL or the manager on the same cores.

A stand-in manager in a process of its own answers the Worker's calls over keep-alive
HTTP/1.1 with bodies shaped as the manager's (`POST /v1/tasks/claim` with its context,
`POST /v1/tasks/reports` with the settled tasks, `POST /v1/tasks/heartbeats`), built
from one task, stage and job, so it costs the Worker what a real drain does while
taking little CPU of its own. The Worker (concurrency 16, a no-op handler) drains N
tasks; the script prints the Worker process's CPU per task, and the calls it made.

`bench_drain.py` measures the whole path on a real manager; this isolates the part
a worker pays, which on a shared 2-core machine is otherwise lost in the noise.

    uv run python scripts/bench_worker.py --tasks 20000 --runs 3
    uv run py-spy record -o /tmp/worker.svg -- python scripts/bench_worker.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from typing import Any

import orjson

NOW = "2026-01-01T00:00:00.000000Z"
LATER = "2026-01-01T00:00:30.000000Z"
STAGE_ID = str(uuid.uuid4())
JOB_ID = str(uuid.uuid4())
TRACE = "00-0fc5ed67e552ebd61e9aa96e3564c84d-{span}-01"


def task(status: str) -> dict[str, Any]:
    """A task as the manager answers it, claimed by worker `w`."""
    return {
        "id": str(uuid.uuid4()),
        "stageId": STAGE_ID,
        "data": {},
        "userMetadata": {},
        "status": status,
        "attempts": 0,
        "maxAttempts": 1,
        "creationTime": NOW,
        "updateTime": NOW,
        "startTime": NOW,
        "traceparent": TRACE.format(span=uuid.uuid4().hex[:16]),
        "leaseId": str(uuid.uuid4()),
        "leaseExpiresAt": LATER,
        "worker": "w",
    }


STAGE = {
    "id": STAGE_ID,
    "jobId": JOB_ID,
    "type": "bench",
    "order": 1,
    "data": {},
    "userMetadata": {},
    "status": "IN_PROGRESS",
    "percentage": 0,
    "summary": {"pending": 0, "inProgress": 1, "total": 1},
    "startTime": NOW,
}
JOB = {
    "id": JOB_ID,
    "name": "bench",
    "data": {},
    "userMetadata": {},
    "priority": "MEDIUM",
    "status": "IN_PROGRESS",
    "percentage": 0,
    "creationTime": NOW,
    "updateTime": NOW,
    "startTime": NOW,
}


def response(body: bytes, status: bytes = b"200 OK") -> bytes:
    return (
        b"HTTP/1.1 "
        + status
        + b"\r\ncontent-type: application/json\r\ncontent-length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


async def serve(port: int, tasks: int) -> None:
    """The stand-in manager: hands out `tasks` tasks, then empty claims."""
    left = tasks
    settled = task("COMPLETED")

    def answer(path: bytes, body: Any) -> bytes:
        nonlocal left
        if path == b"/v1/tasks/claim":
            n = min(body["limit"], left)
            left -= n
            items = [task("IN_PROGRESS") for _ in range(n)]
            context = {"stages": [STAGE], "jobs": [JOB]} if n else {"stages": [], "jobs": []}
            return response(orjson.dumps({"items": items, **context}))
        if path == b"/v1/tasks/reports":
            items = [
                {"taskId": r["taskId"], "task": {**settled, "id": r["taskId"]}}
                for r in body["reports"]
            ]
            return response(orjson.dumps({"items": items}))
        if path == b"/v1/tasks/heartbeats":
            items = [
                {"taskId": b["taskId"], "leaseExpiresAt": LATER, "cancelRequested": False}
                for b in body["heartbeats"]
            ]
            return response(orjson.dumps({"items": items}))
        return response(b'{"message":"not here","code":"NOT_FOUND"}', b"404 Not Found")

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                _, path, _ = lines[0].split(b" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                body = orjson.loads(await reader.readexactly(length)) if length else None
                if path == b"/v1/tasks/claim" and not left and body.get("waitSeconds"):
                    await asyncio.sleep(1)  # a long poll finding nothing
                writer.write(answer(path, body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", port)
    print("ready", flush=True)
    await server.serve_forever()


async def drain(port: int, tasks: int, concurrency: int) -> dict[str, Any]:
    """Run the Worker until it has handled `tasks` tasks; its CPU and calls."""
    from bench_noop import Noop

    from jobnik_sdk import JobnikClient, Worker

    calls: Counter[str] = Counter()

    class Counted(JobnikClient):
        async def claim_with_context(self, *args: Any, **options: Any) -> Any:
            claimed = await super().claim_with_context(*args, **options)
            calls["claims"] += 1
            calls["claimed"] += len(claimed.items)
            return claimed

        async def report_many(self, reports: Any, **options: Any) -> Any:
            calls["report batches"] += 1
            calls["reports"] += len(reports)
            return await super().report_many(reports, **options)

    noop = Noop(tasks)

    client = Counted(f"http://127.0.0.1:{port}")
    worker: Worker[dict[str, Any]] = Worker(
        client,
        stage_types="bench",
        handler=noop.handle,
        concurrency=concurrency,
        handle_signals=False,
    )
    cpu, wall = time.process_time(), time.perf_counter()
    async with worker:
        await noop.done.wait()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    await client.aclose()
    return {"cpu_ms": cpu * 1000 / tasks, "rate": tasks / wall, "calls": dict(calls)}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.tasks))
        return
    figures = []
    for run in range(1, args.runs + 1):
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port), "--tasks", str(args.tasks)],
            stdout=subprocess.PIPE,
        )
        try:
            assert server.stdout is not None
            if server.stdout.readline().strip() != b"ready":
                sys.exit("the stand-in manager did not start")
            result = asyncio.run(drain(port, args.tasks, args.concurrency))
        finally:
            server.terminate()
            server.wait()
        figures.append(result["cpu_ms"])
        print(
            f"[run {run}] worker CPU {result['cpu_ms']:.3f} ms/task, "
            f"{result['rate']:,.0f} tasks/s; calls {result['calls']}",
            flush=True,
        )
    print(f"worker CPU per task, median of {args.runs}: {statistics.median(figures):.3f} ms")


if __name__ == "__main__":
    main()
