"""`jobnik stage-types`: the work waiting and running, by stage type."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from .._client import JobnikClient
from . import output
from ._run import Json, Manager, Token, Url, run


def stage_types(url: Url = None, token: Token = None, json: Json = False) -> None:
    """Each stage type with work in a stage that may run: tasks waiting to be claimed, in
    flight, with a lease about to run out, failed, and how long the oldest has waited."""

    async def work(client: JobnikClient) -> list[dict[str, Any]]:
        return await client.list_stage_types()

    loads = run(Manager.chosen(url, token), work)
    if json:
        output.print_json(loads)
        return
    table = Table(show_edge=False)
    table.add_column("stage type", min_width=10, overflow="fold")
    for column in ("waiting", "in flight", "expiring", "failed", "oldest waiting"):
        table.add_column(column, justify="right", no_wrap=True)
    for load in loads:
        oldest = load.get("oldestWaitingSeconds")
        table.add_row(
            escape(load["type"]),
            str(load["waiting"]),
            str(load["inFlight"]),
            str(load["expiring"]),
            str(load["failed"]),
            "-" if oldest is None else f"{oldest:.0f} s",
        )
    output.stdout().print(table)
