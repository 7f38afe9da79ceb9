"""The deployments tests run against, as real processes (docs/production.md):

- production: PostgreSQL, RabbitMQ, authentication on with a token per role, metrics
  (each replica's counters in a directory of its own that survives a crash), JSON logs,
  traces exported to a collector stand-in, retention, two manager replicas behind one
  URL (support.balancer), and workers built from the template, one process per stage
  type or more, each with a worker token of its stage type;
- minimal: one manager on SQLite, authentication off, no broker, the same workers
  without tokens.

`deployment(...)` starts one and yields a `Deployment`; its `client(role)` is an SDK
client with that role's token, and `start_worker` runs the template worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx

from jobnik_sdk import JobnikClient

from .private_postgres import PrivatePostgres
from .processes import ROOT, free_port, manager_command, stop, wait_ready

# What a log line that warns or tells of an error holds (JSON or plain lines).
_TROUBLE = ("WARNING", "ERROR", "CRITICAL", "Traceback")

Kind = Literal["production", "minimal"]
ROLES = ("admin", "producer", "operator")
# The worker processes' handler when a test names none: tasks' data says what to do.
SCENARIO_HANDLER = "tests.support.scenario_handler:handle"


def _wait_ready(
    url: str, proc: subprocess.Popen[bytes] | None, what: str, log: Path, path: str = "/readiness"
) -> None:
    try:
        wait_ready(url, proc, path=path, what=what)
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}; see {log}") from None


@dataclass
class Replica:
    """One manager process, restartable on the same port and metrics directory."""

    name: str
    port: int
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, wait: bool = True) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jobnik_manager.cli", "serve"],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        _wait_ready(self.url, self.proc, f"manager {self.name}", self.log)

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc, grace=15)

    def rss_bytes(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return None


@dataclass
class Deployment:
    kind: Kind
    url: str  # what clients use: the balancer, or the one manager
    database_url: str
    amqp_url: str | None
    replicas: list[Replica]
    logs: Path
    postgres: PrivatePostgres | None = None
    tokens: dict[str, str] = field(default_factory=dict)  # by role, and "worker:<type>"
    balancer_url: str | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def auth(self) -> bool:
        return self.kind == "production"

    def token(self, role: str) -> str | None:
        return self.tokens.get(role) if self.auth else None

    def worker_token(self, stage_type: str) -> str | None:
        """A worker token limited to `stage_type` (made on first use); several types
        comma-separated, as WORKER_STAGE_TYPE takes them, make one token for them all."""
        if not self.auth:
            return None
        key = f"worker:{stage_type}"
        if key not in self.tokens:
            answer = httpx.post(
                f"{self.url}/v1/tokens",
                json={
                    "name": f"worker-{stage_type}",
                    "role": "worker",
                    "stageTypes": stage_type.split(","),
                },
                headers={"authorization": f"Bearer {self.tokens['admin']}"},
                timeout=30,
            )
            answer.raise_for_status()
            self.tokens[key] = answer.json()["token"]
            self._tell_balancer_roles()
        return self.tokens[key]

    def client(self, role: str = "producer", **options: Any) -> JobnikClient:
        """An SDK client of the deployment with `role`'s token (none on minimal)."""
        token = self.worker_token(role[7:]) if role.startswith("worker:") else self.token(role)
        return JobnikClient(self.url, token=token, **options)

    def headers(self, role: str = "producer") -> dict[str, str]:
        token = self.token(role)
        return {"authorization": f"Bearer {token}"} if token else {}

    def worker_env(self, stage_type: str, **env: str) -> dict[str, str]:
        """The template worker's environment for `stage_type` on this deployment."""
        values = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "WORKER_MANAGER_URL": self.url,
            "WORKER_STAGE_TYPE": stage_type,
            "WORKER_HANDLER": SCENARIO_HANDLER,
            "WORKER_CONCURRENCY": "4",
            "WORKER_LEASE_SECONDS": "6",
            "WORKER_HEARTBEAT_SECONDS": "1.5",
            "WORKER_CLAIM_WAIT_SECONDS": "5",
            "WORKER_SHUTDOWN_GRACE_SECONDS": "5",
            "WORKER_REQUEST_TIMEOUT_SECONDS": "20",
            "WORKER_POLL_MAX_SECONDS": "1",
            "WORKER_LOG_FORMAT": "json",
            "WORKER_LOG_LEVEL": "INFO",
            # The scenario handler's own calls (a fan-out adds tasks as the producer).
            "SCENARIO_MANAGER_URL": self.url,
            **env,
        }
        token = self.worker_token(stage_type)
        if token:
            values["WORKER_TOKEN"] = token
            values["SCENARIO_PRODUCER_TOKEN"] = self.tokens["producer"]
        if self.amqp_url:
            values["WORKER_AMQP_URL"] = self.amqp_url
            values["WORKER_SAFETY_POLL_SECONDS"] = "5"
        return values

    def start_worker(
        self, stage_type: str, *, name: str | None = None, **env: str
    ) -> subprocess.Popen[bytes]:
        """The template worker (`python -m tile_render_worker`) for `stage_type`."""
        name = name or f"{stage_type}-{len(self.workers)}"
        log = self.logs / f"worker-{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tile_render_worker"],
                cwd=ROOT,
                env=self.worker_env(stage_type, WORKER_NAME=name, **env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.workers.append(proc)
        return proc

    def replica_troubles(self, most: int = 40) -> list[str]:
        """The replicas' log lines that warn or tell of an error (the last `most` of
        each), for a failure's message: the answers a client saw do not say why."""
        lines = []
        for replica in self.replicas:
            with suppress(OSError):
                text = replica.log.read_text(errors="replace").splitlines()
                told = [line for line in text if any(w in line for w in _TROUBLE)]
                lines += [f"{replica.name}: {line}" for line in told[-most:]]
        return lines

    def balancer_answers(self) -> dict[str, Any]:
        """What the balancer's clients were answered, by role and status."""
        if self.balancer_url is None:
            return {"answers": [], "traceExports": 0}
        data: dict[str, Any] = httpx.get(f"{self.balancer_url}/_balancer/answers").json()
        return data

    def _tell_balancer_roles(self) -> None:
        # The balancer rereads this file when it meets a token it does not know.
        roles = {token: key.partition(":")[0] for key, token in self.tokens.items()}
        (self.logs / "roles.json").write_text(json.dumps(roles))


def _manager_env(database_url: str, port: int, **env: str) -> dict[str, str]:
    return {
        **os.environ,
        "JOBNIK_DATABASE_URL": database_url,
        "JOBNIK_HOST": "127.0.0.1",
        "JOBNIK_PORT": str(port),
        **env,
    }


@contextmanager
def deployment(
    kind: Kind,
    logs: Path,
    *,
    postgres_url: str | None = None,
    amqp_url: str | None = None,
    postgres: PrivatePostgres | None = None,
    replicas: int = 2,
    retention: str = "",
    pool_size: int = 5,
    log_level: str = "info",
    stage_types: Mapping[str, int] | None = None,
    worker_env: Mapping[str, str] | None = None,
    manager_env: Mapping[str, str] | None = None,
) -> Iterator[Deployment]:
    """Start a deployment of `kind`; `postgres_url` is a fresh, empty database of the
    production profile's. `stage_types` starts that many template workers of each type;
    `manager_env` adds settings of the managers'."""
    logs.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        if kind == "minimal":
            database_url = f"sqlite+aiosqlite:///{logs / 'jobnik.db'}"
            port = free_port()
            replica = Replica(
                "manager",
                port,
                _manager_env(database_url, port, JOBNIK_LOG_LEVEL=log_level, **(manager_env or {})),
                logs / "manager.log",
            )
            replica.start()
            stack.callback(replica.stop)
            found = Deployment(kind, replica.url, database_url, None, [replica], logs)
        else:
            assert postgres_url is not None and amqp_url is not None
            found = _production(
                stack,
                logs,
                postgres_url,
                amqp_url,
                postgres,
                replicas,
                retention,
                pool_size,
                log_level,
                manager_env or {},
            )
        for stage_type, count in (stage_types or {}).items():
            for _ in range(count):
                found.start_worker(stage_type, **(worker_env or {}))
        try:
            yield found
        finally:
            for proc in found.workers:
                stop(proc, grace=15)


def _start_balancer(logs: Path, port: int, targets: list[str]) -> subprocess.Popen[bytes]:
    log, to = logs / "balancer.log", ",".join(targets)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.balancer", "--port", str(port), "--to", to],
            cwd=ROOT,
            env={**os.environ, "BALANCER_ROLES_FILE": str(logs / "roles.json")},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _wait_ready(f"http://127.0.0.1:{port}", proc, "balancer", log, "/_balancer/answers")
    return proc


def _production(
    stack: ExitStack,
    logs: Path,
    database_url: str,
    amqp_url: str,
    postgres: PrivatePostgres | None,
    replicas: int,
    retention: str,
    pool_size: int,
    log_level: str,
    manager_env: Mapping[str, str],
) -> Deployment:
    manager_command(database_url, "migrate")  # as before a rollout
    admin = manager_command(database_url, "tokens", "create", "--name", "admin", "--role", "admin")
    ports = [free_port() for _ in range(replicas)]
    balancer_port = free_port()
    balancer_url = f"http://127.0.0.1:{balancer_port}"
    # First, so that the replicas' first span exports find their collector.
    balancer = _start_balancer(logs, balancer_port, [f"http://127.0.0.1:{p}" for p in ports])
    stack.callback(stop, balancer, 10)
    shared = {
        "JOBNIK_AUTH": "on",
        "JOBNIK_METRICS": "true",
        "JOBNIK_LOG_FORMAT": "json",
        "JOBNIK_LOG_LEVEL": log_level,
        "JOBNIK_AMQP_URL": amqp_url,
        "JOBNIK_DB_POOL_SIZE": str(pool_size),
        "JOBNIK_RETENTION": retention,
        "JOBNIK_AUTO_MIGRATE": "false",
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{balancer_url}/_otlp/v1/traces",
        "OTEL_SERVICE_NAME": "jobnik-manager",
        **manager_env,
    }
    members = []
    for i, port in enumerate(ports):
        # Counters in files of the replica's own, kept across its restarts (as an
        # emptyDir volume is across a container's): a crash loses none of them.
        metrics_dir = logs / f"metrics-{i}"
        metrics_dir.mkdir(exist_ok=True)
        env = _manager_env(database_url, port, PROMETHEUS_MULTIPROC_DIR=str(metrics_dir), **shared)
        members.append(Replica(f"manager-{i}", port, env, logs / f"manager-{i}.log"))
    for member in members:
        member.start(wait=False)
        stack.callback(member.stop)
    for member in members:
        member.wait_ready()
    found = Deployment(
        "production",
        balancer_url,
        database_url,
        amqp_url,
        members,
        logs,
        postgres=postgres,
        tokens={"admin": admin},
        balancer_url=balancer_url,
    )
    found._tell_balancer_roles()
    for role in ("producer", "operator"):
        answer = httpx.post(
            f"{balancer_url}/v1/tokens",
            json={"name": role, "role": role},
            headers={"authorization": f"Bearer {admin}"},
            timeout=30,
        )
        answer.raise_for_status()
        found.tokens[role] = answer.json()["token"]
    found._tell_balancer_roles()
    return found
