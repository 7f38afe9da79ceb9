"""Log lines as JSON or text, carrying the ids of the job, stage and task they are about.

    from jobnik_sdk.logs import configure_logging, log_context

    configure_logging("INFO", "json")  # or fmt=None: env JOBNIK_LOG_FORMAT, text by default
    with log_context(job_id=job.id):
        logging.getLogger("app").info("submitted")
    # {"time": "...", "level": "INFO", "logger": "app", "message": "submitted", "job_id": "..."}

A Worker runs each handler inside a `log_context` naming its worker, task, job, stage,
stage type and lease, so the handler's own `logging` calls, with any logger, carry them.
Standard library only: the manager and the worker template use it alike.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from contextlib import ContextDecorator
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal, TextIO

__all__ = [
    "ID_FIELDS",
    "LOG_FORMAT_ENV",
    "TEXT_FORMAT",
    "JsonFormatter",
    "configure_logging",
    "current_log_context",
    "log_context",
    "uvicorn_log_config",
]

LogFormat = Literal["text", "json"]

# The ids a JSON line carries when a record has them as attributes (`extra=`).
ID_FIELDS = ("job_id", "stage_id", "task_id", "stage_type", "lease_id", "worker")
LOG_FORMAT_ENV = "JOBNIK_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# uvicorn's access record: its args, and the JSON fields they become.
_ACCESS_LOGGER = "uvicorn.access"
_ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")

# Immutable, so the default shared by every context cannot be changed under it.
_context: ContextVar[Mapping[str, Any]] = ContextVar(
    "jobnik_log_context", default=MappingProxyType({})
)


def _plain(value: object) -> Any:
    """A value as JSON takes it: numbers, strings and booleans kept, the rest (UUIDs,
    enums) as their text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class log_context(ContextDecorator):
    """Have JSON lines logged inside the block (and in asyncio tasks started there)
    carry `ids`, merged over those of enclosing blocks; None values are left out.

    A class rather than a generator, and the values are made text when read rather
    than here: a Worker enters one for every task it runs, and most are never read."""

    __slots__ = ("_ids", "_token")

    def __init__(self, **ids: object) -> None:
        self._ids = ids

    def __enter__(self) -> None:
        merged = dict(_context.get())
        for key, value in self._ids.items():
            if value is not None:
                merged[key] = value
        self._token = _context.set(MappingProxyType(merged))

    def __exit__(self, *exc_info: object) -> None:
        _context.reset(self._token)

    def _recreate_cm(self) -> log_context:
        # As a decorator, each call enters a block of its own.
        return log_context(**self._ids)


def current_log_context() -> dict[str, Any]:
    """The ids of the enclosing `log_context` blocks."""
    return {key: _plain(value) for key, value in _context.get().items()}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `time` (ISO 8601, UTC), `level`, `logger`, `message`,
    `exc_info` (the traceback) when there is one, the ids of the current `log_context`,
    and those of ID_FIELDS set on the record (`extra=`), which win. uvicorn's access
    lines also get `client`, `method`, `path`, `http_version` and `status`."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update((key, _plain(value)) for key, value in _context.get().items())
        for key in ID_FIELDS:
            value = getattr(record, key, None)
            # TaskLogFilter sets "" for ids not known: not worth a field.
            if value is not None and value != "":
                entry[key] = _plain(value)
        args = record.args
        if record.name == _ACCESS_LOGGER and isinstance(args, tuple) and len(args) == 5:
            entry.update(zip(_ACCESS_FIELDS, map(_plain, args), strict=True))
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _format(fmt: str | None) -> LogFormat:
    chosen = (fmt or os.environ.get(LOG_FORMAT_ENV) or "text").strip().lower()
    if chosen not in ("text", "json"):
        raise ValueError(f"log format must be 'text' or 'json', not {chosen!r}")
    return "json" if chosen == "json" else "text"


def _level(level: str | int) -> str | int:
    if isinstance(level, int):
        return level
    name = level.strip().upper()
    if not isinstance(logging.getLevelName(name), int):
        raise ValueError(f"unknown log level {level!r}")
    return name


def _formatter(fmt: LogFormat) -> logging.Formatter:
    return JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)


class _JobnikHandler(logging.StreamHandler[TextIO]):
    """The handler `configure_logging` installs, told apart so a second call replaces
    it and leaves handlers that others installed alone."""


def configure_logging(
    level: str | int = "INFO", fmt: str | None = None, *, stream: TextIO | None = None
) -> logging.Formatter:
    """Log to stderr (or `stream`) from the root logger at `level`, as `fmt`: "text"
    (TEXT_FORMAT) or "json" (JsonFormatter); None reads env JOBNIK_LOG_FORMAT, text if
    unset. Calling it again replaces the handler it installed. Returns the formatter."""
    formatter = _formatter(_format(fmt))
    handler = _JobnikHandler(sys.stderr if stream is None else stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _JobnikHandler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(_level(level))
    return formatter


def uvicorn_log_config(level: str | int = "INFO", fmt: str | None = None) -> dict[str, Any]:
    """A `log_config` for uvicorn that writes its error and access lines to stderr as
    `configure_logging` would (`fmt` None reads JOBNIK_LOG_FORMAT)."""
    chosen = _format(fmt)
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.JsonFormatter"} if chosen == "json" else {"format": TEXT_FORMAT}
    )
    name = _level(level)
    handler = {
        "class": "logging.StreamHandler",
        "formatter": "jobnik",
        "stream": "ext://sys.stderr",
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"jobnik": formatter},
        "handlers": {"jobnik": handler},
        "loggers": {
            "uvicorn": {"handlers": ["jobnik"], "level": name, "propagate": False},
            "uvicorn.error": {"level": name},
            "uvicorn.access": {"handlers": ["jobnik"], "level": name, "propagate": False},
        },
    }
