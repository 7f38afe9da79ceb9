"""The command line: `serve` migrates the embedded SQLite default on first run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ..support.processes import manager_process

pytestmark = pytest.mark.e2e  # the manager's command line, run as a process


def test_serve_on_a_fresh_sqlite_file_just_works(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    with manager_process(url) as base_url:
        created = httpx.post(f"{base_url}/v1/jobs", json={"name": "first-run", "data": {}})
        assert created.status_code == 201, created.text
        assert httpx.get(f"{base_url}/readiness").json() == {"status": "ok"}


def test_migrate_command(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'migrated.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "jobnik_manager.cli", "migrate"],
        env={"JOBNIK_DATABASE_URL": url, "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    import sqlite3

    tables = {
        r[0]
        for r in sqlite3.connect(tmp_path / "migrated.db").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    assert {"jobs", "stages", "tasks", "alembic_version"} <= tables


def test_serve_refuses_a_database_behind_its_migrations(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'behind.db'}"
    done = subprocess.run(
        [sys.executable, "-m", "jobnik_manager.cli", "serve"],
        env={"JOBNIK_DATABASE_URL": url, "JOBNIK_AUTO_MIGRATE": "false", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "has never been migrated" in last and "jobnik-manager migrate" in last, done.stderr
    assert "Traceback" not in done.stderr
