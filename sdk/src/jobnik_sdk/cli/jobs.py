"""`jobnik jobs list` and `jobnik jobs show JOB`."""

from __future__ import annotations

import json as jsonlib
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress_bar import ProgressBar
from rich.table import Table

from .._client import JobnikClient
from .._models import Job, JobAsset, JobStatus, Page, Priority
from . import output
from ._run import JobArg, Json, Manager, Token, Url, chosen_job, run

app = typer.Typer(help="List jobs and show one.", no_args_is_help=True)

# The manager's largest page of jobs.
_PAGE = 100


def _time(text: str | None, option: str) -> datetime | None:
    """An ISO 8601 time; one without a zone is taken as UTC."""
    if text is None:
        return None
    try:
        time = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not an ISO 8601 time", param_hint=option) from None
    return time if time.tzinfo is not None else time.replace(tzinfo=UTC)


def _created(flag: str, side: str) -> Any:
    """An option bounding when the jobs listed were created, read by `_time`."""
    return typer.Option(flag, help=f"Created at or {side} (ISO 8601; UTC if no zone).")


@app.command("list")
def list_jobs(
    status: Annotated[
        list[JobStatus] | None,
        typer.Option("--status", help="Only jobs in this status (repeat for several)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Only jobs of this name.")] = None,
    search: Annotated[
        str | None, typer.Option("--search", help="Only jobs whose name holds this, any case.")
    ] = None,
    priority: Annotated[
        Priority | None, typer.Option("--priority", help="Only jobs of this priority.")
    ] = None,
    from_: Annotated[str | None, _created("--from", "after")] = None,
    to: Annotated[str | None, _created("--to", "before")] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=_PAGE, help="How many of the newest jobs.")
    ] = 20,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """The newest jobs first: id, name, status, priority, progress, created."""
    start, end = _time(from_, "--from"), _time(to, "--to")

    async def work(client: JobnikClient) -> list[Job]:
        got = await client.list_jobs(
            name=name,
            name_contains=search,
            status=status or None,
            priority=priority,
            from_date=start,
            end_date=end,
            newest_first=True,
            page_size=limit,
        )
        return got.items

    jobs = run(Manager.chosen(url, token), work)
    if json:
        output.print_json(jobs)
        return
    console = output.stdout()
    whole = console.width >= output.WHOLE_IDS
    table = Table(title=None, show_edge=False)
    table.add_column("id", no_wrap=True, min_width=36 if whole else 8)
    table.add_column("name", min_width=12, overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("priority", no_wrap=True)
    table.add_column("progress", justify="right", no_wrap=True)
    table.add_column("created (UTC)", min_width=10, overflow="fold")
    for job in jobs:
        table.add_row(
            output.job_id(job.id, console),
            escape(job.name),
            output.status(job.status),
            job.priority.value,
            output.percent(job.progress if job.progress is not None else job.percentage),
            output.when(job.creation_time),
        )
    console.print(table)
    if not jobs:
        output.stderr().print("no jobs")


@app.command("show")
def show(
    job_id: JobArg,
    url: Url = None,
    token: Token = None,
    json: Json = False,
) -> None:
    """One job with its stages: status, task counts, progress, times, failure reasons,
    and what it produced (its result, and the assets its tasks recorded)."""

    manager, job_id = chosen_job(url, token, job_id)

    async def work(client: JobnikClient) -> tuple[Job, Page[JobAsset]]:
        job = await client.get_job(job_id, with_stages=True)
        return job, await client.list_job_assets(job_id, page_size=_ASSETS_SHOWN)

    job, assets = run(manager, work)
    if json:
        output.print_json(job)
        return
    console = output.stdout()
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    progress = job.progress if job.progress is not None else job.percentage
    rows = [
        ("job", str(job.id)),
        ("name", escape(job.name)),
        ("status", output.status(job.status) + (" (partial)" if job.partial else "")),
        ("priority", job.priority.value),
        ("progress", output.percent(progress)),
        ("created", output.when(job.creation_time)),
        ("started", output.when(job.start_time)),
        ("ended", output.when(job.end_time)),
    ]
    for key, time in (("deadline", job.deadline), ("expires", job.expires_at)):
        if time is not None:
            rows.append((key, output.when(time)))
    if job.reason:
        rows.append(("reason", escape(job.reason)))
    if job.failed_task_id:
        rows.append(("failed task", f"{job.failed_task_id} (stage {job.failed_stage_id})"))
    if job.result is not None:
        rows.append(("result", escape(jsonlib.dumps(job.result, ensure_ascii=False))))
    for key, value in rows:
        head.add_row(key, value)
    console.print(head)

    stages = Table(show_edge=False)
    for column in ("#", "stage", "type", "status", "progress", "tasks", "started", "ended"):
        stages.add_column(column, no_wrap=column in ("stage", "status", "started", "ended"))
    stages.add_column("reason")
    for stage in job.stages or []:
        done = stage.progress if stage.progress is not None else float(stage.percentage)
        s = stage.summary
        counts = f"{s.completed}/{s.total} done"
        for label, count in (
            ("running", s.in_progress),
            ("failed", s.failed),
            ("retried", s.retried),
            ("aborted", s.aborted),
        ):
            if count:
                counts += f", {count} {label}"
        stages.add_row(
            str(stage.order),
            str(stage.id),
            escape(stage.type),
            output.status(stage.status),
            _bar(done),
            counts,
            output.when(stage.start_time),
            output.when(stage.end_time),
            escape(stage.reason or ""),
        )
    console.print(stages)
    if assets.items:
        console.print(_assets_table(assets))


_ASSETS_SHOWN = 100


def _assets_table(assets: Page[JobAsset]) -> Table:
    more = assets.total - len(assets.items)
    title = f"assets ({assets.total})" + (f", the first {len(assets.items)}" if more else "")
    table = Table(title=title, title_justify="left", show_edge=False)
    for column in ("type", "name", "uri", "size", "task"):
        table.add_column(column, no_wrap=column in ("type", "size"))
    for a in assets.items:
        size = "" if a.size_bytes is None else f"{a.size_bytes:,} B"
        table.add_row(
            escape(a.type), escape(a.name or ""), escape(a.uri), size, str(a.task_id or "")[:8]
        )
    return table


def _bar(done: float) -> Table:
    cell = Table.grid(padding=(0, 1))
    cell.add_row(ProgressBar(total=100, completed=done, width=12), output.percent(done))
    return cell
