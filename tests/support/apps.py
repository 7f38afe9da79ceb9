"""In-process apps for tests, kept per process and settings and lent to one test at a
time, each serving that test's own database. An app prepares its routes on their first
requests (tens of milliseconds in all), which a thousand tests would otherwise pay once
each."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI

from jobnik_manager.app import create_app, use_database
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings

_idle: dict[str, list[FastAPI]] = {}
_read: dict[tuple[object, ...], Settings] = {}


def _defaults(url: str) -> Settings:
    """The manager's settings for `url`, as the environment gives them: read once per
    environment (reading them took 2 ms, a test's first request only one more)."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("JOBNIK_")))
    key = (url, os.getcwd(), env)
    if key not in _read:
        _read[key] = Settings(database_url=url)
    return _read[key]


@contextmanager
def app_on(database: Database, settings: Settings | None = None) -> Iterator[FastAPI]:
    """An app serving `database` while the block runs (the manager's defaults unless
    `settings` are given; their database_url is not read: the database is)."""
    settings = settings or _defaults(database.url)
    idle = _idle.setdefault(settings.model_dump_json(exclude={"database_url"}), [])
    app = idle.pop() if idle else create_app(settings, database=database)
    use_database(app, database)
    try:
        yield app
    finally:
        idle.append(app)
