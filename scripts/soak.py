"""Soak the production profile under faults: two manager replicas behind a balancer on
a PostgreSQL server of the soak's own, RabbitMQ, authentication on, metrics, JSON logs,
traces, retention, and template workers of three stage types; a realistic mix of jobs
for --minutes while faults are injected every --fault-every seconds; then a drain and
the checks, printed as tables (support/soak.py says what is checked).

    uv run python scripts/soak.py --minutes 30

Exits 1 when a check fails. Logs and the deployment's files go to --logs (a temporary
folder unless given). Needs the PostgreSQL server binaries and a RabbitMQ on
JOBNIK_TEST_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/), restarted with
rabbitmqctl: run it on a machine of its own, not beside other tests.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.soak import run_soak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30, help="workload and faults")
    parser.add_argument(
        "--fault-every",
        type=float,
        default=None,
        help="seconds between faults (default: "
        "about 24 faults over the run, never more often than every 15 s)",
    )
    parser.add_argument("--logs", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logs = args.logs or Path(tempfile.mkdtemp(prefix="jobnik-soak-"))
    print(f"logs in {logs}", flush=True)
    report = asyncio.run(run_soak(args.minutes, logs, fault_every=args.fault_every))
    print(report.render())
    if args.json:
        args.json.write_text(report.as_json())
    raise SystemExit(0 if not report.failures else 1)


if __name__ == "__main__":
    main()
