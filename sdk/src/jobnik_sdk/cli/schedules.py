"""`jobnik schedules`: the schedules and their next times; `put` one from a job file,
`show` one with its latest runs, `pause`, `resume`, `run` it now or `delete` it."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from .._client import JobnikClient
from .._models import Page, Schedule, ScheduleRun
from . import output
from ._run import Json, Limit, Manager, Token, Url, run
from .create import read_body

app = typer.Typer(
    help="The schedules (with no command); put, show, pause, resume, run or delete one.",
    invoke_without_command=True,
)
Name = Annotated[str, typer.Argument(metavar="NAME", help="The schedule's name.")]


def timing(s: Schedule) -> str:
    if s.cron is not None:
        return s.cron if s.timezone == "UTC" else f"{s.cron} ({s.timezone})"
    return f"every {s.interval_seconds:g} s"


@app.callback()
def schedules(
    ctx: typer.Context,
    limit: Limit = 50,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """The schedules by name: when each runs, its next and last time, how many jobs it
    made and how many times made none, and whether it is paused."""
    if ctx.invoked_subcommand is not None:
        return

    async def work(client: JobnikClient) -> Page[Schedule]:
        return await client.list_schedules(page_size=limit)

    page = run(Manager.chosen(url, token), work)
    if json:
        output.print_json(page)
        return
    table = Table(show_edge=False, title=f"{page.total} schedules", title_justify="left")
    table.add_column("name", overflow="fold")
    table.add_column("when", overflow="fold")
    for column in ("next", "last", "paused"):
        table.add_column(column, no_wrap=True)
    for column in ("jobs", "skipped"):
        table.add_column(column, no_wrap=True, justify="right")
    for s in page.items:
        table.add_row(
            escape(s.name),
            escape(timing(s)),
            output.when(s.next_run_at),
            output.when(s.last_run_at),
            "PAUSED" if s.paused else "-",
            str(s.run_count),
            str(s.skipped_count),
        )
    output.stdout().print(table)


@app.command("put")
def put(
    name: Name,
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="The job to make, as `jobnik create` takes it.")
    ],
    cron: Annotated[
        str | None, typer.Option("--cron", help="5 fields (6: seconds first), or @daily, ...")
    ] = None,
    every: Annotated[
        float | None, typer.Option("--every", min=1, help="Seconds between runs (not with --cron).")
    ] = None,
    tz: Annotated[str, typer.Option("--tz", help="IANA time zone of --cron.")] = "UTC",
    overlap: Annotated[
        Literal["skip", "allow"], typer.Option("--overlap", help="While the last job runs.")
    ] = "skip",
    missed: Annotated[
        Literal["one", "skip"], typer.Option("--missed", help="Times missed in a downtime.")
    ] = "one",
    description: Annotated[str | None, typer.Option("--description")] = None,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """Create the schedule NAME, or replace it, making the job in FILE at each time."""
    body = read_body(file)
    interval = None if every is None else timedelta(seconds=every)

    async def work(client: JobnikClient) -> Schedule:
        return await client.put_schedule(
            name,
            body,
            cron=cron,
            interval=interval,
            timezone=tz,
            overlap_policy=overlap,
            missed_runs=missed,
            description=description,
        )

    made = run(Manager.chosen(url, token), work)
    if json:
        output.print_json(made)
        return
    output.stdout().print(
        f"{escape(made.name)}: {escape(timing(made))}, next {output.when(made.next_run_at)} UTC",
        soft_wrap=True,
    )


@app.command("show")
def show(name: Name, url: Url = None, token: Token = None, json: Json = False) -> None:
    """The schedule and its latest runs: each time's job, or why it made none."""

    async def work(client: JobnikClient) -> tuple[Schedule, Page[ScheduleRun]]:
        return await client.get_schedule(name), await client.list_schedule_runs(name, page_size=20)

    schedule, runs = run(Manager.chosen(url, token), work)
    if json:
        output.print_json({**output.as_json(schedule), "runs": output.as_json(runs.items)})
        return
    console = output.stdout()
    title = f"[bold]{escape(schedule.name)}[/bold]  {escape(timing(schedule))}"
    console.print(title, soft_wrap=True)
    if schedule.description:
        console.print(escape(schedule.description), soft_wrap=True)
    state = "PAUSED" if schedule.paused else f"next {output.when(schedule.next_run_at)} UTC"
    console.print(
        f"{state}; {schedule.run_count} jobs made, {schedule.skipped_count} times skipped; "
        f"overlap {schedule.overlap_policy}, missed runs {schedule.missed_runs}",
        soft_wrap=True,
    )
    table = Table(show_edge=False, title=f"{runs.total} runs", title_justify="left")
    for column in ("time", "job", "skipped", "made"):
        table.add_column(column, no_wrap=True)
    for r in runs.items:
        table.add_row(
            output.when(r.run_at) + (" (run now)" if r.manual else ""),
            "-" if r.job_id is None else output.job_id(r.job_id, console),
            r.skipped or "-",
            output.when(r.made_at),
        )
    console.print(table)


def _done(what: str, name: str) -> None:
    output.stdout().print(f"{what} {escape(name)}", soft_wrap=True)


@app.command("pause")
def pause(name: Name, url: Url = None, token: Token = None) -> None:
    """Make no job until it is resumed."""
    run(Manager.chosen(url, token), lambda client: client.pause_schedule(name))
    _done("paused", name)


@app.command("resume")
def resume(name: Name, url: Url = None, token: Token = None) -> None:
    """Go on from the first time after now."""
    run(Manager.chosen(url, token), lambda client: client.resume_schedule(name))
    _done("resumed", name)


@app.command("run")
def run_now(name: Name, url: Url = None, token: Token = None) -> None:
    """Make the schedule's job now and print its id."""
    made = run(Manager.chosen(url, token), lambda client: client.run_schedule(name))
    output.stdout().print(str(made.job_id) if made.job_id else f"none made: {made.skipped}")


@app.command("delete")
def delete(name: Name, url: Url = None, token: Token = None) -> None:
    """Delete the schedule and its runs; the jobs it made stay."""
    run(Manager.chosen(url, token), lambda client: client.delete_schedule(name))
    _done("deleted", name)
