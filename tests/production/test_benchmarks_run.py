"""The benchmark scripts, each at a size that runs in seconds, on every CI run.

docs/performance.md's figures come from scripts/; a script that no longer runs against
the code it measures (a spec key it no longer passes, a mode that lost its route) is
found here rather than by the next person who needs a figure. Each script checks its own
drains (every task COMPLETED once, DESIGN.md's invariants) and exits non-zero when one
fails, so a run that ends with status 0 and prints its figures is the outcome held.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
# The databases of fixed names that scripts leave for inspection (the others drop theirs).
LEFT_BY_SCRIPTS = ("jobnik_latency", "jobnik_bench_scrape", "jobnik_bench_create")


async def _drop_left() -> None:
    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    try:
        for name in LEFT_BY_SCRIPTS:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(autouse=True, scope="module")
def _clear_up() -> Iterator[None]:
    yield
    asyncio.run(_drop_left())


def run_script(*argv: str, timeout: float = 500) -> str:
    """Run scripts/<argv[0]> with this interpreter; its output, once it ended with 0."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBNIK_")}
    done = subprocess.run(
        [sys.executable, "-u", str(ROOT / "scripts" / argv[0]), *argv[1:]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    return output


# bench_drain.py's summary columns after the mode's label.
COLUMNS = ("tasks", "tasks/s", "x ceil", "span", "mgr", "wkr", "pg", "WAL", "commits", "stmts")


def row_of(output: str, label: str) -> dict[str, str]:
    """The figures of the summary table's row for `label`, by column."""
    for line in output.splitlines():
        if line.strip().startswith(label):
            return dict(zip(COLUMNS, line.strip()[len(label) :].split(), strict=True))
    raise AssertionError(f"no row {label!r} in:\n{output}")


def rate_of(output: str, label: str) -> float:
    return float(row_of(output, label)["tasks/s"].replace(",", ""))


def test_the_drain_benchmark_runs_every_mode() -> None:
    modes = "create,sdkcreate,sdk,v1,v1read,batch,ojspush,ojs"
    output = run_script(
        "bench_drain.py",
        *("--modes", modes, "--tasks", "600", "--v1-tasks", "300", "--warmup", "20"),
        *("--ceiling-seconds", "1", "--ceiling-rows", "20000", "--settle", "0"),
    )
    for label in (
        "sdk Worker, concurrency 16",
        "v1 dequeue + PUT status, 16 loops",
        "v1 dequeue + GET stage, job + PUT, 16 loops",
        "batch claim(100) + report_many (no tasks), 4 loops",
    ):
        assert rate_of(output, label) > 0, output
        # A drain writes at least its event rows: the WAL it made is counted.
        assert float(row_of(output, label)["WAL"].replace(",", "")) > 0, output


def test_the_drain_benchmark_runs_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'drain.db'}"
    output = run_script(
        "bench_drain.py",
        *("--url", url, "--modes", "sdk,v1", "--tasks", "400", "--v1-tasks", "200"),
        *("--warmup", "20", "--ceiling-seconds", "1", "--ceiling-rows", "20000"),
    )
    assert rate_of(output, "sdk Worker, concurrency 16") > 0, output
    assert rate_of(output, "v1 dequeue + PUT status, 16 loops") > 0, output


def test_the_scale_benchmark_runs_each_scenario() -> None:
    million = run_script(
        "bench_scale.py", "million", *("--tasks", "3000", "--chunk", "1000", "--workers", "2")
    )
    assert "last tenth / first tenth" in million and "invariants hold" in million, million
    retention = run_script(
        "bench_scale.py",
        "retention",
        *("--history", "3000", "--job-tasks", "100", "--drain-tasks", "600"),
    )
    assert re.search(r"retention deleted [\d,]+ tasks", retention), retention
    assert "invariants hold" in retention, retention
    idle = run_script(
        "bench_scale.py",
        "idle",
        *("--idle-workers", "16", "--types", "4", "--workers", "2"),
        *("--seconds", "2", "--probes", "8"),
    )
    assert "p99" in idle, idle


def test_the_latency_benchmark_runs_both_ways(amqp_url: str) -> None:
    output = run_script("bench_latency.py", "--tasks", "12", "--modes", "push,longpoll")
    assert re.search(r"RabbitMQ wake-ups\s+12\s", output), output
    assert re.search(r"long-poll claims\s+12\s", output), output


def test_the_scrape_benchmark_runs() -> None:
    output = run_script("bench_scrape.py", "--tasks", "20000", "--scrapes", "5")
    assert re.search(r"ratio: [\d.]+x", output), output


def test_the_latency_timeline_runs() -> None:
    output = run_script("latency_timeline.py", "--tasks", "12")
    assert "ms from the create request's start, medians of" in output, output


def test_the_smaller_benchmarks_run() -> None:
    calls = run_script("bench_calls.py", "--calls", "20", "--rounds", "1")
    assert re.search(r"round 1: .* p50 [\d.]+ ms", calls), calls
    reads = run_script("bench_reads.py", "--tasks", "2000", "--seconds", "1")
    assert re.search(r"analyzed\s+job\s+[\d,]+", reads), reads
    for backend in ("postgres", "sqlite"):
        made = run_script("bench_create.py", "--backend", backend, "--tasks", "500", "--runs", "1")
        assert re.search(r"POST /v1/jobs\s+500 tasks .* tasks/s", made), made
