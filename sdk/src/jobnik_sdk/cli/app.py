"""The `jobnik` Typer app: its command groups and commands."""

from __future__ import annotations

import typer

from . import create, events, jobs, steer, tasks, wait

app = typer.Typer(
    name="jobnik",
    help=(
        "Operate a Jobnik manager: list and show jobs, approve stages, pause, resume, "
        "abort, reprioritise, follow events, wait. Every command takes --url "
        "(JOBNIK_URL) and --token (JOBNIK_TOKEN). Exit codes: 0 ok, 1 the waited-for "
        "job FAILED or ABORTED, 2 usage, 3 not found, 4 refused by the manager, "
        "5 manager unreachable, 6 wait timed out."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(jobs.app, name="jobs")
app.add_typer(tasks.app, name="tasks")
app.command("approve")(steer.approve)
app.command("pause")(steer.pause)
app.command("resume")(steer.resume)
app.command("abort")(steer.abort)
app.command("priority")(steer.priority)
app.command("events")(events.events)
app.command("create")(create.create)
app.command("wait")(wait.wait)


def main() -> None:
    """The `jobnik` console script."""
    app()
