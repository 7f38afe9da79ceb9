"""README.md's "A producer and a worker of your own", as written: the files it tells a
user to save, saved outside the repository, run against a manager process (the worker
started from the repository root, the producer from their own directory), and none of
them named like a module the project imports."""

from __future__ import annotations

import importlib.util
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ..support.processes import manager_process

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
README_URL = "http://127.0.0.1:8080"


def files_to_save() -> dict[str, str]:
    """Each file the quick start tells the user to save: its name and its code."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### A producer and a worker of your own", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^`([\w.]+\.py)`:\n\n```python\n(.*?)^```", section, re.M | re.S))


def test_the_files_shadow_no_module_the_project_imports() -> None:
    names = files_to_save()
    assert set(names) == {"my_producer.py", "my_worker.py"}
    packages = {p.parent.name for p in ROOT.glob("*/src/*/__init__.py")} | {"tests", "conftest"}
    for name in names:
        module = name.removesuffix(".py")
        assert module not in packages
        assert module not in sys.stdlib_module_names
        assert importlib.util.find_spec(module) is None, f"{name} would shadow {module}"


def test_the_quick_start_runs_from_a_directory_of_its_own(tmp_path: Path) -> None:
    own = tmp_path / "jobnik-try"
    own.mkdir()
    with manager_process(f"sqlite+aiosqlite:///{tmp_path / 'jobnik.db'}") as url:
        for name, code in files_to_save().items():
            assert README_URL in code, name
            (own / name).write_text(code.replace(README_URL, url))
        with (tmp_path / "worker.log").open("wb") as log:
            # `uv run python ~/jobnik-try/my_worker.py` from the repository root.
            worker = subprocess.Popen(
                [sys.executable, str(own / "my_worker.py")],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                # `uv run --project <repository> python my_producer.py` from its own directory.
                producer = subprocess.run(
                    [sys.executable, "my_producer.py"],
                    cwd=own,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            finally:
                worker.send_signal(signal.SIGINT)  # Ctrl+C
                stopped = worker.wait(timeout=30)
    assert producer.returncode == 0, producer.stdout + producer.stderr
    lines = producer.stdout.splitlines()
    assert lines[0].startswith("created job ")
    assert lines[-1] == "job finished: COMPLETED"
    assert stopped == 0, (tmp_path / "worker.log").read_text()
    assert (tmp_path / "worker.log").read_text().count("rendering tile") == 4


def test_the_demo_runs_a_job_to_the_end_and_the_access_log_follows(tmp_path: Path) -> None:
    """`jobnik-manager serve --demo`, the README's first command: the demo job completes,
    paced so that it can be watched, and the access log is there once the demo is done."""
    log = tmp_path / "manager.log"
    database = f"sqlite+aiosqlite:///{tmp_path / 'jobnik.db'}"
    with manager_process(database, log=log, args=["--demo"], JOBNIK_LOG_LEVEL="info") as url:
        deadline = time.monotonic() + 60
        while "demo: done" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        said = log.read_text()
        assert "demo: done; job COMPLETED 100%" in said, said
        assert f"demo: watch it at {url}/ui#/jobs/" in said
        assert "/v1/stages/demo-render/tasks/dequeue" not in said  # quiet while it ran
        assert httpx.get(f"{url}/v1/jobs").status_code == 200
        time.sleep(0.5)
        assert '"GET /v1/jobs HTTP/1.1" 200' in log.read_text()  # and logged after it
    assert said.count(" task {") == 7  # every attempt, the flaky one's first included
