"""Running one command's calls against the manager, and what its failures exit with."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from .._client import DEFAULT_URL, JobnikClient
from .._exceptions import ApiError, JobnikTransportError, NotFoundError, WaitTimeoutError
from .._retry import RequestRetryPolicy
from . import output

T = TypeVar("T")

# Exit codes a script can rely on.
OK = 0
JOB_FAILED = 1  # `wait`: the job ended FAILED or ABORTED
USAGE = 2  # as Typer (click) exits on a bad command line
NOT_FOUND = 3
REFUSED = 4
UNREACHABLE = 5
TIMED_OUT = 6
INTERRUPTED = 130

# Given before the command (`jobnik --token T jobs list`), where the environment fills
# them in, or after it (`jobnik jobs list --token T`), where they win over both.
URL_HELP = "The manager's base URL."
TOKEN_HELP = "API token (auth on)."
Url = Annotated[str | None, typer.Option("--url", help=URL_HELP, show_default=False)]
Token = Annotated[str | None, typer.Option("--token", help=TOKEN_HELP)]
Json = Annotated[bool, typer.Option("--json", help="Print JSON on stdout, nothing else.")]
JobArg = Annotated[str, typer.Argument(metavar="JOB", help="The job's id.")]
# How many a listing shows: at most the manager's largest page (100).
Limit = Annotated[int, typer.Option("--limit", min=1, max=100, help="How many.")]


# --url and --token as given before the command (or by the environment): set by the
# app's callback, which runs first in every invocation.
_before_the_command: dict[str, str | None] = {}


def given_before_the_command(url: str | None, token: str | None) -> None:
    _before_the_command.update(url=url, token=token)


@dataclass(frozen=True, slots=True)
class Manager:
    """Where the manager is and what to show it."""

    url: str
    token: str | None

    @classmethod
    def chosen(cls, url: str | None, token: str | None) -> Manager:
        """The command's own --url and --token, else those given before the command
        (or JOBNIK_URL and JOBNIK_TOKEN), else the default URL and no token."""
        before = _before_the_command
        return cls(
            url or before.get("url") or DEFAULT_URL,
            token if token is not None else before.get("token"),
        )

    def client(self) -> JobnikClient:
        # Few retries: a person (or a script) waits for the answer.
        return JobnikClient(
            self.url,
            token=self.token or "",
            retry=RequestRetryPolicy(max_attempts=3),
            timeout=timedelta(seconds=30),
        )


def interval_option(text: str) -> Any:
    """The `--interval` option of the commands that poll: seconds between polls."""
    return typer.Option("--interval", min=0.05, help=text)


def run(
    manager: Manager,
    work: Callable[[JobnikClient], Awaitable[T]],
    *,
    interrupt_code: int = INTERRUPTED,
) -> T:
    """Run `work` with a client of the manager; a failure ends the command with its
    exit code and the reason on stderr."""

    async def go() -> T:
        async with manager.client() as client:
            return await work(client)

    try:
        return asyncio.run(go())
    except KeyboardInterrupt:
        raise typer.Exit(interrupt_code) from None
    except NotFoundError as exc:
        fail(NOT_FOUND, f"not found: {exc.message} ({exc.code})")
    except WaitTimeoutError as exc:
        fail(TIMED_OUT, f"timed out: {exc}")
    except ApiError as exc:
        code = UNREACHABLE if exc.status_code >= 500 else REFUSED
        fail(code, f"refused ({exc.status_code} {exc.code}): {exc.message}")
    except JobnikTransportError as exc:
        fail(UNREACHABLE, f"cannot reach the manager at {manager.url}: {exc}")


def fail(code: int, message: str) -> NoReturn:
    output.error(message)
    raise typer.Exit(code)


def chosen_job(url: str | None, token: str | None, given: str) -> tuple[Manager, str]:
    """The manager (`Manager.chosen`) and the id of the job `given` names there."""
    manager = Manager.chosen(url, token)
    return manager, full_job_id(manager, given)


def full_job_id(manager: Manager, given: str) -> str:
    """The id of the job `given` names: the whole id, or its first hex digits (the
    dashboard shows ids by their first 8). Ends the command, exit 3, when no job's id
    starts so, and exit 2 when several jobs' ids do."""
    try:
        return str(uuid.UUID(given))
    except ValueError:
        if not re.fullmatch(r"[0-9a-fA-F-]{1,36}", given):
            fail(USAGE, f"not a job id: {given!r} (an id, or its first hex digits)")

    async def starting(client: JobnikClient) -> list[str]:
        page = await client.list_jobs(id_prefix=given, page_size=5)
        return [str(job.id) for job in page.items]

    found = run(manager, starting)
    if not found:
        fail(NOT_FOUND, f"not found: no job's id starts with {given}")
    if len(found) > 1:
        fail(USAGE, f"{given} starts the ids of several jobs: {', '.join(found)}")
    return found[0]


def fetched(
    url: str | None,
    token: str | None,
    json: bool,
    read: Callable[[JobnikClient], Awaitable[T]],
) -> T | None:
    """What `read` answers, for a command to lay out; None once printed as JSON (--json:
    the manager's answer as it is)."""
    items = run(Manager.chosen(url, token), read)
    if not json:
        return items
    output.print_json(items)
    return None
