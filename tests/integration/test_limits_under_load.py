"""A real manager process on PostgreSQL: creating 100,000 tasks in one call leaves it
answering other requests, and neither that create nor hostile bodies (larger than the
limit, holding too many values or tasks, invalid by the thousand) make it grow past
400 MB."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Job, Task

from ..support.processes import manager_process

TASKS = 100_000
P99_LIMIT = 0.25  # seconds, for /liveness while the tasks are created
RSS_LIMIT = 400 * 1024 * 1024
PROBE_EVERY = 0.02
JSON = {"content-type": "application/json"}


def manager_pid() -> int:
    """The manager process this test started (a child of this one)."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == me and b"jobnik_manager.cli" in cmdline:
            return int(entry.name)
    raise AssertionError("the manager process was not found")


def memory(pid: int, field: str = "VmHWM") -> int:
    """Bytes of the process's resident memory: its peak so far (VmHWM), or now (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for process {pid}")


@pytest.fixture
def manager(pg_db: Database, postgres_url: str, tmp_path: Path) -> Iterator[tuple[str, int]]:
    with manager_process(postgres_url, log=tmp_path / "manager.log") as base_url:
        yield base_url, manager_pid()


async def probe(base_url: str, latencies: list[float], stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        while not stop.is_set():
            started = time.perf_counter()
            response = await client.get("/liveness")
            latencies.append(time.perf_counter() - started)
            assert response.status_code == 200
            await asyncio.sleep(PROBE_EVERY)


def tasks(n: int) -> list[dict[str, object]]:
    return [{"data": {"i": i, "tile": f"t-{i}"}} for i in range(n)]


@pytest.mark.slow
async def test_creating_100k_tasks_leaves_the_manager_answering(
    manager: tuple[str, int], pg_db: Database
) -> None:
    base_url, pid = manager
    job_body = json.dumps(
        {"name": "bulk", "data": {}, "stages": [{"type": "t", "data": {}, "tasks": tasks(TASKS)}]}
    ).encode()
    tasks_body = json.dumps(tasks(TASKS)).encode()
    latencies: list[float] = []
    stop = asyncio.Event()
    prober = asyncio.create_task(probe(base_url, latencies, stop))
    async with httpx.AsyncClient(base_url=base_url, timeout=300) as client:
        await asyncio.sleep(0.2)
        created = await client.post("/v1/jobs", content=job_body, headers=JSON)
        assert created.status_code == 201, created.text[:500]
        stage_id = created.json()["stages"][0]["id"]
        added = await client.post(f"/v1/stages/{stage_id}/tasks", content=tasks_body, headers=JSON)
        assert added.status_code == 201, added.text[:500]
        await asyncio.sleep(0.2)
    stop.set()
    await prober

    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99)]
    shown = f"{len(latencies)} probes, p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
    shown += f"p99 {p99 * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms"
    assert len(latencies) >= 50, shown
    assert p99 < P99_LIMIT, shown
    peak = memory(pid)
    print(f"{shown}; peak RSS {peak / 2**20:.0f} MB")
    assert peak < RSS_LIMIT, f"peak RSS {peak / 2**20:.0f} MB"
    async with pg_db.sessions() as s:
        assert (await s.execute(select(func.count()).select_from(Task))).scalar_one() == 2 * TASKS


async def _streamed(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 64 * 1024):
        yield data[start : start + 64 * 1024]


@pytest.mark.slow
async def test_hostile_bodies_leave_the_manager_small(
    manager: tuple[str, int], pg_db: Database
) -> None:
    base_url, pid = manager
    twenty_mb_of_tasks = b"[" + b'{"x": 1},' * (20 * 1024 * 1024 // 9) + b'{"x": 1}]'
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:
        job = await client.post(
            "/v1/jobs", json={"name": "ok-name", "data": {}, "stages": [{"type": "t", "data": {}}]}
        )
        stage_tasks = f"/v1/stages/{job.json()['stages'][0]['id']}/tasks"

        async def refused(
            status: int, code: str, content: bytes | AsyncIterator[bytes]
        ) -> httpx.Response:
            response = await client.post(stage_tasks, content=content, headers=JSON)
            assert response.status_code == status, response.text[:300]
            assert response.json()["code"] == code
            assert (await client.get("/liveness")).status_code == 200
            return response

        before = memory(pid, "VmRSS")
        # 20 MB of invalid tasks: refused by its Content-Length, never read into memory.
        await refused(413, "PAYLOAD_TOO_LARGE", twenty_mb_of_tasks)
        assert memory(pid, "VmRSS") - before < 8 * 1024 * 1024
        # The same streamed, with no Content-Length: cut off at the limit.
        await refused(413, "PAYLOAD_TOO_LARGE", _streamed(twenty_mb_of_tasks))
        # 15 MB of small values: refused before it is parsed.
        await refused(413, "PAYLOAD_TOO_LARGE", b"[" + b"[]," * 5_000_000 + b"1]")
        # Too many tasks: refused before one is validated.
        await refused(413, "PAYLOAD_TOO_LARGE", b"[" + b"{}," * 150_000 + b"{}]")
        # 100,000 invalid tasks: the first slice's errors, not a hundred thousand.
        invalid = await refused(
            400, "VALIDATION_ERROR", b"[" + b'{"x": 1},' * 99_999 + b'{"x": 1}]'
        )
        assert "and" in invalid.json()["message"]
        # Nesting, and text that cannot be stored, as large bodies.
        await refused(400, "VALIDATION_ERROR", b"[" * 1_000_000 + b"]" * 1_000_000)
        nul = json.dumps([{"data": {"i": i}} for i in range(99_999)] + [{"data": {"k": "\0"}}])
        message = (await refused(400, "VALIDATION_ERROR", nul.encode())).json()["message"]
        assert message.startswith("99999.data.k:"), message

    peak = memory(pid)
    print(f"peak RSS {peak / 2**20:.0f} MB")
    assert peak < RSS_LIMIT, f"peak RSS {peak / 2**20:.0f} MB"
    async with pg_db.sessions() as s:
        assert (await s.execute(select(func.count()).select_from(Job))).scalar_one() == 1
        assert (await s.execute(select(func.count()).select_from(Task))).scalar_one() == 0
