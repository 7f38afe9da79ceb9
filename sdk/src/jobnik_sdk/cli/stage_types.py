"""`jobnik stage-types`: the work waiting and running, by stage type; `pause` and
`resume` one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from .._client import JobnikClient
from . import output
from ._run import Json, Manager, Token, Url, fetched, run

app = typer.Typer(
    help=(
        "The queues by stage type (with no command); pause, resume, limit or unlimit one,"
        " or show its flow."
    ),
    invoke_without_command=True,
)
StageType = Annotated[str, typer.Argument(metavar="TYPE", help="The stage type.")]
# The manager's answer about a stage type: its `type` and what changed.
Said = dict[str, Any]


@app.callback()
def stage_types(
    ctx: typer.Context, url: Url = None, token: Token = None, json: Json = False
) -> None:
    """Each stage type with work in a stage that may run, paused or limited: tasks waiting
    to be claimed, in flight, with a lease about to run out, failed, how long the oldest
    has waited, whether it is paused, and its limits."""
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
    table.add_column("limits", no_wrap=True)
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
            limits_text(load),
        )
    output.stdout().print(table)


def _switch(
    command: str, call: Callable[[JobnikClient, str], Awaitable[Said]], said: str, doc: str
) -> Callable[..., None]:
    """The command that makes one call of the client about a stage type, with nothing
    more to give, and says what the type now is."""

    def switch(stage_type: StageType, url: Url = None, token: Token = None) -> None:
        _said(run(Manager.chosen(url, token), lambda client: call(client, stage_type)), said)

    switch.__doc__ = doc
    return app.command(command)(switch)


pause = _switch(
    "pause",
    JobnikClient.pause_stage_type,
    "paused",
    "Hand out none of the stage type's tasks, in any job, until it is resumed (running"
    " tasks go on).",
)
resume = _switch(
    "resume", JobnikClient.resume_stage_type, "resumed", "Hand the stage type's tasks out again."
)


@app.command("limit")
def limit(
    stage_type: StageType,
    in_flight: Annotated[
        int | None, typer.Option("--in-flight", min=1, help="Most tasks running at once.")
    ] = None,
    rate: Annotated[
        float | None, typer.Option("--rate", min=0.001, help="Most tasks handed out a second.")
    ] = None,
    burst: Annotated[
        int | None, typer.Option("--burst", min=1, help="Most handed out at once (with --rate).")
    ] = None,
    url: Url = None,
    token: Token = None,
) -> None:
    """Limit the stage type's tasks, in every job, across every worker and replica."""
    done = run(
        Manager.chosen(url, token),
        lambda c: c.limit_stage_type(
            stage_type, max_in_flight=in_flight, rate_per_second=rate, burst=burst
        ),
    )
    _said(done, f"limited to {limits_text(done)}")


unlimit = _switch(
    "unlimit",
    JobnikClient.unlimit_stage_type,
    "unlimited",
    "Hand the stage type's tasks out without limits again.",
)


@app.command("flow")
def flow(
    stage_type: StageType,
    minutes: Annotated[
        int, typer.Option("--minutes", min=1, max=1440, help="How far back, in minutes.")
    ] = 60,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """The stage type's tasks created, completed, failed and retried a minute, over the
    last hour (or --minutes), in every job: the minutes that saw any, then the totals."""
    seen = fetched(url, token, json, lambda c: c.stage_type_flow(stage_type, minutes=minutes))
    if seen is None:
        return
    counts = ("created", "completed", "failed", "retried")
    table = Table(show_edge=False)
    table.add_column("minute (UTC)", no_wrap=True)
    for column in counts:
        table.add_column(column, justify="right", no_wrap=True)
    totals = dict.fromkeys(counts, 0)
    for minute in seen["minutes"]:
        if any(minute[c] for c in counts):
            table.add_row(minute["start"][:16].replace("T", " "), *(str(minute[c]) for c in counts))
        for c in counts:
            totals[c] += minute[c]
    table.add_row("total", *(str(totals[c]) for c in counts), end_section=True)
    out = output.stdout()
    since = seen["since"][:16].replace("T", " ")
    out.print(f"stage type {escape(seen['type'])} since {since} UTC", soft_wrap=True)
    out.print(table)


def _said(done: Said, what: str) -> None:
    output.stdout().print(f"stage type {escape(done['type'])} {what}", soft_wrap=True)


def limits_text(load: dict[str, Any]) -> str:
    """A type's limits in words: "3 in flight, 20/s (burst 20)", or "-"."""
    parts = []
    if load.get("maxInFlight") is not None:
        parts.append(f"{load['maxInFlight']} in flight")
    if load.get("ratePerSecond") is not None:
        parts.append(f"{load['ratePerSecond']:g}/s (burst {load.get('burst')})")
    return ", ".join(parts) or "-"
