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
import json
import logging
import os
import subprocess
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from jobnik_manager.db.engine import Database
from jobnik_sdk import NotFoundError

from .deployment import Deployment, deployment
from .invariants import assert_invariants
from .private_postgres import private_postgres
from .scrape import Scrape
from .soak_scenarios import SCENARIOS, STAGE_TYPES, Actors, Scenario, persist

log = logging.getLogger("soak")

LEDGER = """
CREATE TABLE soak_moves (
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    stage_type text, from_status text, to_status text, reason text, n int NOT NULL);
CREATE TABLE soak_settlements (
    at timestamptz NOT NULL DEFAULT clock_timestamp(),
    task_id uuid, lease_id uuid, to_status text);
CREATE FUNCTION soak_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO soak_moves (stage_type, from_status, to_status, reason, n)
    SELECT s.type, e.from_status, e.to_status,
           CASE WHEN e.reason IN ('lease expired', 'timed out') THEN e.reason END, count(*)
    FROM new_rows e LEFT JOIN stages s ON s.id = e.stage_id
    WHERE e.entity = 'TASK' AND e.to_status IS NOT NULL
    GROUP BY 1, 2, 3, 4;
    INSERT INTO soak_settlements (task_id, lease_id, to_status)
    SELECT e.task_id, e.lease_id, e.to_status FROM new_rows e
    WHERE e.entity = 'TASK' AND e.from_status = 'IN_PROGRESS';
    RETURN NULL;
END $$;
CREATE TRIGGER soak_log AFTER INSERT ON events REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION soak_log();
"""


def asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


async def install_ledger(database_url: str) -> None:
    conn = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await conn.execute(LEDGER)
    finally:
        await conn.close()


async def ledger_query(database_url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    """`sql` on the soak's database, asked again while the database restarts."""
    deadline = time.monotonic() + 120
    while True:
        try:
            conn = await asyncpg.connect(asyncpg_dsn(database_url), timeout=5)
            try:
                rows: list[asyncpg.Record] = await conn.fetch(sql, *args)
                return rows
            finally:
                await conn.close()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)


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
                try:
                    job = await persist("observe", lambda r=record: operator.get_job(r.job_id))
                except NotFoundError:
                    record.vanished = True
                    self.errors.append(f"job {record.job_id} ({record.scenario.name}) vanished")
                    continue
                if job.status.is_final and record.steered:
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
        args: list[Any] = [_timestamp(since)]
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
        async with d.client("producer") as producer, d.client("operator") as operator:
            actors = Actors(producer, operator)
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


def _timestamp(epoch: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC)


