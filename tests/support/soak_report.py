"""What a soak found: the tables it prints and the checks behind its verdict."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from jobnik_manager.db.engine import Database

from .invariants import assert_invariants
from .scrape import Scrape
from .soak_ledger import ledger_query
from .soak_scenarios import SCENARIOS

if TYPE_CHECKING:
    from .soak import Soak


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
    unfinished: list[str]  # the first few of them, with their jobs' and stages' statuses
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
        # Each such task with its job, its stage and its moves, to tell what happened.
        unfinished = await ledger_query(
            d.database_url,
            "SELECT j.name, j.status, s.type, s.status, t.id, t.status, (SELECT string_agg("
            "coalesce(e.from_status, '-') || '>' || e.to_status || coalesce('(' || e.reason"
            " || ')', ''), ' ' ORDER BY e.seq) FROM events e WHERE e.entity_id = t.id"
            " AND e.to_status IS NOT NULL) FROM tasks t JOIN jobs j ON j.id = t.job_id"
            " JOIN stages s ON s.id = t.stage_id WHERE j.status IN ('COMPLETED', 'FAILED',"
            " 'ABORTED') AND t.status NOT IN ('COMPLETED', 'FAILED', 'ABORTED')",
        )
        counted: dict[str, float] = {}
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
                    counted[key] = counted.get(key, 0.0) + scrape.value(name)
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
            len(unfinished),
            [
                f"job {name} {job} / stage {kind} {stage} / task {task_id} {task}: {moves}"
                for name, job, kind, stage, task_id, task, moves in unfinished[:5]
            ],
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
        # Claims commit without waiting for their WAL flush (docs/production.md): a
        # PostgreSQL crash may lose the last of them, counted but gone from the log, and
        # their tasks are claimed again. Each such claim costs its worker a refused
        # report or heartbeat (409), so those bound how many the log may lack.
        crashed = any(f.kind == "PostgreSQL restart (immediate)" for f in self.soak.faults)
        refused = sum(
            a["count"] for a in self.answers if a["role"] == "worker" and a["status"] == 409
        )
        for key, value in self.counted.items():
            logged = self.logged.get(key, 0)
            lost = refused if key == "claims" and crashed else 0
            if not logged - slack <= int(value) <= logged + lost:
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
        w = max([len("scenario"), *(len(name) for name in self.by_scenario)])
        out.append(f"  {'scenario':<{w}} {'expected':<10} {'got':<40}")
        for name, statuses in sorted(self.by_scenario.items()):
            got = ", ".join(f"{s} {n}" for s, n in sorted(statuses.items()))
            out.append(f"  {name:<{w}} {self.expected[name]:<10} {got}")
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
        out.extend(f"    {line}" for line in self.unfinished)
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
