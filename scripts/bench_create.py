"""Bulk creation: one request creating many tasks, end to end over HTTP.

Starts a real manager process (PostgreSQL in a fresh database, or SQLite in a temporary
file) and times, `--runs` times each:
  * POST /v1/jobs with one stage of `--tasks` tasks,
  * the same with an Idempotency-Key (the answer is also stored),
  * POST /v1/stages/{id}/tasks with `--tasks` tasks,
from sending the body to having read the whole answer (every created task). Besides the
wall time it prints the CPU time the request cost the manager process and, on
PostgreSQL, the server backends of the benchmark's database (both read from /proc, so
this runs on Linux with PostgreSQL on the same machine).

With --singles N it times instead N jobs of one task each, created one after another
(as work trickles in), without and with an Idempotency-Key: the wall time and the CPU
of one small create, the cost that sits between a new task and the worker it wakes.

    uv run python scripts/bench_create.py                      # PostgreSQL, 20,000 tasks
    uv run python scripts/bench_create.py --backend sqlite --tasks 5000
    uv run python scripts/bench_create.py --singles 2000 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg
import httpx

from jobnik_manager.db import migrate

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/jobnik_bench_create"


def _admin_dsn(url: str) -> tuple[str, str]:
    base, _, name = url.replace("postgresql+asyncpg://", "postgresql://").rpartition("/")
    return f"{base}/postgres", name


async def recreate(url: str) -> None:
    dsn, name = _admin_dsn(url)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def _backend_pids(url: str) -> list[int]:
    dsn, name = _admin_dsn(url)
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", name)
    finally:
        await conn.close()
    return [row["pid"] for row in rows]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuProbe:
    """CPU time spent by the manager and by the database's backends."""

    def __init__(self, manager_pid: int, url: str) -> None:
        self.manager_pid = manager_pid
        self.url = url if url.startswith("postgresql") else None

    def sample(self) -> tuple[float, float]:
        backends = asyncio.run(_backend_pids(self.url)) if self.url else []
        return cpu_seconds(self.manager_pid), sum(cpu_seconds(pid) for pid in backends)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def manager(url: str) -> Iterator[tuple[str, int]]:
    port = free_port()
    env = {
        **os.environ,
        "JOBNIK_DATABASE_URL": url,
        "JOBNIK_PORT": str(port),
        "JOBNIK_LOG_LEVEL": "warning",
    }
    proc = subprocess.Popen([sys.executable, "-m", "jobnik_manager.cli", "serve"], env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/readiness", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("manager did not start")
            time.sleep(0.1)
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


def tasks(n: int) -> list[dict[str, object]]:
    return [{"data": {"i": i}} for i in range(n)]


def timed(
    client: httpx.Client,
    probe: CpuProbe,
    what: str,
    n: int,
    url: str,
    body: bytes,
    headers: dict[str, str],
) -> None:
    manager_cpu, db_cpu = probe.sample()
    started = time.perf_counter()
    response = client.post(
        url, content=body, headers={"content-type": "application/json", **headers}
    )
    elapsed = time.perf_counter() - started
    manager_after, db_after = probe.sample()
    if response.status_code != 201:
        raise RuntimeError(f"{what}: {response.status_code} {response.text[:500]}")
    answer = response.json()
    created = answer if isinstance(answer, list) else answer["stages"][0]["tasks"]
    assert len(created) == n, what
    print(
        f"{what:<28} {n:>7} tasks {elapsed * 1000:7.0f} ms {n / elapsed:9,.0f} tasks/s"
        f"   CPU: manager {(manager_after - manager_cpu) * 1000:5.0f} ms,"
        f" database {(db_after - db_cpu) * 1000:5.0f} ms"
    )


def run(base: str, probe: CpuProbe, n: int, runs: int) -> None:
    job = {"name": "bulk", "data": {}, "stages": [{"type": "t", "data": {}, "tasks": tasks(n)}]}
    job_body = json.dumps(job).encode()
    tasks_body = json.dumps(tasks(n)).encode()
    with httpx.Client(base_url=base, timeout=600) as client:
        empty = {"name": "bulk", "data": {}, "stages": [{"type": "t", "data": {}}]}
        stage_id = client.post("/v1/jobs", json=empty).json()["stages"][0]["id"]
        for _ in range(runs):
            timed(client, probe, "POST /v1/jobs", n, "/v1/jobs", job_body, {})
        for _ in range(runs):
            key = {"Idempotency-Key": str(uuid.uuid4())}
            timed(client, probe, "POST /v1/jobs (key)", n, "/v1/jobs", job_body, key)
        for _ in range(runs):
            path = f"/v1/stages/{stage_id}/tasks"
            timed(client, probe, "POST /v1/stages/{id}/tasks", n, path, tasks_body, {})


def singles(base: str, probe: CpuProbe, n: int, runs: int) -> None:
    job = {"name": "one", "data": {}, "stages": [{"type": "t", "data": {}, "tasks": tasks(1)}]}
    body = json.dumps(job).encode()
    plain = {"content-type": "application/json"}
    with httpx.Client(base_url=base, timeout=60) as client:
        for keyed in [False, True] * runs:
            what = "one-task jobs (key)" if keyed else "one-task jobs"
            for _ in range(n // 10):  # warm: the statements prepared, the pools full
                client.post("/v1/jobs", content=body, headers=plain)
            manager_cpu, db_cpu = probe.sample()
            started = time.perf_counter()
            for _ in range(n):
                headers = {**plain, "Idempotency-Key": str(uuid.uuid4())} if keyed else plain
                response = client.post("/v1/jobs", content=body, headers=headers)
                if response.status_code != 201:
                    raise RuntimeError(f"{what}: {response.status_code} {response.text[:500]}")
            elapsed = time.perf_counter() - started
            manager_after, db_after = probe.sample()
            print(
                f"{what:<22} {n:>6} {elapsed / n * 1000:6.2f} ms each"
                f"   CPU per create: manager {(manager_after - manager_cpu) / n * 1000:5.2f} ms,"
                f" database {(db_after - db_cpu) / n * 1000:5.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--singles", type=int, default=0, help="time N one-task creates")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.backend == "postgres":
            url = PG
            asyncio.run(recreate(url))
        else:
            url = f"sqlite+aiosqlite:///{tmp}/bench.db"
        migrate.upgrade(url)
        with manager(url) as (base, pid):
            if args.singles:
                singles(base, CpuProbe(pid, url), args.singles, args.runs)
            else:
                run(base, CpuProbe(pid, url), args.tasks, args.runs)


if __name__ == "__main__":
    main()
