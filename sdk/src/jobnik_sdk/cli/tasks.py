"""`jobnik tasks list --stage STAGE`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from .._client import JobnikClient
from .._models import Task, TaskStatus
from . import output, steer
from ._run import Json, Manager, Token, Url, run

app = typer.Typer(help="List a stage's tasks; cancel one.", no_args_is_help=True)


@app.command("list")
def list_tasks(
    stage_id: Annotated[str, typer.Option("--stage", metavar="STAGE", help="The stage's id.")],
    status: Annotated[
        TaskStatus | None, typer.Option("--status", help="Only tasks in this status.")
    ] = None,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """Every task of the stage, in creation order."""

    async def work(client: JobnikClient) -> list[Task]:
        await client.get_stage(stage_id)  # an unknown stage is "not found", not no tasks
        return [task async for task in client.iter_tasks(stage_id=stage_id, status=status)]

    tasks = run(Manager.chosen(url, token), work)
    if json:
        output.print_json(tasks)
        return
    table = Table(show_edge=False)
    table.add_column("id", no_wrap=True, min_width=36)
    table.add_column("status", no_wrap=True)
    table.add_column("attempts", justify="right", no_wrap=True)
    table.add_column("progress", justify="right", no_wrap=True)
    table.add_column("worker", min_width=8, overflow="fold")
    table.add_column("updated (UTC)", no_wrap=True)
    table.add_column("reason", min_width=8, overflow="fold")
    for task in tasks:
        table.add_row(
            str(task.id),
            output.status(task.status),
            f"{task.attempts}/{task.max_attempts}",
            output.percent(task.progress),
            escape(task.worker or "-"),
            output.when(task.update_time),
            escape(task.reason or ""),
        )
    output.stdout().print(table)
    if not tasks:
        output.stderr().print("no tasks")


app.command("cancel")(steer.cancel)
