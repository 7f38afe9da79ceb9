"""One SDK call's cost three ways: `GET /liveness` on a kept connection to a served
manager, through the SDK's own writing of the request (jobnik_sdk/_direct.py), through
httpx's client over the SDK's transport, and through httpx's client and transport.

    uv run python scripts/bench_calls.py [--calls 500] [--rounds 2]

Prints the p50 and p90 of each way, round by round (the ways alternate within a round).
A manager on a PostgreSQL database of its own, dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable

import httpx
from bench_drain import served

from jobnik_sdk import JobnikClient

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/jobnik_calls_{pid}"


async def timed(call: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    for _ in range(100):  # connections made, code paths warm
        await call()
    took = []
    for _ in range(calls):
        began = time.perf_counter()
        await call()
        took.append(time.perf_counter() - began)
    return sorted(took)


async def main(args: argparse.Namespace) -> None:
    async with served(PG.format(pid=os.getpid())) as manager:
        for round_ in range(1, args.rounds + 1):
            async with (
                JobnikClient(manager.base) as sdk,
                JobnikClient(manager.base) as through_client,
                JobnikClient(manager.base, transport=httpx.AsyncHTTPTransport()) as httpx_own,
            ):
                through_client._http._direct = None  # every call through httpx's client
                ways = {
                    "written by the SDK": sdk,
                    "httpx client, SDK transport": through_client,
                    "httpx client and transport": httpx_own,
                }
                for name, client in ways.items():
                    ms = [
                        1000 * t
                        for t in await timed(
                            lambda c=client: c._http.request("GET", "/liveness"), args.calls
                        )
                    ]
                    p90 = statistics.quantiles(ms, n=10)[8]
                    print(
                        f"round {round_}: {name:<28} p50 {statistics.median(ms):.3f} ms, "
                        f"p90 {p90:.3f} ms",
                        flush=True,
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    asyncio.run(main(parser.parse_args()))
