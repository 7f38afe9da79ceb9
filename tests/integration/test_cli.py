"""The command line: `serve` migrates the embedded SQLite default on first run, and
exits when the app's startup fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ..support.processes import free_port, manager_process

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


def _cli(url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobnik_manager.cli", *args],
        env={"JOBNIK_DATABASE_URL": url, "PATH": "", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cleanup_deletes_old_finished_jobs_and_says_what(tmp_path: Path) -> None:
    import sqlite3

    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    assert _cli(url, "migrate").returncode == 0
    with manager_process(url) as base_url:
        job = httpx.post(f"{base_url}/v1/jobs", json={"name": "old-one", "data": {}}).json()
        httpx.put(f"{base_url}/v1/jobs/{job['id']}/status", json={"status": "ABORTED"})
        running = httpx.post(f"{base_url}/v1/jobs", json={"name": "running", "data": {}}).json()
    db = sqlite3.connect(tmp_path / "old.db")
    # Ended ten days ago (the command reads the real clock).
    db.execute(
        "UPDATE jobs SET end_time = datetime('now', '-10 days') WHERE id = ?",
        (job["id"].replace("-", ""),),
    )
    db.commit()
    dry = _cli(url, "cleanup", "--older-than", "7d", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("would delete 1 jobs (0 stages, 0 tasks, 2 events)")
    done = _cli(url, "cleanup", "--older-than", "7d")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("deleted 1 jobs (0 stages, 0 tasks, 2 events) that ended before")
    names = {r[0] for r in db.execute("SELECT name FROM jobs")}
    assert names == {"running"} and running["status"] == "PENDING"


def test_cleanup_and_retention_refuse_a_malformed_duration(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'refuse.db'}"
    bad = _cli(url, "cleanup", "--older-than", "soon")
    assert bad.returncode == 2 and "'soon' is not a duration such as 7d" in bad.stderr
    serve = _cli(url, "serve", JOBNIK_RETENTION="nope")
    assert serve.returncode == 2
    assert serve.stderr.strip().startswith("jobnik-manager: JOBNIK_RETENTION:")
    assert len(serve.stderr.strip().splitlines()) == 1


# `serve` with an app whose lifespan fails before the app's own code runs (a middleware
# that cannot take a lifespan scope): the way its background loops would silently not run.
_BROKEN_LIFESPAN = """
from jobnik_manager import cli

built = cli.served_app


class NoLifespan:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            raise KeyError("path")
        await self.app(scope, receive, send)


def served_app(settings=None):
    app = built(settings)
    app.add_middleware(NoLifespan)
    return app


cli.served_app = served_app
cli.main(["serve"])
"""


def test_serve_exits_when_the_apps_startup_fails(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'startup.db'}"
    env = {"JOBNIK_DATABASE_URL": url, "JOBNIK_PORT": str(free_port()), "PATH": ""}
    proc = subprocess.Popen(
        [sys.executable, "-c", _BROKEN_LIFESPAN],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, errors = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, errors = proc.communicate()
        pytest.fail(f"serve kept serving without its background work:\n{errors}")
    assert proc.returncode != 0
    assert "Application startup failed" in errors, errors


def test_the_served_app_collects_its_young_objects_less_often(tmp_path: Path) -> None:
    """`serve` builds the app and sets the collector's young threshold (the default,
    700 allocations, made collecting a tenth of a read's CPU)."""
    code = (
        "import gc; from jobnik_manager import cli; from jobnik_protocol import process;"
        "cli.served_app();"
        "print(gc.get_threshold()[0], process.YOUNG_COLLECTION_EVERY)"
    )
    env = {"JOBNIK_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'gc.db'}", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    young, expected = done.stdout.split()
    assert young == expected and int(young) > 700
