"""Where a task's latency goes: `bench_latency.py` run with marks in the manager and the
Worker (scripts/latency_marks), then, for each task, the time of each mark from the
start of its create request, the median over the tasks whose marks came in the most
common order.

    uv run python scripts/latency_timeline.py                      # long poll, 200 tasks
    uv run python scripts/latency_timeline.py --modes push --tasks 150

The marks cost the processes a little (a list append per call), so the figures are a
few percent above an unmarked run's; compare them with each other, not with it.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WINDOW_NS = 15_000_000  # a task's marks: those within 15 ms of its create's start


def read_marks(folder: Path) -> list[tuple[int, str]]:
    marks = []
    for path in folder.glob("marks.*"):
        for line in path.read_text(encoding="utf-8").splitlines():
            at, label = line.split(" ", 1)
            marks.append((int(at), label))
    return sorted(marks)


def timeline(marks: list[tuple[int, str]], until: str) -> tuple[int, list[tuple[str, float]]]:
    """The median time of each mark after a create's start, over the tasks whose marks
    (up to the first `until`) came in the most common order; and how many those were."""
    tasks = []
    for i, (start, label) in enumerate(marks):
        if label != "create>":
            continue
        seen = []
        for at, other in marks[i:]:
            if at - start > WINDOW_NS:
                break
            seen.append((at, other))
            if other == until:
                break
        tasks.append(seen)
    orders = collections.Counter(tuple(label for _, label in seen) for seen in tasks)
    if not orders:
        return 0, []
    common, count = orders.most_common(1)[0]
    chosen = [seen for seen in tasks if tuple(label for _, label in seen) == common]
    rows = [
        (label, statistics.median((seen[n][0] - seen[0][0]) / 1e6 for seen in chosen))
        for n, label in enumerate(common)
    ]
    return count, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="longpoll", help="one of bench_latency's modes")
    parser.add_argument("--tasks", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jobnik-marks-") as folder:
        env = {
            **os.environ,
            "MARKS_OUT": str(Path(folder) / "marks"),
            "PYTHONPATH": os.pathsep.join(
                [str(HERE / "latency_marks"), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
        }
        command = [sys.executable, str(HERE / "bench_latency.py")]
        command += ["--modes", args.modes, "--tasks", str(args.tasks)]
        subprocess.run(command, env=env, check=True)
        count, rows = timeline(read_marks(Path(folder)), until="W.handler>")
    print(f"\nms from the create request's start, medians of {count} tasks alike:")
    for label, ms in rows:
        print(f"  {ms:7.2f}  {label}")


if __name__ == "__main__":
    main()
