"""A soak of the production profile under faults (scripts/soak.py; the slow tier runs
three minutes of it): the scenarios of support.soak_scenarios started in turn, a fault
injected on a schedule, then a drain and the checks, printed as tables.

Faults: a manager replica SIGKILLed and started again; PostgreSQL restarted fast and
immediate (a crash); RabbitMQ stopped and started; a worker SIGKILLed, another sent
SIGTERM, each started again as an orchestrator would.

The checks: every job ends in the status its scenario expects; no task is settled twice
(no lease settles twice, no task completes twice); every task of a finished job is
final; DESIGN.md's invariants; the managers' counters equal the event log; no answer of
500 (503 only while the database is away); and claims flow again after each fault.

Retention deletes finished jobs with their events while the soak runs, so the event log
is counted as it is written: a statement trigger (the soak's own, in its own database)
appends what each insert into `events` carried.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from jobnik_sdk import NotFoundError

from .deployment import Deployment, deployment
from .private_postgres import private_postgres
from .soak_ledger import asyncpg_dsn, install_ledger, ledger_query, timestamp
from .soak_report import Report
from .soak_scenarios import SCENARIOS, STAGE_TYPES, Actors, Scenario, persist

log = logging.getLogger("soak")


@dataclass
class JobRecord:
    scenario: Scenario
    job_id: str
    final: str | None = None
    steered: bool = False  # its scenario has done all it does (a replay comes after FAILED)
    deleted: bool = False  # by retention, after it was seen final
    vanished: bool = False  # gone before anyone saw it final: lost


@dataclass
class Fault:
    kind: str
    started: float
    restored: float = 0.0
    recovered: float | None = None  # seconds from the start until claims flowed again
    stage_type: str | None = None


@dataclass
class WorkerSlot:
    stage_type: str
    name: str
    proc: subprocess.Popen[bytes]


@dataclass
class Soak:
    deployment: Deployment
    minutes: float
    fault_every: float
    live_jobs: int = 10
    jobs: list[JobRecord] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    memory: list[tuple[float, str, int | None]] = field(default_factory=list)
    slots: list[WorkerSlot] = field(default_factory=list)
    started: float = 0.0

    # ---- the workload ----------------------------------------------------------------

    async def produce(self, actors: Actors, until: float) -> None:
        steering: set[asyncio.Task[None]] = set()
        for scenario in itertools.cycle(SCENARIOS):
            if time.monotonic() > until:
                break
            while self.running() >= self.live_jobs:  # noqa: ASYNC110 (the observer polls)
                await asyncio.sleep(0.5)
            made = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(self._steer(scenario, actors, made))
            steering.add(task)
            task.add_done_callback(steering.discard)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(made), 300)
        await asyncio.gather(*steering)

    def running(self) -> int:
        return sum(1 for j in self.jobs if j.final is None and not j.vanished)

    async def _steer(self, scenario: Scenario, actors: Actors, made: asyncio.Future[str]) -> None:
        records: list[JobRecord] = []

        def record(job_id: str) -> None:
            records.append(JobRecord(scenario, job_id))
            self.jobs.append(records[-1])
            made.set_result(job_id)

        try:
            await scenario.run(actors, record)
        except Exception as exc:
            self.errors.append(f"scenario {scenario.name}: {exc!r}")
            log.exception("scenario %s", scenario.name)
        finally:
            for done in records:
                done.steered = True
            if not made.done():
                made.set_result("")

    async def observe(self, operator: Any, until: Callable[[], bool]) -> None:
        """Each job's status until it is final; a final job that then 404s was deleted
        by retention, one that 404s before was lost."""
        while not until():
            for record in [j for j in self.jobs if j.final is None and not j.vanished]:
                # As it was before the read: a replay may follow a FAILED read meanwhile.
                steered = record.steered
                try:
                    job = await persist("observe", lambda r=record: operator.get_job(r.job_id))
                except NotFoundError:
                    record.vanished = True
                    self.errors.append(f"job {record.job_id} ({record.scenario.name}) vanished")
                    continue
                if job.status.is_final and steered:
                    record.final = job.status.value
            for record in [j for j in self.jobs if j.final is not None and not j.deleted][:20]:
                with contextlib.suppress(NotFoundError):
                    await persist("observe", lambda r=record: operator.get_job(r.job_id))
                    continue
                record.deleted = True
            await asyncio.sleep(1)

    async def sample_memory(self, until: Callable[[], bool]) -> None:
        while not until():
            for replica in self.deployment.replicas:
                self.memory.append(
                    (time.monotonic() - self.started, replica.name, replica.rss_bytes())
                )
            await asyncio.sleep(10)

    # ---- faults ------------------------------------------------------------------------

    def fault_plan(self) -> list[tuple[str, Callable[[Fault], Awaitable[None]]]]:
        plan: list[tuple[str, Callable[[Fault], Awaitable[None]]]] = [
            ("manager SIGKILL", self._kill_manager),
            ("worker SIGKILL", self._kill_worker),
            ("PostgreSQL restart (fast)", self._restart_postgres("fast")),
            ("RabbitMQ restart", self._restart_rabbitmq),
            ("worker SIGTERM", self._stop_worker),
            ("PostgreSQL restart (immediate)", self._restart_postgres("immediate")),
        ]
        return plan

    async def inject(self, until: float) -> None:
        for n, (kind, action) in enumerate(itertools.cycle(self.fault_plan())):
            next_at = self.started + 15 + n * self.fault_every
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            if time.monotonic() > until:
                break
            fault = Fault(kind, time.monotonic())
            log.warning("fault %d: %s", n + 1, kind)
            try:
                await action(fault)
            except Exception as exc:
                self.errors.append(f"fault {kind}: {exc!r}")
                log.exception("fault %s", kind)
            fault.restored = time.monotonic()
            self.faults.append(fault)
            await self._recovery(fault)

    async def _recovery(self, fault: Fault) -> None:
        """Seconds from the fault until a claim (of its stage type, for a worker's) is
        committed after the service came back; None if none came within 120 s."""
        since = time.time() - (time.monotonic() - fault.restored)
        query = "SELECT min(at) FROM soak_moves WHERE to_status = 'IN_PROGRESS' AND at > $1"
        args: list[Any] = [timestamp(since)]
        if fault.stage_type:
            query += " AND stage_type = $2"
            args.append(fault.stage_type)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            [row] = await ledger_query(self.deployment.database_url, query, *args)
            if row[0] is not None:
                fault.recovered = round(
                    row[0].timestamp() - since + fault.restored - fault.started, 2
                )
                return
            await asyncio.sleep(0.25)

    async def _kill_manager(self, fault: Fault) -> None:
        # Always the last replica: the first keeps its process for the memory trend.
        victim = self.deployment.replicas[-1]
        victim.kill()
        await asyncio.sleep(1)
        await asyncio.to_thread(victim.start)

    def _slot(self, n: int) -> WorkerSlot:
        return self.slots[n % len(self.slots)]

    async def _kill_worker(self, fault: Fault) -> None:
        slot = self._slot(len(self.faults))
        fault.stage_type = slot.stage_type
        slot.proc.kill()
        await asyncio.to_thread(slot.proc.wait)
        self._restart(slot)

    async def _stop_worker(self, fault: Fault) -> None:
        slot = self._slot(len(self.faults) + 1)
        fault.stage_type = slot.stage_type
        slot.proc.terminate()
        code = await asyncio.to_thread(slot.proc.wait, 30)
        if code != 0:
            self.errors.append(f"worker {slot.name} exited {code} on SIGTERM")
        self._restart(slot)

    def _restart(self, slot: WorkerSlot) -> None:
        slot.proc = self.deployment.start_worker(slot.stage_type, name=slot.name)

    def _restart_postgres(self, mode: str) -> Callable[[Fault], Awaitable[None]]:
        async def restart(fault: Fault) -> None:
            assert self.deployment.postgres is not None
            await asyncio.to_thread(self.deployment.postgres.restart, mode)

        return restart

    async def _restart_rabbitmq(self, fault: Fault) -> None:
        for step in ("stop_app", "start_app"):
            await asyncio.to_thread(
                subprocess.run, ["rabbitmqctl", "-q", step], check=True, capture_output=True
            )

    # ---- the run -----------------------------------------------------------------------

    async def run(self) -> Report:
        d = self.deployment
        await install_ledger(d.database_url)
        for stage_type in STAGE_TYPES:
            # Two workers of the busiest type, one of the others.
            for i in range(2 if stage_type == "render" else 1):
                name = f"{stage_type}-{i}"
                self.slots.append(
                    WorkerSlot(stage_type, name, d.start_worker(stage_type, name=name))
                )
        self.started = time.monotonic()
        end_of_work = self.started + self.minutes * 60
        done = False
        async with (
            d.client("producer") as producer,
            d.client("operator") as operator,
            httpx.AsyncClient(base_url=d.url, headers=d.headers("producer"), timeout=30) as ojs,
        ):
            actors = Actors(producer, operator, ojs)
            watchers = [
                asyncio.create_task(self.observe(operator, lambda: done)),
                asyncio.create_task(self.sample_memory(lambda: done)),
            ]
            await asyncio.gather(self.produce(actors, end_of_work), self.inject(end_of_work))
            log.warning(
                "work and faults over after %.0f s; draining", time.monotonic() - self.started
            )
            drained = await self._drain()
            done = True
            await asyncio.gather(*watchers)
        return await Report.gather(self, drained)

    async def _drain(self, within: float = 300) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if all(j.final is not None or j.vanished for j in self.jobs):
                return True
            await asyncio.sleep(1)
        return False


AMQP_URL = os.environ.get("JOBNIK_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


async def run_soak(
    minutes: float, logs: Path, *, fault_every: float | None = None, retention: str = "90s"
) -> Report:
    """Start the production profile on a PostgreSQL server of the soak's own under
    `logs`, soak it for `minutes`, and answer the report."""
    if fault_every is None:
        fault_every = max(15.0, minutes * 60 / 24)
    # Its own folder under the system's temporary one: the server runs as the postgres
    # user, who may not enter `logs` (pytest's are private to their owner).
    with (
        tempfile.TemporaryDirectory(prefix="jobnik-soak-") as place,
        private_postgres(Path(place)) as server,
    ):
        conn = await asyncpg.connect(asyncpg_dsn(server.url("postgres")))
        try:
            await conn.execute("CREATE DATABASE jobnik")
        finally:
            await conn.close()
        with deployment(
            "production",
            logs,
            postgres_url=server.url("jobnik"),
            amqp_url=AMQP_URL,
            postgres=server,
            retention=retention,
        ) as d:
            return await Soak(d, minutes, fault_every).run()
