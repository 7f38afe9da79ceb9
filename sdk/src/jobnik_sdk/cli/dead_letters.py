"""`jobnik dead-letters`: the tasks that failed for good, the latest first; `retry` or
`discard` them, by task id or by stage type."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from .._client import JobnikClient
from .._models import DeadLetter, DeadLettersHandled, Page
from . import output
from ._run import Json, Limit, Manager, Token, Url, run

app = typer.Typer(
    help="The tasks that failed for good (with no command); retry or discard them.",
    invoke_without_command=True,
)
TypeOption = Annotated[
    str | None, typer.Option("--type", "-t", help="Only those of this stage type.")
]
TaskIds = Annotated[
    list[str] | None,
    typer.Argument(metavar="[TASK]...", help="Task ids (full).", show_default=False),
]


@app.callback()
def dead_letters(
    ctx: typer.Context,
    stage_type: TypeOption = None,
    limit: Limit = 20,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """The latest tasks that failed for good: their job, stage type, attempts and the
    reason of their last failure."""
    if ctx.invoked_subcommand is not None:
        return

    async def work(client: JobnikClient) -> Page[DeadLetter]:
        return await client.list_dead_letters(stage_type=stage_type, page_size=limit)

    page = run(Manager.chosen(url, token), work)
    if json:
        output.print_json(page)
        return
    table = Table(show_edge=False, title=f"{page.total} dead letters", title_justify="left")
    for column in ("task", "job", "stage type", "attempts", "ended", "last error"):
        table.add_column(column, overflow="fold", no_wrap=column in ("task", "attempts"))
    for d in page.items:
        last = d.errors[-1].reason if d.errors else d.task.reason
        table.add_row(
            str(d.task.id),
            escape(d.job_name),
            escape(d.stage_type),
            str(d.task.attempts),
            output.when(d.task.end_time),
            escape(last or ""),
        )
    output.stdout().print(table)


def _handled(verb: str, done: DeadLettersHandled) -> None:
    console = output.stdout()
    console.print(f"{verb} {len(done.tasks)} dead letters", soft_wrap=True)
    for skipped in done.skipped:
        console.print(f"skipped {skipped.task_id}: {escape(skipped.message)}", soft_wrap=True)


def _chosen(task_ids: list[str] | None, stage_type: str | None) -> None:
    if bool(task_ids) == (stage_type is not None):
        raise typer.BadParameter("give task ids or --type, one of them")


@app.command("retry")
def retry(
    task_ids: TaskIds = None, stage_type: TypeOption = None, url: Url = None, token: Token = None
) -> None:
    """Replay the FAILED jobs of these dead letters (or of every one of --type): their
    failed stages run again."""
    _chosen(task_ids, stage_type)

    async def work(client: JobnikClient) -> DeadLettersHandled:
        return await client.retry_dead_letters(task_ids or None, stage_type=stage_type)

    _handled("retried", run(Manager.chosen(url, token), work))


@app.command("discard")
def discard(
    task_ids: TaskIds = None, stage_type: TypeOption = None, url: Url = None, token: Token = None
) -> None:
    """Take these dead letters (or every one of --type) off the list, without retrying
    them."""
    _chosen(task_ids, stage_type)

    async def work(client: JobnikClient) -> DeadLettersHandled:
        return await client.discard_dead_letters(task_ids or None, stage_type=stage_type)

    _handled("discarded", run(Manager.chosen(url, token), work))
