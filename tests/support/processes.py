"""Real manager processes for tests that need them (concurrency, multiple replicas)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ProcessExitedError(RuntimeError):
    pass


def wait_ready(
    url: str,
    proc: subprocess.Popen[bytes] | None,
    *,
    path: str = "/readiness",
    within: float = 60,
    what: str = "manager",
) -> None:
    """Until GET `url``path` answers 200; ProcessExitedError if `proc` exits first."""
    deadline = time.monotonic() + within
    while True:
        if proc is not None and proc.poll() is not None:
            raise ProcessExitedError(f"{what} exited ({proc.returncode})")
        try:
            if httpx.get(f"{url}{path}", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not become ready within {within:.0f} s")
        time.sleep(0.1)


@contextmanager
def manager_process(
    database_url: str, *, log: Path | None = None, args: Sequence[str] = (), **env: str
) -> Iterator[str]:
    """Start `jobnik-manager serve` on a free port; yield its base URL; stop it. Its
    error output goes to `log` when given (a test that makes it log much needs one: an
    unread pipe fills and stalls it)."""
    with served_manager(database_url, log=log, args=args, **env) as (base_url, _):
        yield base_url


@contextmanager
def served_manager(
    database_url: str, *, log: Path | None = None, args: Sequence[str] = (), **env: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`manager_process`, yielding its process too."""
    port = free_port()
    environment = {
        **os.environ,
        "JOBNIK_DATABASE_URL": database_url,
        "JOBNIK_PORT": str(port),
        "JOBNIK_HOST": "127.0.0.1",
        "JOBNIK_LOG_LEVEL": "warning",
        "JOBNIK_DB_POOL_SIZE": "10",
        **env,
    }
    errors = log.open("ab") if log is not None else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobnik_manager.cli", "serve", *args],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=errors if errors is not None else subprocess.PIPE,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_ready(base_url, proc, within=30)
        except ProcessExitedError:
            said = proc.stderr.read().decode() if proc.stderr else f"see {log}"
            raise RuntimeError(f"manager exited: {said}") from None
        yield base_url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if errors is not None:
            errors.close()


ROOT = Path(__file__).resolve().parents[2]


def start_module(module: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """Run `python -m module` from the repository root, its output appended to `log`."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", module],
            cwd=ROOT,
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop(proc: subprocess.Popen[bytes], grace: float = 30) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def module_process(module: str, log: Path, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """`start_module` for the length of the block; stopped (SIGTERM) on exit."""
    proc = start_module(module, log, **env)
    try:
        yield proc
    finally:
        stop(proc)


def manager_command(database_url: str, *args: str) -> str:
    """`jobnik-manager ARGS` on this database, run to its end; what it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "jobnik_manager.cli", *args],
        env={**os.environ, "JOBNIK_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
