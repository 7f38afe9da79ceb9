"""The fake managers' SQLite files: the manager's schema, migrated once per process into
a template, and a copy of it for each fake manager, removed with the manager."""

from __future__ import annotations

import atexit
import concurrent.futures
import itertools
import shutil
import tempfile
import threading
from pathlib import Path

from jobnik_manager.db import migrate

_lock = threading.Lock()
_directory: Path | None = None
_numbers = itertools.count()


def _template() -> Path:
    global _directory
    with _lock:
        if _directory is None:
            directory = Path(tempfile.mkdtemp(prefix="jobnik-fake-"))
            atexit.register(shutil.rmtree, directory, ignore_errors=True)
            # Alembic runs an event loop of its own, which a running loop in this
            # thread would refuse.
            with concurrent.futures.ThreadPoolExecutor(1) as thread:
                thread.submit(migrate.upgrade, url(directory / "t.db")).result()
            _directory = directory
        return _directory / "t.db"


def url(path: Path) -> str:
    """The SQLAlchemy URL of the SQLite file at `path`."""
    return f"sqlite+aiosqlite:///{path}"


def new_database() -> Path:
    """A new SQLite file with the manager's schema and no rows."""
    template = _template()
    path = template.with_name(f"fake-{next(_numbers)}.db")
    shutil.copyfile(template, path)
    return path


def remove(path: Path) -> None:
    """Remove a fake manager's database file and SQLite's files beside it."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        path.with_name(name).unlink(missing_ok=True)
