"""A worker's health check: `python -m jobnik_sdk.health FILE [--max-age SECONDS]` exits
0 while a Worker given `health_file=FILE` runs with a responsive event loop, 1 otherwise
(the file is missing or older than --max-age, default 30 s). For a Dockerfile's
HEALTHCHECK or a Kubernetes exec probe."""

from __future__ import annotations

import argparse
import sys

from ._health import HEALTH_MAX_AGE, age


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobnik_sdk.health", description=__doc__)
    parser.add_argument("file", help="the Worker's health_file")
    parser.add_argument("--max-age", type=float, default=HEALTH_MAX_AGE, metavar="SECONDS")
    args = parser.parse_args(argv)
    seconds = age(args.file)
    if seconds is None:
        print(f"unhealthy: {args.file} does not exist (the worker is not running)")
        return 1
    if seconds > args.max_age:
        print(f"unhealthy: {args.file} was last touched {seconds:.0f} s ago")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
