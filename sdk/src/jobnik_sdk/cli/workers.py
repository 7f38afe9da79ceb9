"""`jobnik workers`: the workers claiming now, what they claim and hold."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.markup import escape
from rich.table import Table

from . import output
from ._run import Json, Token, Url, fetched


def workers(url: Url = None, token: Token = None, json: Json = False) -> None:
    """Each named worker seen claiming within the manager's window (a minute by default)
    or holding a task: its stage types, tasks in flight, how long ago it was last seen,
    when it was first seen (UTC) and its token."""

    seen = fetched(url, token, json, lambda client: client.list_workers())
    if seen is None:
        return
    table = Table(show_edge=False)
    table.add_column("worker", min_width=8, overflow="fold")
    table.add_column("stage types", min_width=8, overflow="fold")
    table.add_column("in flight", justify="right", no_wrap=True)
    table.add_column("last seen", justify="right", no_wrap=True)
    table.add_column("first seen (UTC)", min_width=10, overflow="fold")
    table.add_column("token", min_width=5, overflow="fold")
    now = datetime.now(UTC)
    for worker in seen:
        first = worker.get("firstSeen")
        ago = (now - datetime.fromisoformat(worker["lastSeen"])).total_seconds()
        table.add_row(
            escape(worker["name"]),
            escape(", ".join(worker["stageTypes"])),
            str(worker["inFlight"]),
            f"{max(ago, 0):.0f} s ago",
            output.when(datetime.fromisoformat(first) if first else None),
            escape(worker.get("principal") or "-"),
        )
    output.stdout().print(table)
