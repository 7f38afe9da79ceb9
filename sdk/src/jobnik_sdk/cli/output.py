"""What the commands print: Rich tables for people on stdout, JSON for scripts, and
errors on stderr."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

STATUS_STYLES = {
    "COMPLETED": "green",
    "FAILED": "red",
    "ABORTED": "red",
    "IN_PROGRESS": "cyan",
    "PAUSED": "yellow",
    "WAITING": "yellow",
    "RETRIED": "yellow",
}


# Into a pipe or a file (and no COLUMNS said otherwise): as wide as the table needs, so
# that nothing is cut or dropped for a script.
_UNLIMITED = 10_000
# A terminal narrower than this shows a job's id by its first 8 hex digits, which every
# command takes for the job, so that the other columns keep their room.
WHOLE_IDS = 120


def stdout() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, width=_UNLIMITED)
    return console


def job_id(value: object, console: Console) -> str:
    """A job's id as a table shows it on `console`: whole, or its first 8 hex digits."""
    text = str(value)
    return text if console.width >= WHOLE_IDS else text[:8]


def stderr() -> Console:
    return Console(stderr=True, highlight=False)


def error(message: str) -> None:
    stderr().print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)


def as_json(value: BaseModel | Sequence[BaseModel]) -> Any:
    """An entity (or a list of them) as the API writes it: camelCase, nulls left out."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return [as_json(item) for item in value]


def print_json(value: Any, *, indent: int | None = 2) -> None:
    """`value` as JSON on stdout: entities as the API writes them (`as_json`), anything
    else (an answer passed on as the manager gave it) as it is."""
    is_model = isinstance(value, BaseModel) or (
        isinstance(value, list) and all(isinstance(item, BaseModel) for item in value)
    )
    sys.stdout.write(json.dumps(as_json(value) if is_model else value, indent=indent) + "\n")
    sys.stdout.flush()


def status(value: str | None) -> str:
    if value is None:
        return "-"
    style = STATUS_STYLES.get(value)
    return f"[{style}]{value}[/{style}]" if style else value


def when(time: datetime | None) -> str:
    """A time in UTC, to the second."""
    if time is None:
        return "-"
    return time.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"
