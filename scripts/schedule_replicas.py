"""A schedule every minute on the production profile (two manager replicas behind one
URL, PostgreSQL, RabbitMQ, auth on) for --minutes, the first replica killed in the
middle and restarted a minute later; prints each run's time and job, and what breaks
"one job a minute, none twice, none lost" (exit 1 if anything does).

    uv run python scripts/schedule_replicas.py --minutes 10

Needs the PostgreSQL of the tests (JOBNIK_TEST_POSTGRES_URL) and RabbitMQ
(JOBNIK_TEST_AMQP_URL); makes a database of its own there and drops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import AMQP_URL, POSTGRES_URL, _admin
from tests.support.deployment import deployment
from tests.support.schedule_replicas import run_across_replicas


async def main(minutes: float, logs: Path) -> int:
    url = f"{POSTGRES_URL}_schedules_{uuid.uuid4().hex[:8]}"
    name = url.rpartition("/")[2]
    await _admin(url, f'CREATE DATABASE "{name}"')
    try:
        with deployment("production", logs, postgres_url=url, amqp_url=AMQP_URL) as d:
            half = minutes * 60 / 2
            outcome = await run_across_replicas(
                d, "* * * * *", timedelta(minutes=1), before=half - 30, down=60, after=half - 30
            )
    finally:
        await _admin(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(
        f"schedule every minute for {outcome.elapsed / 60:.1f} minutes; replica 1 killed "
        f"at {(minutes * 60 / 2 - 30) / 60:.1f} min, restarted 60 s later"
    )
    print(outcome.listing())
    print(f"{len(outcome.runs)} runs, {len(outcome.job_ids)} jobs of the template's name")
    problems = outcome.problems()
    print("\n".join(problems) if problems else "one job a minute, none twice, none lost")
    return 1 if problems else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--logs", type=Path, default=None)
    args = parser.parse_args()
    logs = args.logs or Path(tempfile.mkdtemp(prefix="jobnik-schedules-"))
    print(f"logs in {logs}", flush=True)
    raise SystemExit(asyncio.run(main(args.minutes, logs)))
