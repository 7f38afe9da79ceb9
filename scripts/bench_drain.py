"""Drain throughput: tasks created and run through a real manager, against a database ceiling.

One run measures, on a database of its own (`jobnik_drain_<pid>`, dropped at the end), or
on the one given with --url (dropped and recreated first!, and left for inspection):

  * ceiling: pgbench on a plain queue table in the same PostgreSQL database, 8 clients,
    each cycle claiming one row with `FOR UPDATE SKIP LOCKED` (one transaction) and then
    completing it (another). Every throughput below is also given as a ratio to it, so
    figures from machines (or days) of different speed compare;
  * create: one `POST /v1/jobs` holding a stage of N no-op tasks (sdkcreate: the same
    through the SDK); each create is measured on the second of its kind: the manager's
    first large request grows its memory, which a manager that has served a while has
    done already;
  * sdk: the SDK's `Worker` (concurrency 16, a no-op handler) in a process of its own;
  * v1: 16 HTTP loops of `PATCH /v1/stages/{type}/tasks/dequeue` + `PUT .../status`,
    each over a keep-alive connection of its own; the client is scripts/bench_http.py, a
    bare HTTP/1.1 writer with httptools parsing the answers, because httpx cost as much
    CPU per request as the manager and competed with it for the machine;
  * v1read: the same loops as a reference v1 worker runs them, reading the task's
    stage and its job before each task (dequeue, GET stage, GET job, PUT);
  * batch: 4 loops of `claim(limit=100)` + `report_many(with_tasks=False)` (`--report-tasks`:
    answered with each task), by hand with the SDK client;
  * ojspush: the same number of Open Job Spec jobs pushed to /ojs/v1/jobs/batch, 1,000 a
    call (each a job of its own: one stage of one task);
  * ojs: those jobs drained by 4 loops of an OJS worker's FETCH (`count` 100) and an ACK
    of each job fetched (the spec has no batch ACK), over 16 connections.

With --analyze, each drained job's tasks are ANALYZEd once created (PostgreSQL); without
it the drain runs on a stage the planner has no statistics for yet.

With --compare-controls the modes run on two databases side by side, in turn within every
run: one with nothing else, and one where 50 other stage types have work waiting, 10 of
them rate limited (and claimed by a Worker of their own as fast as allowed) and 5
paused; the drained type is neither. It shows what the claim's limit and pause checks
cost a type they do not concern.

With --compare-history N the sdk drain runs on two databases side by side, one empty
and one holding N finished tasks of the drained stage types, in turn within every run;
the median of the runs' rate ratios must stay within --max-history-ratio (1.2).

A drain's rate is N over the span from its first IN_PROGRESS event to its last COMPLETED
event, both stamped by the manager. Every drain is checked afterwards: every task of its
job COMPLETED, with exactly one COMPLETED event each, and the invariants of
tests/support/invariants.py; any failure ends the run with exit status 1. Per-task costs
come with the rates: the manager's and the worker's CPU time, the WAL the server wrote
(its insert position before and after: unlike the CPU times, the same on a slow machine
as on a fast one), PostgreSQL commits (from `pg_stat_database`) and statements (when
`pg_stat_statements` is preloaded).

    uv run python scripts/bench_drain.py                          # 20,000 tasks, 1 run
    uv run python scripts/bench_drain.py --tasks 5000 --runs 3 --modes sdk,batch
    uv run python scripts/bench_drain.py --compare-history 1000000   # exit 1 above 1.2x
    uv run python scripts/bench_drain.py --compare-metrics --runs 3 --modes sdk,batch
    uv run python scripts/bench_drain.py --compare-controls --runs 3 --modes sdk,batch
    uv run python scripts/bench_drain.py --url sqlite+aiosqlite:////tmp/bench_drain.db
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx
import orjson
from bench_http import Connection
from bench_noop import Noop
from bench_rows import TRACEPARENT, add_job_and_stage
from sqlalchemy import Uuid, bindparam, func, select, text
from sqlalchemy.engine import make_url

from jobnik_manager.db import migrate
from jobnik_manager.db.engine import Database
from jobnik_manager.db.models import Event, Job, Task
from jobnik_manager.db.types import UtcDateTime
from jobnik_sdk import JobnikClient, NewStage, NewTask, TaskReport, Worker, tune_gc

# Databases of their own per run (the process id in the name), so runs never collide.
SERVER = "postgresql+asyncpg://postgres@127.0.0.1:5432"
DEFAULT_URL = f"{SERVER}/jobnik_drain_{os.getpid()}"
# Where the ceiling is measured when the drains run on SQLite.
CEILING_URL_FOR_SQLITE = f"{SERVER}/jobnik_drain_ceiling_{os.getpid()}"
MODES = ("create", "sdkcreate", "sdk", "v1", "v1read", "batch", "ojspush", "ojs")
CHILD = "--drain-child"  # hidden sub-command: one drain in a process of its own
SELF = Path(__file__).resolve()
REPO = SELF.parents[1]
FINAL_JOB_STATUSES = ("COMPLETED", "FAILED", "ABORTED")
T = TypeVar("T")


class BenchFailure(Exception):
    """A drain did not end as it must: wrong statuses, events or invariants."""


class Interrupted(BenchFailure):
    """A process of the run was stopped under a measurement (by someone else, maybe)."""


class ManagerGone(Interrupted):
    """The manager process ended under a measurement."""


# ---- databases ----------------------------------------------------------------------


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path:
    return Path(url.split("///", 1)[1])


def libpq_url(url: str) -> str:
    """postgresql+asyncpg://... as asyncpg and libpq take it."""
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


def db_name(url: str) -> str:
    name: str | None = make_url(url).database
    if not name:
        raise SystemExit(f"{url}: no database name")
    return name


async def recreate(url: str) -> None:
    """Drop and create the database (PostgreSQL), or delete the file (SQLite)."""
    if is_sqlite(url):
        for suffix in ("", "-wal", "-shm"):
            path = sqlite_path(url)
            await asyncio.to_thread(path.with_name(path.name + suffix).unlink, missing_ok=True)
        return
    base, _, name = libpq_url(url).rpartition("/")
    conn = await asyncpg.connect(f"{base}/postgres", timeout=10)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()


