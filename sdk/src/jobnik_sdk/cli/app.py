"""The `jobnik` Typer app: its command groups and commands."""

from __future__ import annotations

from typing import Annotated

import typer

from .._version import __version__
from . import (
    create,
    dead_letters,
    events,
    jobs,
    schedules,
    stage_types,
    steer,
    tasks,
    wait,
    workers,
)
from ._run import TOKEN_HELP, URL_HELP, given_before_the_command

app = typer.Typer(
    name="jobnik",
    help=(
        "Operate a Jobnik manager: list and show jobs, approve stages, pause, resume, "
        "abort, retry, delete, reprioritise, cancel tasks, follow events, wait, see the "
        "queues by stage type (and pause one) and the workers. --url "
        "(JOBNIK_URL) and --token (JOBNIK_TOKEN) go before the command or after it. Exit "
        "codes: 0 ok, 1 the waited-for job FAILED or ABORTED, 2 usage, 3 not found, 4 "
        "refused by the manager, 5 manager unreachable, 6 wait timed out."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(shown: bool) -> None:
    if shown:
        typer.echo(f"jobnik {__version__}")
        raise typer.Exit()


@app.callback()
def _before_the_command(
    url: Annotated[
        str | None, typer.Option("--url", envvar="JOBNIK_URL", help=URL_HELP, show_default=False)
    ] = None,
    token: Annotated[
        str | None,
        typer.Option("--token", envvar="JOBNIK_TOKEN", show_envvar=True, help=TOKEN_HELP),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    given_before_the_command(url, token)


app.add_typer(jobs.app, name="jobs")
app.add_typer(tasks.app, name="tasks")
app.command("approve")(steer.approve)
app.command("pause")(steer.pause)
app.command("resume")(steer.resume)
app.command("abort")(steer.abort)
app.command("priority")(steer.priority)
app.command("retry")(steer.retry)
app.command("delete")(steer.delete)
app.command("events")(events.events)
app.command("create")(create.create)
app.command("wait")(wait.wait)
app.add_typer(stage_types.app, name="stage-types")
app.add_typer(dead_letters.app, name="dead-letters")
app.add_typer(schedules.app, name="schedules")
app.command("workers")(workers.workers)


def main() -> None:
    """The `jobnik` console script."""
    app()
