"""A PostgreSQL server of a test's own, so the test may restart it without disturbing
the other tests' server. Needs the PostgreSQL server binaries (initdb, pg_ctl); run as
root, the server runs as the `postgres` user."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .processes import free_port


def _bin(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    if found is None:
        raise RuntimeError(f"{name} not found: the PostgreSQL server binaries are needed")
    return found


@dataclass(frozen=True)
class PrivatePostgres:
    data: Path
    port: int
    _as_postgres: tuple[str, ...]

    def url(self, database: str) -> str:
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{database}"

    def pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self._as_postgres, _bin("pg_ctl"), "-D", str(self.data), "-w", "-t", "60", *args],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def restart(self, mode: str = "fast") -> None:
        """As an operator's `pg_ctl restart -m fast`: every connection is cut. With
        `immediate`, as a crash: what was committed without waiting for its WAL flush
        may be lost, and the server recovers from its log on start."""
        self.pg_ctl("restart", "-m", mode, "-l", str(self.data / "server.log"))


@contextmanager
def private_postgres(root: Path) -> Iterator[PrivatePostgres]:
    """initdb a cluster under `root`, start it on a free port, stop it at the end."""
    data = root / "pgdata"
    data.mkdir(parents=True)
    as_postgres: tuple[str, ...] = ()
    if os.geteuid() == 0:  # the server refuses to run as root
        shutil.chown(root, "postgres")
        shutil.chown(data, "postgres")
        as_postgres = ("runuser", "-u", "postgres", "--")
    subprocess.run(
        [*as_postgres, _bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    port = free_port()
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(f"\nport = {port}\nlisten_addresses = '127.0.0.1'\n")
        conf.write(f"unix_socket_directories = '{data}'\nmax_connections = 100\n")
    server = PrivatePostgres(data, port, as_postgres)
    server.pg_ctl("start", "-l", str(data / "server.log"))
    try:
        yield server
    finally:
        server.pg_ctl("stop", "-m", "immediate")
