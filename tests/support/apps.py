"""In-process apps for tests, kept per process and settings and lent to one test at a
time, each serving that test's own database. An app prepares its routes on their first
requests (tens of milliseconds in all), which a thousand tests would otherwise pay once
each."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI

from jobnik_manager.app import create_app, use_database
from jobnik_manager.db.engine import Database
from jobnik_manager.settings import Settings

_idle: dict[str, list[FastAPI]] = {}


@contextmanager
def app_on(database: Database, settings: Settings | None = None) -> Iterator[FastAPI]:
    """An app serving `database` while the block runs (the manager's defaults unless
    `settings` are given; their database_url is not read: the database is)."""
    settings = settings or Settings(database_url=database.url)
    idle = _idle.setdefault(settings.model_dump_json(exclude={"database_url"}), [])
    app = idle.pop() if idle else create_app(settings, database=database)
    use_database(app, database)
    try:
        yield app
    finally:
        idle.append(app)
