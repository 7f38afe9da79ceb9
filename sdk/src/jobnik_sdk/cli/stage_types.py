"""`jobnik stage-types`: the work waiting and running, by stage type; `pause` and
`resume` one."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from .._client import JobnikClient
from . import output
from ._run import Json, Manager, Token, Url, fetched, run

app = typer.Typer(
    help="The queues by stage type (with no command); pause or resume one.",
    invoke_without_command=True,
)
StageType = Annotated[str, typer.Argument(metavar="TYPE", help="The stage type.")]


@app.callback()
def stage_types(
    ctx: typer.Context, url: Url = None, token: Token = None, json: Json = False
) -> None:
    """Each stage type with work in a stage that may run, or paused: tasks waiting to be
    claimed, in flight, with a lease about to run out, failed, how long the oldest has
    waited, and whether it is paused."""
    if ctx.invoked_subcommand is not None:
        return

    loads = fetched(url, token, json, lambda client: client.list_stage_types())
    if loads is None:
        return
    table = Table(show_edge=False)
    table.add_column("stage type", min_width=10, overflow="fold")
    for column in ("waiting", "in flight", "expiring", "failed", "oldest waiting"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("paused", no_wrap=True)
    for load in loads:
        oldest = load.get("oldestWaitingSeconds")
        table.add_row(
            escape(load["type"]),
            str(load["waiting"]),
            str(load["inFlight"]),
            str(load["expiring"]),
            str(load["failed"]),
            "-" if oldest is None else f"{oldest:.0f} s",
            "PAUSED" if load.get("paused") else "-",
        )
    output.stdout().print(table)


@app.command("pause")
def pause(stage_type: StageType, url: Url = None, token: Token = None) -> None:
    """Hand out none of the stage type's tasks, in any job, until it is resumed (running
    tasks go on)."""

    async def work(client: JobnikClient) -> dict[str, Any]:
        return await client.pause_stage_type(stage_type)

    done = run(Manager.chosen(url, token), work)
    output.stdout().print(f"stage type {escape(done['type'])} paused", soft_wrap=True)


@app.command("resume")
def resume(stage_type: StageType, url: Url = None, token: Token = None) -> None:
    """Hand the stage type's tasks out again."""

    async def work(client: JobnikClient) -> dict[str, Any]:
        return await client.resume_stage_type(stage_type)

    done = run(Manager.chosen(url, token), work)
    output.stdout().print(f"stage type {escape(done['type'])} resumed", soft_wrap=True)