async def drop(url: str) -> None:
    base, _, name = libpq_url(url).rpartition("/")
    conn = await asyncpg.connect(f"{base}/postgres", timeout=10)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def pg_reachable(url: str) -> bool:
    base = libpq_url(url).rpartition("/")[0]
    try:
        conn = await asyncpg.connect(f"{base}/postgres", timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    await conn.close()
    return True


@contextlib.asynccontextmanager
async def pg(url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(libpq_url(url), timeout=10)
    try:
        yield conn
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def database(url: str) -> AsyncIterator[Database]:
    db = Database(url)
    try:
        yield db
    finally:
        await db.dispose()


# ---- the ceiling --------------------------------------------------------------------

# Two transactions per cycle (pgbench runs each statement outside BEGIN on its own):
# claim the oldest unclaimed row, skipping rows other clients hold, then complete it.
CEILING_SCRIPT = """\
UPDATE bench_queue SET status = 'running', claimed = true, claimed_at = now()
 WHERE id = (SELECT id FROM bench_queue WHERE NOT claimed ORDER BY id
             LIMIT 1 FOR UPDATE SKIP LOCKED)
 RETURNING id AS claimed_id \\gset
UPDATE bench_queue SET status = 'done', done_at = now() WHERE id = :claimed_id;
"""


@dataclass
class Ceiling:
    cycles_per_s: float
    clients: int
    seconds: int
    cycles: int
    latency_ms: float | None
    database: str


async def fill_queue(url: str, rows: int) -> None:
    async with pg(url) as conn:
        await conn.execute(
            """
            CREATE TABLE IF NOT EXISTS bench_queue (
                id bigserial PRIMARY KEY,
                status text NOT NULL,
                claimed boolean NOT NULL DEFAULT false,
                payload json NOT NULL DEFAULT '{}',
                claimed_at timestamptz,
                done_at timestamptz
            );
            CREATE INDEX IF NOT EXISTS bench_queue_unclaimed ON bench_queue (id)
                WHERE NOT claimed;
            TRUNCATE bench_queue RESTART IDENTITY;
            """
        )
        await conn.execute(
            "INSERT INTO bench_queue (status) SELECT 'pending' FROM generate_series(1, $1)", rows
        )
        await conn.execute("VACUUM ANALYZE bench_queue")
        # The fill's dirty pages are written now, not by a checkpoint during the run.
        await conn.execute("CHECKPOINT")


async def measure_ceiling(url: str, *, clients: int, seconds: int, rows: int) -> Ceiling:
    """pgbench cycles/s of claim-one-row (SKIP LOCKED) + complete-it on a fresh queue."""
    await fill_queue(url, rows)
    u = make_url(url)
    env = {**os.environ}
    if u.password:
        env["PGPASSWORD"] = u.password
    with tempfile.NamedTemporaryFile("w", suffix=".sql", prefix="bench_drain_") as script:
        script.write(CEILING_SCRIPT)
        script.flush()
        cmd = [
            "pgbench",
            "-n",
            "-c",
            str(clients),
            "-j",
            str(min(2, clients)),
            "-T",
            str(seconds),
            "-f",
            script.name,
            "-h",
            u.host or "127.0.0.1",
            "-p",
            str(u.port or 5432),
            "-U",
            u.username or "postgres",
            db_name(url),
        ]
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        out_b, err_b = await proc.communicate()
    out, err = out_b.decode(), err_b.decode()
    tps = re.search(r"^tps = ([\d.]+)", out, re.MULTILINE)
    if proc.returncode != 0 or tps is None or "aborted" in out.lower():
        raise RuntimeError(f"pgbench failed ({proc.returncode}):\n{out}\n{err}")
    async with pg(url) as conn:
        left = await conn.fetchval("SELECT count(*) FROM bench_queue WHERE NOT claimed")
    if not left:
        raise RuntimeError(f"the ceiling ran out of rows; raise --ceiling-rows above {rows:,}")
    processed = re.search(r"number of transactions actually processed: (\d+)", out)
    latency = re.search(r"latency average = ([\d.]+) ms", out)
    return Ceiling(
        cycles_per_s=float(tps.group(1)),
        clients=clients,
        seconds=seconds,
        cycles=int(processed.group(1)) if processed else 0,
        latency_ms=float(latency.group(1)) if latency else None,
        database=db_name(url),
    )


# ---- the manager --------------------------------------------------------------------


class Manager:
    """One real manager process (`jobnik_manager.cli serve`) on the benchmark database."""

    def __init__(
        self, url: str, port: int, settings: dict[str, str] | None = None, processes: int = 1
    ) -> None:
        self.url = url
        self.base = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBNIK_")}
        env |= {
            "JOBNIK_DATABASE_URL": url,
            "JOBNIK_PORT": str(port),
            "JOBNIK_LOG_LEVEL": "warning",
            "JOBNIK_AUTO_MIGRATE": "false",
            **(settings or {}),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jobnik_manager.cli", "serve", "--workers", str(processes)],
            env=env,
            cwd=REPO,
        )

    async def ready(self) -> None:
        async with httpx.AsyncClient(base_url=self.base, timeout=1) as http:
            for _ in range(300):
                if self.proc.poll() is not None:
                    raise ManagerGone(f"the manager exited with status {self.proc.returncode}")
                with contextlib.suppress(httpx.TransportError):
                    if (await http.get("/readiness")).status_code == 200:
                        return
                await asyncio.sleep(0.1)
        raise RuntimeError("the manager did not become ready within 30 s")

    def cpu_seconds(self) -> float:
        """The CPU of the manager's processes: the one started, and those it serves from
        with --workers (its children, and theirs)."""
        return sum(process_cpu_seconds(pid) for pid in process_tree(self.proc.pid))

    @property
    def gone(self) -> bool:
        return self.proc.poll() is not None

    async def watch(self, work: Awaitable[T]) -> T:
        """`work`'s result, or BenchFailure as soon as the manager process is gone."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=0.5)
                if done:
                    return task.result()
                if self.proc.poll() is not None:
                    raise ManagerGone(f"the manager exited with status {self.proc.returncode}")
        finally:
            task.cancel()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.asynccontextmanager
async def served(
    url: str, settings: dict[str, str] | None = None, *, keep: bool = False
) -> AsyncIterator[Manager]:
    """A manager process, ready, on `url` recreated and migrated; the database dropped
    afterwards unless `keep`."""
    await prepare(url)
    manager = Manager(url, free_port(), settings)
    try:
        await manager.ready()
        yield manager
    finally:
        manager.stop()
        if not keep:
            await drop(url)


async def wal_written(url: str) -> int:
    """Bytes of WAL the server has written so far (its insert position): what a drain
    asks PostgreSQL to make durable, the same on a slow machine as on a fast one."""
    async with pg(url) as conn:
        return int(await conn.fetchval("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"))


async def backends_cpu(url: str) -> float:
    """CPU seconds so far of the PostgreSQL backends serving the database of `url`."""
    base, _, name = libpq_url(url).rpartition("/")
    conn = await asyncpg.connect(f"{base}/postgres")
    try:
        rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", name)
    finally:
        await conn.close()
    total = 0.0
    for row in rows:
        with contextlib.suppress(FileNotFoundError):
            total += process_cpu_seconds(row["pid"])
    return total


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc/<pid>/stat."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """`pid` and its descendants still running."""
    tree, i = [pid], 0
    while i < len(tree):
        with contextlib.suppress(FileNotFoundError):
            for task in Path(f"/proc/{tree[i]}/task").iterdir():
                children = (task / "children").read_text().split()
                tree.extend(int(child) for child in children)
        i += 1
    return tree


# ---- per-task cost counters ---------------------------------------------------------


@dataclass
class Counters:
    commits: int
    statements: int | None


async def enable_statement_stats(url: str) -> bool:
    """pg_stat_statements, when the server preloads it (else False, silently)."""
    try:
        async with pg(url) as conn:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            await conn.fetchval("SELECT count(*) FROM pg_stat_statements")
    except asyncpg.PostgresError:
        return False
    return True


async def read_counters(url: str, statements: bool) -> Counters:
    async with pg(url) as conn:
        commits = await conn.fetchval(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        )
        calls = None
        if statements:
            calls = await conn.fetchval(
                "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements"
                " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
    return Counters(int(commits), None if calls is None else int(calls))


# ---- jobs ---------------------------------------------------------------------------


async def create_job(base: str, stage_type: str, n: int) -> tuple[uuid.UUID, float]:
    """One POST /v1/jobs with a stage of `n` no-op tasks; its id and how long it took."""
    body = {
        "name": "bench-drain",
        "data": {},
        "stages": [{"type": stage_type, "data": {}, "tasks": [{"data": {}}] * n}],
    }
    payload = json.dumps(body).encode()
    async with httpx.AsyncClient(base_url=base, timeout=900) as http:
        started = time.perf_counter()
        response = await http.post(
            "/v1/jobs", content=payload, headers={"Content-Type": "application/json"}
        )
        elapsed = time.perf_counter() - started
    if response.status_code != 201:
        raise BenchFailure(f"creating a job of {n:,} tasks: {response.status_code} {response.text}")
    job = response.json()
    created = len(job["stages"][0]["tasks"])
    if created != n:
        raise BenchFailure(f"asked for {n:,} tasks, the answer holds {created:,}")
    return uuid.UUID(job["id"]), elapsed


async def sdk_create_job(base: str, stage_type: str, n: int) -> tuple[uuid.UUID, float]:
    """The same job made through the SDK, as a producer makes it: its tasks built, encoded
    and sent by the client, the answer (without the tasks) parsed into its models."""
    async with JobnikClient(base, timeout=timedelta(minutes=15)) as client:
        started = time.perf_counter()
        tasks = [NewTask(data={}) for _ in range(n)]
        job = await client.create_job(
            "bench-drain", stages=[NewStage(type=stage_type, tasks=tasks)], return_tasks=False
        )
        elapsed = time.perf_counter() - started
    if not job.stages or job.stages[0].summary.total != n:
        raise BenchFailure(f"asked for {n:,} tasks, the answer counts {job.stages}")
    return uuid.UUID(str(job.id)), elapsed


OJS_MEDIA = {"Content-Type": "application/openjobspec+json"}
OJS_BATCH = 1000  # jobs a batch PUSH carries at most


async def ojs_push(base: str, queue: str, n: int) -> float:
    """`n` no-op OJS jobs on `queue`, pushed in batches of 1,000; how long it took."""
    job = {"type": "bench.noop", "args": [], "options": {"queue": queue}}
    async with httpx.AsyncClient(base_url=base, timeout=900) as http:
        started = time.perf_counter()
        for first in range(0, n, OJS_BATCH):
            body = json.dumps({"jobs": [job] * min(OJS_BATCH, n - first)}).encode()
            made = await http.post("/ojs/v1/jobs/batch", content=body, headers=OJS_MEDIA)
            if made.status_code != 201:
                raise BenchFailure(f"OJS batch push: {made.status_code} {made.text[:300]}")
        return time.perf_counter() - started


async def purge_queue(base: str, queue: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=900) as http:
        gone = await http.request(
            "DELETE", f"/ojs/v1/admin/queues/{queue}/jobs", json={"confirm": True}
        )
        gone.raise_for_status()


async def abort_job(base: str, job_id: uuid.UUID, *, unless_final: bool = False) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=900) as http:
        r = await http.put(f"/v1/jobs/{job_id}/status", json={"status": "ABORTED"})
        if unless_final and r.status_code in (400, 404):
            return  # finished already (or gone)
        r.raise_for_status()


async def warm_up(base: str, n: int) -> None:
    """Open the manager's pool and warm its caches: a small job, drained in batches."""
    if n <= 0:
        return
    stage_type = f"drain-warmup-{uuid.uuid4().hex[:6]}"
    await create_job(base, stage_type, n)
    async with JobnikClient(base) as client:
        while tasks := await client.claim(stage_type, limit=min(100, n)):
            await client.report_many(
                [TaskReport.completed(t.id, lease_id=t.lease_id) for t in tasks]
            )


# ---- drains, in a child process -----------------------------------------------------


async def drain_sdk(spec: dict[str, Any]) -> int:
    """The SDK's Worker with a no-op handler until the job is finished."""
    noop = Noop(spec["tasks"])
    worker: Worker[dict[str, Any]] = Worker(
        spec["base"],
        stage_types=spec["stage_type"],
        handler=noop.handle,
        concurrency=spec["concurrency"],
        handle_signals=False,
    )
    async with JobnikClient(spec["base"]) as client, worker:
        await noop.done.wait()
        # The last reports may still be on their way; the manager pushes nothing here.
        while (await client.get_job(spec["job_id"])).status not in FINAL_JOB_STATUSES:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    return noop.handled


async def drain_v1(spec: dict[str, Any], *, read_context: bool = False) -> int:
    """Reference v1 calls only: dequeue one, report it, until dequeue answers 404; with
    `read_context`, its stage and its job read between the two, as the reference SDK's
    worker does to build a handler's context.

    Each loop has a keep-alive connection of its own (`bench_http.Connection`, not
    httpx: see that module for why)."""
    loops: int = spec["loops"]
    dequeue = f"/v1/stages/{spec['stage_type']}/tasks/dequeue"
    completed = json.dumps({"status": "COMPLETED"}).encode()
    done = 0

    async def loop(http: Connection) -> None:
        nonlocal done
        while True:
            status, body = await http.request("PATCH", dequeue)
            if status == 404 and orjson.loads(body).get("code") == "TASK_NOT_FOUND":
                if done < spec["tasks"] - loops:
                    # The others go on without it: the drain's rate then says less of
                    # the manager than of how few loops were left.
                    print(f"  a v1 loop found no task with {done:,} of {spec['tasks']:,} done")
                return
            if status != 200:
                raise BenchFailure(f"dequeue answered {status}: {body[:500]!r}")
            task = orjson.loads(body)
            task_id = task["id"]
            if read_context:
                status, body = await http.request("GET", f"/v1/stages/{task['stageId']}")
                if status != 200:
                    raise BenchFailure(f"GET stage answered {status}: {body[:500]!r}")
                job_id = orjson.loads(body)["jobId"]
                status, body = await http.request("GET", f"/v1/jobs/{job_id}")
                if status != 200:
                    raise BenchFailure(f"GET job answered {status}: {body[:500]!r}")
            status, body = await http.request(
                "PUT", f"/v1/tasks/{task_id}/status", completed, json=True
            )
            if status != 200:
                raise BenchFailure(f"PUT status answered {status}: {body[:500]!r}")
            done += 1

    connections = [await Connection.open(spec["base"]) for _ in range(loops)]
    try:
        await asyncio.gather(*(loop(http) for http in connections))
    finally:
        for http in connections:
            http.close()
    return done


async def drain_batch(spec: dict[str, Any]) -> int:
    """Batch claims of `batch_size` and one report_many per batch, in `loops` loops."""
    done = 0
    async with JobnikClient(spec["base"], timeout=timedelta(minutes=5)) as client:

        async def loop() -> None:
            nonlocal done
            while tasks := await client.claim(spec["stage_type"], limit=spec["batch_size"]):
                # A loop that only checks each outcome asks for them without the tasks.
                outcomes = await client.report_many(
                    [TaskReport.completed(t.id, lease_id=t.lease_id) for t in tasks],
                    with_tasks=spec["report_tasks"],
                )
                refused = [o for o in outcomes if not o.ok]
                if refused:
                    raise RuntimeError(f"{len(refused)} report(s) refused, e.g. {refused[0]}")
                done += len(tasks)

        await asyncio.gather(*(loop() for _ in range(spec["loops"])))
    return done


async def drain_ojs(spec: dict[str, Any]) -> int:
    """OJS workers: `loops` loops of FETCH (`batch_size` jobs) and an ACK of each, the
    ACKs of a batch sent at once over a pool of 16 connections."""
    done = 0
    fetch = json.dumps(
        {"queues": [spec["stage_type"]], "count": spec["batch_size"], "worker_id": "bench"}
    ).encode()
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
    async with httpx.AsyncClient(base_url=spec["base"], timeout=300, limits=limits) as http:

        async def ack(job_id: str) -> None:
            body = b'{"job_id":"' + job_id.encode() + b'"}'
            said = await http.post("/ojs/v1/workers/ack", content=body, headers=OJS_MEDIA)
            if said.status_code != 200:
                raise RuntimeError(f"ACK refused: {said.status_code} {said.text[:200]}")

        async def loop() -> None:
            nonlocal done
            while True:
                got = await http.post("/ojs/v1/workers/fetch", content=fetch, headers=OJS_MEDIA)
                jobs = got.json()["jobs"]
                if not jobs:
                    return
                await asyncio.gather(*(ack(job["id"]) for job in jobs))
                done += len(jobs)

        await asyncio.gather(*(loop() for _ in range(spec["loops"])))
    return done


DRAINS: dict[str, Callable[[dict[str, Any]], Awaitable[int]]] = {
    "ojs": drain_ojs,
    "sdk": drain_sdk,
    "v1": drain_v1,
    "v1read": lambda spec: drain_v1(spec, read_context=True),
    "batch": drain_batch,
}


async def child_main(spec: dict[str, Any]) -> None:
    """Say `ready`, wait for `go` on stdin, drain, and print `result {json}`."""
    drain = DRAINS[spec["mode"]]
    print("ready", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    if line.strip() != "go":
        return
    cpu, started = time.process_time(), time.perf_counter()
    handled = await drain(spec)
    result = {
        "handled": handled,
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - started,
    }
    print("result " + json.dumps(result), flush=True)


class Child:
    """This script run as `--drain-child SPEC`: imported and ready before `go`."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SELF),
            CHILD,
            json.dumps(self.spec),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        line = await self._line(120)
        if line != "ready":
            raise BenchFailure(f"the {self.spec['mode']} drain process did not start: {line!r}")

    async def go(self) -> None:
        assert self.proc and self.proc.stdin
        self.proc.stdin.write(b"go\n")
        await self.proc.stdin.drain()

    async def result(self, limit_s: float) -> dict[str, Any]:
        assert self.proc
        line = await self._line(limit_s)
        code = await self.proc.wait()
        if code < 0:
            raise Interrupted(
                f"the {self.spec['mode']} drain process was stopped by signal {-code}"
            )
        if not line.startswith("result ") or code != 0:
            raise BenchFailure(f"the {self.spec['mode']} drain process failed (exit {code})")
        result: dict[str, Any] = json.loads(line.removeprefix("result "))
        return result

    async def _line(self, limit_s: float) -> str:
        assert self.proc and self.proc.stdout
        try:
            raw = await asyncio.wait_for(self.proc.stdout.readline(), limit_s)
        except TimeoutError:
            self.kill()
            raise BenchFailure(
                f"the {self.spec['mode']} drain took longer than {limit_s:.0f} s"
            ) from None
        return raw.decode().strip()

    def kill(self) -> None:
        if self.proc and self.proc.returncode is None:
            self.proc.kill()


# ---- checks -------------------------------------------------------------------------


@dataclass
class DrainFacts:
    span_s: float
    claims: int


async def verify_drain(url: str, job_id: uuid.UUID, n: int) -> DrainFacts:
    """From the database: the job COMPLETED, each of its `n` tasks COMPLETED with exactly
    one COMPLETED event; and the span from the first claim to the last completion."""
    async with database(url) as db, db.sessions() as s:
        status = (await s.execute(select(Job.status).where(Job.id == job_id))).scalar_one()
        tasks = dict(
            (await s.execute(select(Task.id, Task.status).where(Task.job_id == job_id))).all()
        )
        done_events = Counter(
            (
                await s.execute(
                    select(Event.task_id).where(
                        Event.job_id == job_id,
                        Event.entity == "TASK",
                        Event.to_status == "COMPLETED",
                    )
                )
            ).scalars()
        )
        claims, first, last = (
            await s.execute(
                select(
                    func.count().filter(Event.to_status == "IN_PROGRESS"),
                    func.min(Event.time).filter(Event.to_status == "IN_PROGRESS"),
                    func.max(Event.time).filter(Event.to_status == "COMPLETED"),
                ).where(Event.job_id == job_id, Event.entity == "TASK")
            )
        ).one()
    problems = []
    if status != "COMPLETED":
        problems.append(f"job {job_id} is {status}")
    if len(tasks) != n:
        problems.append(f"the job has {len(tasks):,} tasks, not {n:,}")
    not_done = Counter(s for s in tasks.values() if s != "COMPLETED")
    if not_done:
        problems.append(f"tasks not COMPLETED: {dict(not_done)}")
    missing = [t for t in tasks if done_events[t] == 0]
    repeated = [t for t, k in done_events.items() if k > 1]
    strays = [t for t in done_events if t not in tasks]
    if missing:
        problems.append(f"{len(missing):,} task(s) without a COMPLETED event, e.g. {missing[0]}")
    if repeated:
        problems.append(f"{len(repeated):,} task(s) with several COMPLETED events")
    if strays:
        problems.append(f"{len(strays):,} COMPLETED event(s) of tasks not in the job")
    if problems or first is None or last is None:
        raise BenchFailure(f"drain of job {job_id}: " + "; ".join(problems or ["no events"]))
    return DrainFacts(span_s=(last - first).total_seconds(), claims=int(claims))


async def verify_queue(url: str, stage_type: str, n: int) -> DrainFacts:
    """From the database: the `n` OJS jobs of the queue each COMPLETED (one task each);
    the span from the first claim to the last completion."""
    async with database(url) as db, db.sessions() as s:
        statuses = Counter(
            (await s.execute(select(Task.status).where(Task.stage_type == stage_type))).scalars()
        )
        first, last, attempts = (
            await s.execute(
                select(
                    func.min(Task.start_time), func.max(Task.end_time), func.sum(Task.attempts)
                ).where(Task.stage_type == stage_type)
            )
        ).one()
    if statuses != Counter({"COMPLETED": n}) or first is None or last is None:
        raise BenchFailure(f"OJS drain of {stage_type}: {dict(statuses)}, not {n:,} COMPLETED")
    return DrainFacts(span_s=(last - first).total_seconds(), claims=n + int(attempts or 0))


async def check_invariants(url: str) -> None:
    """tests/support/invariants.py's assert_invariants on the whole database."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.support.invariants import assert_invariants

    async with database(url) as db:
        try:
            await assert_invariants(db)
        except AssertionError as exc:
            raise BenchFailure(f"invariant broken: {exc}") from exc


# ---- finished history ---------------------------------------------------------------

TASK_COLUMNS = (
    "id, stage_id, job_id, stage_type, priority_rank, claimable, status, attempts,"
    " max_attempts, data, user_metadata, traceparent, creation_time, update_time,"
    " start_time, end_time, worker"
)
HISTORY_TASKS_PG = f"""
INSERT INTO tasks ({TASK_COLUMNS})
SELECT gen_random_uuid(), CAST(:stage_id AS uuid), CAST(:job_id AS uuid),
       CAST(:stage_type AS varchar), 2, false, 'COMPLETED', 1, 1, CAST('{{}}' AS json),
       CAST('{{}}' AS json), CAST(:traceparent AS varchar), CAST(:now AS timestamptz),
       CAST(:now AS timestamptz), CAST(:now AS timestamptz), CAST(:now AS timestamptz),
       'history'
FROM generate_series(1, CAST(:n AS integer))
"""
HISTORY_TASKS_SQLITE = f"""
WITH RECURSIVE series(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM series WHERE i < :n)
INSERT INTO tasks ({TASK_COLUMNS})
SELECT lower(hex(randomblob(16))), :stage_id, :job_id, :stage_type, 2, 0,
       'COMPLETED', 1, 1, '{{}}', '{{}}', :traceparent, :now, :now, :now, :now, 'history'
FROM series
"""
# Each finished task leaves three events: created, claimed, completed.
HISTORY_EVENTS = """
INSERT INTO events (job_id, entity, entity_id, stage_id, task_id, from_status, to_status,
                    attempt, worker, time)
SELECT t.job_id, 'TASK', t.id, t.stage_id, t.id, m.from_status, m.to_status, m.attempt,
       'history', t.end_time
FROM tasks t CROSS JOIN (
    SELECT 1 AS step, NULL AS from_status, 'PENDING' AS to_status, 0 AS attempt
    UNION ALL SELECT 2, 'PENDING', 'IN_PROGRESS', 1
    UNION ALL SELECT 3, 'IN_PROGRESS', 'COMPLETED', 1
) m
WHERE t.stage_id = :stage_id
ORDER BY t.seq, m.step
"""


CONTROL_TYPES = 50
LIMITED, PAUSED = range(0, 10), range(10, 15)


async def add_controls(base: str) -> asyncio.Task[None]:
    """Work in 50 other stage types (200 tasks each): 10 rate limited at 20 a second and
    claimed by a Worker as fast as their limits allow, 5 paused, the rest left waiting.
    Answers the Worker's task, to cancel at the end."""
    types = [f"control-{i}" for i in range(CONTROL_TYPES)]
    async with JobnikClient(base) as client:
        for kind in types:
            tasks = [NewTask(data={}) for _ in range(200)]
            await client.create_job(
                f"control {kind}", stages=[NewStage(type=kind, tasks=tasks)], return_tasks=False
            )
        for i in LIMITED:
            await client.limit_stage_type(types[i], rate_per_second=20)
        for i in PAUSED:
            await client.pause_stage_type(types[i])

    async def claim_limited() -> None:
        async def noop(data: Any) -> None:
            return None

        async with JobnikClient(base) as client:
            limited = [types[i] for i in LIMITED]
            worker = Worker(
                client, stage_types=limited, handler=noop, concurrency=4, handle_signals=False
            )
            await worker.run()

    return asyncio.create_task(claim_limited())


async def add_history(url: str, stage_types: list[str], total: int) -> float:
    """Insert `total` COMPLETED tasks (with their events), spread over `stage_types`, each
    type in a finished job and stage of its own; then VACUUM ANALYZE. Seconds taken."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    share, extra = divmod(total, len(stage_types))
    tasks_sql = HISTORY_TASKS_SQLITE if is_sqlite(url) else HISTORY_TASKS_PG
    binds = (
        bindparam("job_id", type_=Uuid()),
        bindparam("stage_id", type_=Uuid()),
        bindparam("now", type_=UtcDateTime()),
    )
    async with database(url) as db:
        for i, stage_type in enumerate(stage_types):
            n = share + (1 if i < extra else 0)
            if n == 0:
                continue
            async with db.sessions() as s, s.begin():
                job_id, stage_id = await add_job_and_stage(
                    s, name="bench-history", stage_type=stage_type, tasks=n, finished=True, now=now
                )
                params = {
                    "job_id": job_id,
                    "stage_id": stage_id,
                    "stage_type": stage_type,
                    "traceparent": TRACEPARENT,
                    "now": now,
                    "n": n,
                }
                await s.execute(text(tasks_sql).bindparams(*binds), params)
                await s.execute(text(HISTORY_EVENTS).bindparams(binds[1]), {"stage_id": stage_id})
    if is_sqlite(url):
        async with database(url) as db, db.engine.connect() as conn:
            await conn.execute(text("ANALYZE"))
    else:
        async with pg(url) as conn:
            await conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


# ---- measurements -------------------------------------------------------------------


@dataclass
class Result:
    mode: str
    label: str
    tasks: int
    rate: float  # tasks/s
    seconds: float  # the span the rate is taken over
    ratio: float | None  # rate / the ceiling measured in the same run
    wall_s: float
    manager_cpu_ms: float  # per task
    worker_cpu_ms: float | None  # per task
    # Per task: the CPU of the PostgreSQL backends serving the database (PostgreSQL only)
    database_cpu_ms: float | None
    # Per task: the WAL the server wrote while it ran (the whole server's: nothing else
    # runs, but autovacuum may; PostgreSQL only)
    wal_bytes: float | None
    commits: float | None  # per task
    statements: float | None  # per task
    claims: float | None  # IN_PROGRESS events per task: 1.0 unless something went wrong


@dataclass
class Run:
    phase: str
    ceiling: Ceiling | None
    results: list[Result] = field(default_factory=list)


@dataclass
class Bench:
    """Measurements through one manager (of --manager-processes) on one database."""

    args: argparse.Namespace
    url: str
    port: int
    statements: bool
    settings: dict[str, str] = field(default_factory=dict)  # the manager's, beyond ours
    _manager: Manager | None = None
    _job: uuid.UUID | None = None  # the job being measured

    @property
    def manager(self) -> Manager:
        assert self._manager is not None
        return self._manager

    async def start_manager(self) -> None:
        """A fresh manager process, ready and warmed up (tried again should it be stopped)."""
        for attempt in range(self.args.retries + 1):
            self._manager = Manager(
                self.url, self.port, self.settings, processes=self.args.manager_processes
            )
            try:
                await self.manager.ready()
                await warm_up(self.manager.base, self.args.warmup)
                return
            except (ManagerGone, httpx.TransportError) as exc:
                self.stop_manager()
                if attempt == self.args.retries:
                    raise ManagerGone(f"the manager did not stay up: {exc}") from exc
                say(f"the manager process ended ({exc}); starting another")

    def stop_manager(self) -> None:
        if self._manager is not None:
            self._manager.stop()

    async def measure(self, mode: str, stage_type: str, ceiling: Ceiling | None) -> Result:
        """One measurement; should the manager process end under it (someone else may
        stop it), a fresh one starts, the interrupted job is aborted and it is taken again."""
        for attempt in range(self.args.retries + 1):
            self._job = None
            try:
                if mode in ("create", "sdkcreate", "ojspush"):
                    return await self.create(mode, stage_type, ceiling)
                return await self.drain(mode, stage_type, ceiling)
            except (Interrupted, httpx.TransportError) as exc:
                if not self.manager.gone and not isinstance(exc, Interrupted):
                    raise
                if attempt == self.args.retries:
                    raise Interrupted(f"{mode}: {exc}") from exc
                say(f"{mode}: interrupted ({exc}); measuring again")
                self.stop_manager()
                await self.start_manager()
                if self._job is not None:
                    await abort_job(self.manager.base, self._job, unless_final=True)
        raise AssertionError("unreachable")

    @property
    def pg_counters(self) -> bool:
        return not is_sqlite(self.url)

    def label(self, mode: str, n: int) -> str:
        a = self.args
        return {
            "create": f"create {n:,} tasks in one call",
            "sdkcreate": f"SDK create_job of {n:,} tasks, return_tasks=False",
            "sdk": f"sdk Worker, concurrency {a.concurrency}",
            "v1": f"v1 dequeue + PUT status, {a.v1_loops} loops",
            "v1read": f"v1 dequeue + GET stage, job + PUT, {a.v1_loops} loops",
            "batch": f"batch claim({a.batch_size}) + report_many"
            f"{'' if a.report_tasks else ' (no tasks)'}, {a.batch_loops} loops",
            "ojspush": f"OJS batch PUSH of {n:,} jobs, 1,000 a call",
            "ojs": f"OJS fetch({a.batch_size}) + ACK each, {a.batch_loops} loops",
        }[mode]

    async def database_cpu(self, since: float | None = None) -> float | None:
        """CPU seconds of the backends serving the database so far, or since `since`
        (None on SQLite). A backend that ended meanwhile is not counted: the manager
        keeps its connections open."""
        if not self.pg_counters:
            return None
        now = await backends_cpu(self.url)
        return now if since is None else now - since

    async def wal(self, since: int | None = None) -> int | None:
        """The server's WAL written so far, or since `since` (None on SQLite)."""
        if not self.pg_counters:
            return None
        now = await wal_written(self.url)
        return now if since is None else now - since

    async def counters(self) -> Counters | None:
        return await read_counters(self.url, self.statements) if self.pg_counters else None

    def per_task(self, before: Counters | None, after: Counters | None, n: int) -> dict[str, Any]:
        if before is None or after is None:
            return {"commits": None, "statements": None}
        statements = None
        if before.statements is not None and after.statements is not None:
            statements = (after.statements - before.statements) / n
        return {"commits": (after.commits - before.commits) / n, "statements": statements}

    async def create(self, mode: str, stage_type: str, ceiling: Ceiling | None) -> Result:
        n = self.args.tasks
        before, cpu = await self.counters(), self.manager.cpu_seconds()
        pg_cpu, wal = await self.database_cpu(), await self.wal()
        base = self.manager.base
        if mode == "ojspush":  # n jobs of a task each, on the queue `stage_type`
            elapsed = await self.manager.watch(ojs_push(base, stage_type, n))
            made, what = Task.stage_type == stage_type, f"queue {stage_type}"
            clear_up: Callable[[], Awaitable[None]] = partial(purge_queue, base, stage_type)
        else:
            make = create_job if mode == "create" else sdk_create_job
            first, _ = await self.manager.watch(make(base, f"{stage_type}-first", n))
            await abort_job(base, first)
            before, cpu = await self.counters(), self.manager.cpu_seconds()
            pg_cpu, wal = await self.database_cpu(), await self.wal()
            job_id, elapsed = await self.manager.watch(make(base, stage_type, n))
            self._job = job_id
            made, what = Task.job_id == job_id, f"job {job_id}"
            clear_up = partial(abort_job, base, job_id)
        cpu = self.manager.cpu_seconds() - cpu
        pg_cpu, wal = await self.database_cpu(since=pg_cpu), await self.wal(since=wal)
        end = time.monotonic()
        async with database(self.url) as db, db.sessions() as s:
            count = (await s.execute(select(func.count()).where(made))).scalar_one()
        if count != n:
            raise BenchFailure(f"{what} has {count:,} tasks in the database, not {n:,}")
        await self.settle(end)
        after = await self.counters()
        await clear_up()  # leaves nothing claimable behind
        rate = n / elapsed
        return Result(
            mode=mode,
            label=self.label(mode, n),
            tasks=n,
            rate=rate,
            seconds=elapsed,
            ratio=rate / ceiling.cycles_per_s if ceiling else None,
            wall_s=elapsed,
            manager_cpu_ms=cpu * 1000 / n,
            worker_cpu_ms=None,
            database_cpu_ms=None if pg_cpu is None else pg_cpu * 1000 / n,
            wal_bytes=None if wal is None else wal / n,
            claims=None,
            **self.per_task(before, after, n),
        )

    async def drain(self, mode: str, stage_type: str, ceiling: Ceiling | None) -> Result:
        a = self.args
        v1 = mode in ("v1", "v1read")
        n = min(a.tasks, a.v1_tasks) if v1 else a.tasks
        if mode == "ojs":
            await self.manager.watch(ojs_push(self.manager.base, stage_type, n))
            job_id = None
        else:
            job_id, _ = await self.manager.watch(create_job(self.manager.base, stage_type, n))
        self._job = job_id
        if a.analyze and self.pg_counters:
            async with database(self.url) as db, db.engine.begin() as conn:
                await conn.execute(text("ANALYZE tasks"))
        spec = {
            "mode": mode,
            "base": self.manager.base,
            "stage_type": stage_type,
            "job_id": str(job_id) if job_id else None,
            "tasks": n,
            "concurrency": a.concurrency,
            "loops": a.v1_loops if v1 else a.batch_loops,
            "batch_size": a.batch_size,
            "report_tasks": a.report_tasks,
        }
        child = Child(spec)
        try:
            await child.start()
            before, cpu = await self.counters(), self.manager.cpu_seconds()
            pg_cpu, wal = await self.database_cpu(), await self.wal()
            started = time.perf_counter()
            await child.go()
            outcome = await self.manager.watch(child.result(a.timeout))
        finally:
            child.kill()
        wall = time.perf_counter() - started
        cpu = self.manager.cpu_seconds() - cpu
        pg_cpu, wal = await self.database_cpu(since=pg_cpu), await self.wal(since=wal)
        await self.settle(time.monotonic())
        after = await self.counters()
        facts = await (
            verify_queue(self.url, stage_type, n)
            if job_id is None
            else verify_drain(self.url, job_id, n)
        )
        await check_invariants(self.url)
        rate = n / facts.span_s if facts.span_s > 0 else float("inf")
        return Result(
            mode=mode,
            label=self.label(mode, n),
            tasks=n,
            rate=rate,
            seconds=facts.span_s,
            ratio=rate / ceiling.cycles_per_s if ceiling else None,
            wall_s=wall,
            manager_cpu_ms=cpu * 1000 / n,
            worker_cpu_ms=outcome["cpu_s"] * 1000 / n,
            database_cpu_ms=None if pg_cpu is None else pg_cpu * 1000 / n,
            wal_bytes=None if wal is None else wal / n,
            claims=facts.claims / n,
            **self.per_task(before, after, n),
        )

    async def settle(self, since: float) -> None:
        """PostgreSQL publishes an idle backend's commit counts up to 10 s late."""
        if self.pg_counters:
            await asyncio.sleep(max(0.0, self.args.settle - (time.monotonic() - since)))


@dataclass
class Phase:
    """A database and what is measured on it: the benchmark, or one side of a comparison."""

    name: str
    bench: Bench
    history: int
    modes: list[str]
    types: dict[tuple[int, str], str]  # (run, mode) -> a stage type of its own
    runs: list[Run] = field(default_factory=list)
    history_s: float | None = None


async def measure_runs(
    args: argparse.Namespace, phases: list[Phase], ceiling_url: str | None
) -> None:
    """Each run: the ceiling, then every phase's modes (phases in turn, alternating the
    order from run to run), each measurement's ratio taken to that run's ceiling."""
    for i in range(args.runs):
        ceiling = None
        if ceiling_url:
            ceiling = await measure_ceiling(
                ceiling_url,
                clients=args.ceiling_clients,
                seconds=args.ceiling_seconds,
                rows=args.ceiling_rows,
            )
            say(f"[run {i + 1}] ceiling {ceiling.cycles_per_s:,.0f} cycles/s")
        for phase in phases if i % 2 == 0 else phases[::-1]:
            run = Run(phase=phase.name, ceiling=ceiling)
            for mode in phase.modes:
                result = await phase.bench.measure(mode, phase.types[i, mode], ceiling)
                say(f"[run {i + 1}] {phase.name}: {result.label}: {describe_rate(result)}")
                run.results.append(result)
            phase.runs.append(run)


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---- reporting ----------------------------------------------------------------------


def fmt_rate(rate: float) -> str:
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:,.1f}"


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None:
        return "-"
    return f"{ratio:.3f}x" if ratio < 0.1 else f"{ratio:.2f}x"


def fmt_num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def fmt_bytes(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def describe_rate(r: Result) -> str:
    return f"{fmt_rate(r.rate)} tasks/s ({fmt_ratio(r.ratio)}) over {r.seconds:.1f} s"


def median_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize(runs: list[Run]) -> dict[str, Any]:
    """Medians over the runs: the ceiling, and per mode each figure."""
    ceilings = [r.ceiling.cycles_per_s for r in runs if r.ceiling]
    modes: dict[str, dict[str, Any]] = {}
    for run in runs:
        for res in run.results:
            modes.setdefault(res.mode, {"label": res.label, "tasks": res.tasks, "samples": []})
            modes[res.mode]["samples"].append(res)
    summary: dict[str, Any] = {
        "ceiling": statistics.median(ceilings) if ceilings else None,
        "ceilings": ceilings,
        "modes": {},
    }
    for mode, entry in modes.items():
        samples: list[Result] = entry["samples"]
        summary["modes"][mode] = {
            "label": entry["label"],
            "tasks": entry["tasks"],
            "rate": statistics.median(r.rate for r in samples),
            "ratio": median_or_none([r.ratio for r in samples]),
            "ratios": [r.ratio for r in samples],
            "rates": [r.rate for r in samples],
            **{
                key: median_or_none([getattr(r, key) for r in samples])
                for key in (
                    "manager_cpu_ms",
                    "worker_cpu_ms",
                    "database_cpu_ms",
                    "wal_bytes",
                    "commits",
                    "statements",
                    "claims",
                    "seconds",
                )
            },
        }
    return summary


def print_phase(title: str, summary: dict[str, Any], ceiling_note: str, runs: int) -> None:
    print(f"\n{title}")
    ceiling = summary["ceiling"]
    if ceiling is None:
        print(f"  ceiling: not measured ({ceiling_note})")
    else:
        each = " / ".join(f"{c:,.0f}" for c in summary["ceilings"])
        spread = f"   (runs: {each})" if runs > 1 else ""
        print(f"  ceiling {ceiling_note}: {ceiling:,.0f} cycles/s{spread}")
    head = (
        f"  {'mode':<44}{'tasks':>8}{'tasks/s':>10}{'x ceil':>9}{'span s':>9}"
        f"{'mgr CPU':>9}{'wkr CPU':>9}{'pg CPU':>9}{'WAL':>7}{'commits':>9}{'stmts':>7}"
    )
    print(head)
    units = f"{'ms/task':>9}{'ms/task':>9}{'ms/task':>9}{'B/task':>7}{'/task':>9}{'/task':>7}"
    print(f"  {'':<80}{units}")
    for m in summary["modes"].values():
        print(
            f"  {m['label']:<44}{m['tasks']:>8,}{fmt_rate(m['rate']):>10}{fmt_ratio(m['ratio']):>9}"
            f"{m['seconds']:>9.1f}{fmt_num(m['manager_cpu_ms']):>9}{fmt_num(m['worker_cpu_ms']):>9}"
            f"{fmt_num(m['database_cpu_ms']):>9}{fmt_bytes(m['wal_bytes']):>7}"
            f"{fmt_num(m['commits']):>9}{fmt_num(m['statements'], 1):>7}"
        )
    if runs > 1:
        for m in summary["modes"].values():
            each = " / ".join(fmt_ratio(r) for r in m["ratios"])
            rates = " / ".join(fmt_rate(r) for r in m["rates"])
            print(f"  runs of {m['label']}: {rates} tasks/s ({each})")
    for m in summary["modes"].values():
        if m["claims"] is not None and abs(m["claims"] - 1) > 1e-9:
            print(f"  note: {m['label']}: {m['claims']:.3f} claims per task (expected 1)")


# ---- main ---------------------------------------------------------------------------


def sibling_url(url: str, suffix: str) -> str:
    """Another database next to `url`: `<name>_<suffix>`, or `<file>-<suffix>.db`."""
    if is_sqlite(url):
        path = sqlite_path(url)
        return url.removesuffix(str(path)) + str(path.with_stem(f"{path.stem}-{suffix}"))
    u = make_url(url)
    return u.set(database=f"{u.database}_{suffix}").render_as_string(hide_password=False)


async def prepare(url: str) -> bool:
    """Recreate and migrate the database; True when it counts statements."""
    await recreate(url)
    await asyncio.to_thread(migrate.upgrade, url)
    return not is_sqlite(url) and await enable_statement_stats(url)


def describe_backend(url: str) -> str:
    if is_sqlite(url):
        return f"SQLite ({sqlite_path(url)})"
    return f"PostgreSQL (database {db_name(url)})"


async def benchmark(args: argparse.Namespace) -> int:
    sqlite = is_sqlite(args.url)
    ceiling_url: str | None = args.ceiling_url or (CEILING_URL_FOR_SQLITE if sqlite else args.url)
    if ceiling_url == CEILING_URL_FOR_SQLITE:
        args.scratch.append(ceiling_url)
    if ceiling_url is not None and not await pg_reachable(ceiling_url):
        if not sqlite:
            raise SystemExit(f"PostgreSQL is not reachable at {ceiling_url}")
        say(f"PostgreSQL is not reachable at {ceiling_url}: no ceiling, no ratios")
        ceiling_url = None
    if ceiling_url is None:
        ceiling_note = "PostgreSQL not reachable"
    elif sqlite:
        ceiling_note = (
            f"(PostgreSQL, database {db_name(ceiling_url)}; the drains run on SQLite; "
            f"pgbench claim+complete, {args.ceiling_clients} clients, {args.ceiling_seconds} s)"
        )
    else:
        ceiling_note = (
            f"(pgbench claim+complete, {args.ceiling_clients} clients, {args.ceiling_seconds} s)"
        )

    # The comparison runs the two sides on two databases, each with its manager, in
    # turn within every run, so that the machine's drift falls on both alike.
    if args.compare_history is not None:
        history_url = sibling_url(args.url, "history")
        if args.url in args.scratch:
            args.scratch.append(history_url)
        sides = [
            ("empty", args.url, args.port, 0, ["sdk"], {}),
            ("history", history_url, free_port(), args.compare_history, ["sdk"], {}),
        ]
    elif args.compare_controls:
        controls_url = sibling_url(args.url, "controls")
        if args.url in args.scratch:
            args.scratch.append(controls_url)
        sides = [
            ("plain", args.url, args.port, 0, args.modes, {}),
            ("controls", controls_url, free_port(), 0, args.modes, {}),
        ]
    elif args.compare_metrics:
        metrics_url = sibling_url(args.url, "metrics")
        if args.url in args.scratch:
            args.scratch.append(metrics_url)
        sides = [
            ("metrics-off", args.url, args.port, 0, args.modes, {"JOBNIK_METRICS": "false"}),
            ("metrics-on", metrics_url, free_port(), 0, args.modes, {"JOBNIK_METRICS": "true"}),
        ]
    else:
        sides = [("bench", args.url, args.port, args.history, args.modes, {})]
    if ceiling_url and ceiling_url not in (url for _, url, *_ in sides):
        await recreate(ceiling_url)
    token = uuid.uuid4().hex[:6]
    phases = []
    for name, url, port, history, modes, settings in sides:
        statements = await prepare(url)
        types = {
            (i, m): f"drain-{m}-{name}{i + 1}-{token}" for i in range(args.runs) for m in modes
        }
        bench = Bench(args=args, url=url, port=port, statements=statements, settings=settings)
        phases.append(Phase(name=name, bench=bench, history=history, modes=modes, types=types))
    statements = all(p.bench.statements for p in phases)

    exit_code = 0
    background: asyncio.Task[None] | None = None
    try:
        for phase in phases:
            if phase.history:
                say(f"adding {phase.history:,} finished tasks ...")
                stage_types = sorted(set(phase.types.values()))
                phase.history_s = await add_history(phase.bench.url, stage_types, phase.history)
                say(f"added {phase.history:,} finished tasks in {phase.history_s:.1f} s")
            await phase.bench.start_manager()
            if phase.name == "controls":
                say("adding 50 stage types with work, 10 rate limited, 5 paused ...")
                background = await add_controls(phase.bench.manager.base)
        await measure_runs(args, phases, ceiling_url)
    except BenchFailure as exc:
        print(f"\nFAILED: {exc}", file=sys.stderr)
        exit_code = 1
    finally:
        if background is not None:
            background.cancel()
        for phase in phases:
            phase.bench.stop_manager()

    report: dict[str, Any] = {
        "backend": describe_backend(args.url),
        "url": args.url,
        "ceiling_url": ceiling_url,
        "cpus": os.cpu_count(),
        "config": dict(vars(args)),
        "pg_stat_statements": statements,
        "phases": [
            {
                "phase": p.name,
                "url": p.bench.url,
                "history": p.history,
                "history_insert_s": p.history_s,
                "runs": [asdict(r) for r in p.runs],
                "summary": summarize(p.runs),
            }
            for p in phases
            if p.runs
        ],
    }
    managers = "one manager" if len(phases) == 1 else "a manager per database"
    n = args.manager_processes
    managers += f" of {n} processes" if n > 1 else " process"
    print(f"\nDrain benchmark: {report['backend']}, {managers}, {os.cpu_count()} CPUs")
    no_statements = "" if statements or sqlite else "; no pg_stat_statements: no statement counts"
    print(
        f"  {args.runs} run(s), medians; ratios are to the ceiling of the same run{no_statements}"
    )
    for phase in report["phases"]:
        history = phase["history"]
        where = describe_backend(phase["url"])
        title = (
            f"{phase['phase']}: {where}, {history:,} finished tasks in the database"
            if history
            else f"{phase['phase']}: {where}, no finished history"
        )
        print_phase(title, phase["summary"], ceiling_note, args.runs)
    if args.compare_history is not None and len(report["phases"]) == 2:
        exit_code = max(exit_code, compare(args, phases, report))
    if args.compare_metrics and len(report["phases"]) == 2:
        compare_metrics(phases, report)
    if args.json:
        out = json.dumps(report, indent=2, default=str) + "\n"
        await asyncio.to_thread(Path(args.json).write_text, out)
        print(f"\nwrote {args.json}")
    return exit_code


def compare(args: argparse.Namespace, phases: list[Phase], report: dict[str, Any]) -> int:
    """Empty over history, run by run (both sides of a run share its ceiling, so the
    ratio of their rates is also the ratio of their ceiling ratios); 1 above the limit."""
    empty, full = phases
    pairs = [
        e.results[0].rate / f.results[0].rate
        for e, f in zip(empty.runs, full.runs, strict=False)
        if e.results and f.results
    ]
    if not pairs:
        return 1
    slowdown = statistics.median(pairs)
    each = " / ".join(f"{x:.2f}x" for x in pairs)
    print(
        f"\nsdk drain, empty / {args.compare_history:,} finished tasks, run by run: {each}"
        f"\n  median {slowdown:.2f}x (must stay within {args.max_history_ratio}x)"
    )
    report["history_slowdown"] = {"median": slowdown, "runs": pairs}
    if slowdown > args.max_history_ratio:
        print(f"FAILED: {slowdown:.2f}x is above {args.max_history_ratio}x", file=sys.stderr)
        return 1
    return 0


def compare_metrics(phases: list[Phase], report: dict[str, Any]) -> None:
    """The rate with metrics on over the rate with them off, mode by mode and run by run
    (both sides of a run share its ceiling)."""
    off, on = phases
    ratios: dict[str, list[float]] = {}
    for run_off, run_on in zip(off.runs, on.runs, strict=False):
        rates = {r.mode: r.rate for r in run_off.results}
        for r in run_on.results:
            if r.mode in rates:
                ratios.setdefault(r.mode, []).append(r.rate / rates[r.mode])
    print("\nmetrics on / off, run by run (1.00x costs nothing):")
    for mode, each in ratios.items():
        median = statistics.median(each)
        runs = " / ".join(f"{x:.2f}x" for x in each)
        print(f"  {mode}: {runs}; median {median:.2f}x, a cost of {(1 - median) * 100:+.1f}%")
    report["metrics_on_over_off"] = ratios


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--url",
        help="database to use (dropped first!, kept afterwards); default: "
        f"{SERVER}/jobnik_drain_<pid>, dropped at the end",
    )
    parser.add_argument(
        "--ceiling-url",
        help="PostgreSQL database for the pgbench ceiling (default: --url; for SQLite "
        f"{SERVER}/jobnik_drain_ceiling_<pid>, dropped at the end)",
    )
    parser.add_argument("--modes", default="create,sdk,v1,batch", help="of " + ",".join(MODES))
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks per job")
    parser.add_argument("--v1-tasks", type=int, default=5_000, help="tasks of the v1 drain")
    parser.add_argument("--concurrency", type=int, default=16, help="the sdk Worker's")
    parser.add_argument("--v1-loops", type=int, default=16)
    parser.add_argument(
        "--manager-processes",
        type=int,
        default=1,
        help="serve from this many manager processes (`serve --workers N`)",
    )
    parser.add_argument("--batch-loops", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument(
        "--report-tasks",
        action="store_true",
        help="the batch loop's report_many answers each task too (withTasks, the default "
        "of the API), rather than its outcome alone",
    )
    parser.add_argument("--runs", type=int, default=1, help="interleaved repetitions")
    parser.add_argument("--history", type=int, default=0, help="finished tasks to add first")
    parser.add_argument(
        "--compare-history",
        type=int,
        metavar="N",
        help="sdk drains on an empty database and on one holding N finished tasks (each "
        "with a manager of its own, in turn within every run); exit 1 when the median "
        "slowdown is above --max-history-ratio",
    )
    parser.add_argument("--max-history-ratio", type=float, default=1.2)
    parser.add_argument(
        "--compare-metrics",
        action="store_true",
        help="run the modes on two managers, JOBNIK_METRICS off and on, in turn every run",
    )
    parser.add_argument(
        "--compare-controls",
        action="store_true",
        help="run the modes on two databases, one with 50 other stage types at work (10 "
        "rate limited, 5 paused), in turn every run",
    )
    parser.add_argument(
        "--analyze", action="store_true", help="ANALYZE the tasks once each drain's job is made"
    )
    parser.add_argument("--port", type=int, default=0, help="the manager's (default: a free one)")
    parser.add_argument("--keep", action="store_true", help="keep the databases made for the run")
    parser.add_argument("--ceiling-clients", type=int, default=8)
    parser.add_argument("--ceiling-seconds", type=int, default=10)
    parser.add_argument("--ceiling-rows", type=int, default=400_000)
    parser.add_argument("--warmup", type=int, default=200, help="tasks drained before measuring")
    parser.add_argument(
        "--settle", type=float, default=11.0, help="seconds for commit counts to land"
    )
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per drain")
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        help="times a measurement is taken again when the manager process ends under it",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    args.scratch = []  # databases made for this run, dropped at its end
    if args.url is None:
        args.url = DEFAULT_URL
        args.scratch.append(DEFAULT_URL)
    args.port = args.port or free_port()
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(args.modes) - set(MODES)
    if unknown or not args.modes:
        parser.error(f"--modes takes some of {','.join(MODES)}")
    if args.compare_history is not None and args.history:
        parser.error("--compare-history and --history do not go together")
    if args.compare_metrics and (args.compare_history is not None or args.history):
        parser.error("--compare-metrics goes with neither --compare-history nor --history")
    if args.tasks < 1 or args.v1_tasks < 1 or args.runs < 1:
        parser.error("--tasks, --v1-tasks and --runs must be positive")
    return args


def main() -> None:
    # As a deployed worker's process (the worker template's) does, and a producer's that
    # creates large jobs (sdk/README.md): the creates are made from this process.
    tune_gc()
    if len(sys.argv) == 3 and sys.argv[1] == CHILD:
        try:
            asyncio.run(child_main(json.loads(sys.argv[2])))
        except Exception:
            traceback.print_exc()
            sys.exit(1)
        return
    sys.exit(asyncio.run(run(parse_args())))


async def run(args: argparse.Namespace) -> int:
    """The benchmark; on SIGTERM it stops its processes and drops its databases."""
    main = asyncio.current_task()
    assert main is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main.cancel)
    try:
        return await benchmark(args)
    except asyncio.CancelledError:
        say("stopped (SIGTERM)")
        return 143
    finally:
        if not args.keep:
            for url in args.scratch:
                with contextlib.suppress(OSError, asyncpg.PostgresError):
                    await drop(url)


if __name__ == "__main__":
    main()