@dataclass
class Report:
    soak: Soak
    drained: bool
    by_scenario: dict[str, Counter[str]]
    expected: dict[str, str]
    moves: Counter[tuple[str, str]]
    counted: dict[str, float]
    logged: dict[str, int]
    settled_twice: int
    completed_twice: int
    answers: list[dict[str, Any]]
    server_errors: list[dict[str, Any]]
    trace_exports: int
    invariants: str
    unfinished_tasks: int
    failures: list[str]

    @classmethod
    async def gather(cls, soak: Soak, drained: bool) -> Report:
        d = soak.deployment
        by_scenario: dict[str, Counter[str]] = {}
        for record in soak.jobs:
            status = record.final or ("LOST" if record.vanished else "NOT FINAL")
            by_scenario.setdefault(record.scenario.name, Counter())[status] += 1
        expected = {s.name: s.expect.value for s in SCENARIOS}
        rows = await ledger_query(
            d.database_url,
            "SELECT from_status, to_status, reason, sum(n) FROM soak_moves GROUP BY 1, 2, 3",
        )
        moves: Counter[tuple[str, str]] = Counter()
        logged = Counter[str]()
        for frm, to, reason, n in rows:
            moves[(frm or "-", to)] += int(n)
            if to == "IN_PROGRESS":
                logged["claims"] += int(n)
            if to == "COMPLETED":
                logged["completions"] += int(n)
            if frm == "IN_PROGRESS" and to == "RETRIED":
                logged["retries"] += int(n)
            if reason == "lease expired":
                logged["leases reaped"] += int(n)
            if reason == "timed out":
                logged["timeouts"] += int(n)
        [twice] = await ledger_query(
            d.database_url,
            "SELECT count(*) FROM (SELECT lease_id FROM soak_settlements WHERE lease_id IS NOT NULL"
            " GROUP BY lease_id HAVING count(*) > 1) x",
        )
        [completed_twice] = await ledger_query(
            d.database_url,
            "SELECT count(*) FROM (SELECT task_id FROM soak_settlements WHERE to_status = "
            "'COMPLETED' GROUP BY task_id HAVING count(*) > 1) x",
        )
        [unfinished] = await ledger_query(
            d.database_url,
            "SELECT count(*) FROM tasks t JOIN jobs j ON j.id = t.job_id WHERE j.status IN "
            "('COMPLETED', 'FAILED', 'ABORTED') AND t.status NOT IN "
            "('COMPLETED', 'FAILED', 'ABORTED')",
        )
        counted: Counter[str] = Counter()
        names = {
            "claims": "jobnik_task_claims_total",
            "completions": "jobnik_task_completions_total",
            "retries": "jobnik_task_retries_total",
            "leases reaped": "jobnik_leases_reaped_total",
            "timeouts": "jobnik_task_timeouts_total",
        }
        async with httpx.AsyncClient(timeout=30) as http:
            for replica in d.replicas:
                text = (await http.get(f"{replica.url}/metrics")).text
                scrape = Scrape(text)
                for key, name in names.items():
                    counted[key] += scrape.value(name)
        invariants = "hold"
        database = Database(d.database_url)
        try:
            await assert_invariants(database)
        except AssertionError as exc:
            invariants = f"BROKEN: {exc}"
        finally:
            await database.dispose()
        balancer = d.balancer_answers()
        report = cls(
            soak,
            drained,
            by_scenario,
            expected,
            moves,
            dict(counted),
            dict(logged),
            int(twice[0]),
            int(completed_twice[0]),
            balancer["answers"],
            balancer.get("serverErrors", []),
            int(balancer.get("traceExports", 0)),
            invariants,
            int(unfinished[0]),
            [],
        )
        report.failures = report.check()
        return report

    def windows(self, prefix: str, after: float) -> list[tuple[float, float]]:
        """Wall-clock spans of the faults whose kind starts with `prefix`, each until
        `after` seconds past its service's return."""
        offset = time.time() - time.monotonic()
        return [
            (f.started + offset, f.restored + offset + after)
            for f in self.soak.faults
            if f.kind.startswith(prefix)
        ]

    def expected_server_error(self, error: dict[str, Any]) -> bool:
        """503 while the database is away; 502 from the balancer for a request whose
        replica was SIGKILLed while answering it. Nothing else."""
        prefix = {503: "PostgreSQL", 502: "manager"}.get(error["status"])
        at = error["time"]
        return prefix is not None and any(a <= at <= b for a, b in self.windows(prefix, 10))

    def cut_requests(self) -> int:
        return sum(1 for e in self.server_errors if e["status"] == 502)

    def check(self) -> list[str]:
        failures = list(self.soak.errors)
        if not self.drained:
            failures.append("jobs still running after the drain")
        for name, statuses in self.by_scenario.items():
            wrong = {s: n for s, n in statuses.items() if s != self.expected[name]}
            if wrong:
                failures.append(f"{name}: expected {self.expected[name]}, got {wrong}")
        if self.settled_twice or self.completed_twice:
            failures.append(
                f"settled twice: {self.settled_twice} leases; "
                f"completed twice: {self.completed_twice} tasks"
            )
        if self.unfinished_tasks:
            failures.append(f"{self.unfinished_tasks} tasks not final in final jobs")
        if self.invariants != "hold":
            failures.append(f"invariants: {self.invariants}")
        # A move committed by a replica SIGKILLed before it answered is in the log and
        # was never counted (the process died first): at most a batch (a worker's
        # concurrency, 4) per request the balancer saw cut.
        slack = 4 * self.cut_requests()
        for key, value in self.counted.items():
            logged = self.logged.get(key, 0)
            if not logged - slack <= int(value) <= logged:
                failures.append(f"metrics {key} {int(value)} against the event log's {logged}")
        for error in self.server_errors:
            if not self.expected_server_error(error):
                failures.append(f"answer {error['status']} to {error['path']}: {error['body']}")
        for fault in self.soak.faults:
            if fault.recovered is None:
                failures.append(f"no claims within 120 s after {fault.kind}")
        failures.extend(self.memory_growth())
        return failures

    def memory_growth(self) -> list[str]:
        """On a run of 20 minutes or more, the replica never killed holds within 10% of
        its RSS at minute 10."""
        if self.soak.minutes < 20:
            return []
        first = self.soak.deployment.replicas[0].name
        samples = [(at, rss) for at, name, rss in self.soak.memory if name == first and rss]
        at_10 = next((rss for at, rss in samples if at >= 600), None)
        last = samples[-1][1] if samples else None
        if at_10 is None or last is None:
            return [f"{first}: no memory samples"]
        if last > at_10 * 1.1:
            return [
                f"{first}: RSS {last / 2**20:.0f} MiB at the end, {at_10 / 2**20:.0f} at 10 min"
            ]
        return []

    def render(self) -> str:
        soak = self.soak
        out: list[str] = []
        out.append("Jobs by final status (expected in brackets)")
        out.append(f"  {'scenario':<12} {'expected':<10} {'got':<40}")
        for name, statuses in sorted(self.by_scenario.items()):
            got = ", ".join(f"{s} {n}" for s, n in sorted(statuses.items()))
            out.append(f"  {name:<12} {self.expected[name]:<10} {got}")
        deleted = sum(1 for j in soak.jobs if j.deleted)
        out.append(f"  jobs: {len(soak.jobs)}; deleted by retention after ending: {deleted}")
        out.append("")
        out.append("Task moves in the event log")
        for (frm, to), n in sorted(self.moves.items()):
            out.append(f"  {frm:>12} -> {to:<12} {n}")
        out.append(
            f"  settled twice: {self.settled_twice} leases, {self.completed_twice} tasks; "
            f"tasks not final in final jobs: {self.unfinished_tasks}"
        )
        out.append("")
        out.append("Faults (recovery: from the fault until claims flow again)")
        kinds = Counter(f.kind for f in soak.faults)
        for n, fault in enumerate(soak.faults, 1):
            at = fault.started - soak.started
            what = f"{fault.kind}" + (f" [{fault.stage_type}]" if fault.stage_type else "")
            took = f"{fault.recovered:.1f} s" if fault.recovered is not None else "NONE"
            out.append(f"  {n:>3}  t={at:>6.0f} s  {what:<42} recovered in {took}")
        out.append(f"  {len(soak.faults)} faults of {len(kinds)} kinds")
        out.append("")
        out.append("Answers the clients saw (through the balancer)")
        roles: dict[str, Counter[int]] = {}
        for a in self.answers:
            roles.setdefault(a["role"], Counter())[a["status"]] += a["count"]
        for role, counts in sorted(roles.items()):
            out.append(f"  {role:<10} " + ", ".join(f"{s}: {n}" for s, n in sorted(counts.items())))
        for e in self.server_errors[:10]:
            expected = "expected" if self.expected_server_error(e) else "UNEXPECTED"
            at = e["time"] - (time.time() - time.monotonic()) - soak.started
            out.append(f"  t={at:.0f} s {e['status']} ({expected}) {e['path']}: {e['body'][:90]}")
        out.append(f"  span exports received: {self.trace_exports}")
        out.append("")
        out.append(
            "Metrics counters (both replicas) against the event log "
            f"({self.cut_requests()} requests cut by a SIGKILL)"
        )
        for key, value in self.counted.items():
            out.append(f"  {key:<14} counted {int(value):>7}   logged {self.logged.get(key, 0):>7}")
        out.append("")
        out.append(f"Invariants: {self.invariants}")
        out.append("")
        out.append("Managers' memory (RSS, MiB)")
        by_replica: dict[str, list[tuple[float, int | None]]] = {}
        for at, name, rss in soak.memory:
            by_replica.setdefault(name, []).append((at, rss))
        for name, samples in by_replica.items():
            marks = [
                f"t={at:.0f}s {rss / 2**20:.0f}" if rss else f"t={at:.0f}s -"
                for at, rss in samples[:: max(1, len(samples) // 8)]
            ]
            out.append(f"  {name}: " + ", ".join(marks))
        out.append("")
        out.append("RESULT: " + ("PASS" if not self.failures else "FAIL"))
        out.extend(f"  - {f}" for f in self.failures)
        return "\n".join(out)

    def as_json(self) -> str:
        return json.dumps(
            {
                "failures": self.failures,
                "faults": [f.__dict__ for f in self.soak.faults],
                "by_scenario": {k: dict(v) for k, v in self.by_scenario.items()},
                "counted": self.counted,
                "logged": self.logged,
            },
            default=str,
        )


AMQP_URL = os.environ.get("JOBNIK_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672/")


async def run_soak(
    minutes: float, logs: Path, *, fault_every: float | None = None, retention: str = "90s"
) -> Report:
    """Start the production profile on a PostgreSQL server of the soak's own under
    `logs`, soak it for `minutes`, and answer the report."""
    if fault_every is None:
        fault_every = max(15.0, minutes * 60 / 24)
    with private_postgres(logs / "postgres") as server:
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
