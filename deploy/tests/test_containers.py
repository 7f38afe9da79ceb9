"""The images built and the compose stack run for real, on podman.

The manager's and the example worker's images are built with deploy/local/build-images.sh
on a Debian base made from Debian's packages (no registry is reachable here), and
deploy/compose.yaml is brought up by podman-compose with compose.local.yaml's stand-ins
for PostgreSQL, RabbitMQ and Prometheus (deploy/local/up.sh: podman 4.3 runs no health
checks by itself). Then, across containers: jobs submitted with curl, the CLI and the
SDK run to COMPLETED; a worker container killed mid-task has its task finished by the
other one; the manager container killed and started again loses nothing of the event
log; Prometheus scrapes every manager and worker container with prometheus/scrape.yaml,
and every query of the Grafana dashboard returns series from it.

Needs podman (with runc, netavark and aardvark-dns), debootstrap and podman-compose (the
`deploy` group); without them the tests skip, or fail with
JOBNIK_TEST_REQUIRE_DEPLOY_TOOLS=1 as in CI.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from test_deploy import DEPLOY, ROOT, missing

from jobnik_sdk import JobnikClient, JobStatus, NewStage, NewTask

# Image builds and a stack of seven containers: minutes, not the default 60 s.
pytestmark = pytest.mark.timeout(900)

LOCAL = DEPLOY / "local"
CONTAINERS_CONF = LOCAL / "containers.conf"
HANDLERS = Path(__file__).parent / "container_handlers"
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
PROJECT = "jobnik-ci"
WORKERS = 2
IMAGES = {
    "manager": "localhost/jobnik-manager:local",
    "worker": "localhost/jobnik-tile-render-worker:local",
}
BASE = "localhost/jobnik-debian-python:bookworm"
# The non-root user both images run as (the charts' runAsUser).
IMAGE_UID = "10001"
LEASE_SECONDS = 4
SCRAPE_SECONDS = 2


def _environment() -> dict[str, str]:
    env = dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))
    # podman-compose from this environment's bin folder (the `deploy` group).
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    return env


def run(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, env=_environment(), cwd=ROOT
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-3000:]}"
        )
    return done


def podman(*args: str, timeout: float = 120, check: bool = True) -> str:
    return run("podman", *args, timeout=timeout, check=check).stdout.strip()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def container(service: str, index: int = 1) -> str:
    return f"{PROJECT}_{service}_{index}"


# --- the images --------------------------------------------------------------------


@pytest.fixture(scope="module")
def engine() -> None:
    for tool, hint in (
        ("podman", "apt-get install podman runc netavark aardvark-dns"),
        ("debootstrap", "apt-get install debootstrap"),
    ):
        if shutil.which(tool) is None:
            missing(tool, hint)
    if shutil.which("podman-compose", path=_environment()["PATH"]) is None:
        missing("podman-compose", "uv run --group deploy pytest deploy/tests")
    # The base of every image (Debian 12 and its Python, from debootstrap), made once per
    # machine; then a container of it must start.
    made = run(str(LOCAL / "base-image.sh"), BASE, timeout=600, check=False)
    probe = run("podman", "run", "--rm", "--network", "none", BASE, "true", check=False)
    if made.returncode != 0 or probe.returncode != 0:
        missing("a working podman", (made.stderr + probe.stderr).strip()[-500:])


@pytest.fixture(scope="module")
def images(engine: None) -> str:
    """Builds every image; returns build-images.sh's report (time and size of each)."""
    env = {"CA_BUNDLE": str(CA_BUNDLE)} if CA_BUNDLE.exists() else {}
    done = subprocess.run(
        [str(LOCAL / "build-images.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        env=_environment() | env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def image_inspect(name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(podman("image", "inspect", name))[0]
    return found


def image_size(name: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", name))


@pytest.mark.parametrize("role", sorted(IMAGES))
def test_images_run_as_a_non_root_user_with_a_health_check(images: str, role: str) -> None:
    image = image_inspect(IMAGES[role])
    assert image["Config"]["User"] == IMAGE_UID
    # Docker's format keeps HEALTHCHECK (OCI images drop it).
    assert image["Healthcheck"]["Test"][0] == "CMD"
    assert IMAGES[role] in images  # build-images.sh reported it


@pytest.mark.parametrize(("role", "most"), [("manager", 150), ("worker", 60)])
def test_images_add_little_to_their_base(images: str, role: str, most: int) -> None:
    # Only the virtualenv reaches the runtime stage: no uv, no sources, no caches.
    added = (image_size(IMAGES[role]) - image_size(BASE)) / 1e6
    assert added < most, f"{role} image adds {added:.0f} MB to its base"
    listing = podman(
        "run", "--rm", "--entrypoint", "sh", IMAGES[role], "-c", "ls /opt; ls /src || true"
    )
    assert listing.split() == ["venv"], listing


def test_a_scaffolded_worker_project_builds_from_its_own_directory(
    images: str, tmp_path: Path
) -> None:
    # As a team outside the repository: the SDK's wheel (and beside it the protocol's and
    # the manager's, for the project's tests), `jobnik-worker new` run from it, `uv lock`,
    # then the project's own Dockerfile with the project folder as context.
    for package in ("jobnik-sdk", "jobnik-protocol", "jobnik-manager"):
        run("uv", "build", "--package", package, "--wheel", "--out-dir", str(tmp_path / "dist"))
    wheel = next((tmp_path / "dist").glob("jobnik_sdk-*.whl"))
    subprocess.run(
        ["uvx", "--from", str(wheel),
         "--with", str(next((tmp_path / "dist").glob("jobnik_protocol-*.whl"))),
         "jobnik-worker", "new", "map-export",
         "--stage-type", "map-export", "--sdk-source", str(wheel)],
        cwd=tmp_path, check=True, capture_output=True, env=_environment(),
    )  # fmt: skip
    project = tmp_path / "map-export"
    subprocess.run(["uv", "lock"], cwd=project, check=True, capture_output=True)
    ca = (
        ["--volume", f"{CA_BUNDLE}:{CA_BUNDLE}:ro", "--env", f"SSL_CERT_FILE={CA_BUNDLE}",
         "--env", f"PIP_CERT={CA_BUNDLE}"]
        if CA_BUNDLE.exists() else []
    )  # fmt: skip
    name = "localhost/map-export-worker:test"
    done = subprocess.run(
        ["podman", "build", "--format", "docker", "--network", "host", *ca,
         "--build-arg", f"BASE_IMAGE={BASE}", "-t", name, "."],
        cwd=project, capture_output=True, text=True, env=_environment(), timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    try:
        assert image_inspect(name)["Config"]["User"] == IMAGE_UID
        # Its entry point runs: with no manager to reach, a missing handler is refused at
        # once, by name, before anything connects.
        refused = run(
            "podman", "run", "--rm", "--env", "WORKER_HANDLER=map_export_worker.nowhere:run",
            name, check=False, timeout=60,
        )  # fmt: skip
        assert refused.returncode == 1
        assert "map_export_worker.nowhere" in refused.stderr + refused.stdout
    finally:
        podman("rmi", "-f", name, check=False)


# --- the stack ---------------------------------------------------------------------


@dataclass
class Stack:
    url: str
    prometheus: str
    compose: list[str]
    health_log: list[str]


def compose_command(override: Path) -> list[str]:
    return [
        "podman-compose", "-p", PROJECT, "-f", str(DEPLOY / "compose.yaml"),
        "-f", str(DEPLOY / "compose.local.yaml"), "-f", str(override),
        "--profile", "monitoring",
    ]  # fmt: skip


def write_override(folder: Path) -> Path:
    """What the test changes of compose.yaml: a short lease, a handler that can take its
    time, and Prometheus scraping every 2 s (else scrape.yaml unchanged)."""
    scrape = yaml.safe_load((DEPLOY / "prometheus" / "scrape.yaml").read_text())
    scrape["global"] = {
        "scrape_interval": f"{SCRAPE_SECONDS}s",
        "evaluation_interval": f"{SCRAPE_SECONDS}s",
    }
    (folder / "prometheus.yml").write_text(yaml.safe_dump(scrape))
    override = {
        "services": {
            "worker": {
                "environment": {
                    "WORKER_LEASE_SECONDS": str(LEASE_SECONDS),
                    "WORKER_HEARTBEAT_SECONDS": "1",
                    "WORKER_HANDLER": "slow_tiles:render",
                    "PYTHONPATH": "/opt/test-handlers",
                },
                "volumes": [f"{HANDLERS}:/opt/test-handlers:ro"],
            },
            "prometheus": {
                "volumes": [
                    f"{folder / 'prometheus.yml'}:/etc/prometheus/prometheus.yml:ro",
                    f"{DEPLOY / 'prometheus' / 'alerts.yaml'}:/etc/prometheus/alerts.yaml:ro",
                ]
            },
        }
    }
    path = folder / "compose.test.yaml"
    path.write_text(yaml.safe_dump(override))
    return path


def down(compose: list[str]) -> None:
    run(*compose, "down", "-v", "-t", "5", check=False, timeout=300)
    # podman-compose's down misses containers of a service scaled up after `up`.
    left = podman("ps", "-aq", "--filter", f"label=io.podman.compose.project={PROJECT}")
    if left:
        podman("rm", "-f", *left.split(), check=False)


@pytest.fixture(scope="module")
def stack(images: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("stack")
    compose = compose_command(write_override(folder))
    ports = {
        name: free_port() for name in ("JOBNIK_HTTP_PORT", "RABBITMQ_UI_PORT", "PROMETHEUS_PORT")
    }
    os.environ.update({k: str(v) for k, v in ports.items()})  # compose.yaml reads them
    down(compose)
    started = subprocess.run(
        [str(LOCAL / "up.sh"), PROJECT, str(WORKERS)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=_environment() | {"COMPOSE_OPTIONS": " ".join(compose[compose.index("-f", 6) :])},
    )
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield Stack(
            url=f"http://127.0.0.1:{ports['JOBNIK_HTTP_PORT']}",
            prometheus=f"http://127.0.0.1:{ports['PROMETHEUS_PORT']}",
            compose=compose,
            health_log=started.stdout.splitlines(),
        )
    finally:
        for name in ("manager", "worker"):
            logs = run("podman", "logs", "--tail", "40", container(name), check=False)
            print(f"--- {name} log\n{logs.stdout}{logs.stderr}")
        down(compose)


def job_body(name: str, stages: list[list[dict[str, Any]]], **task: Any) -> dict[str, Any]:
    return {
        "name": name,
        "data": {},
        "stages": [
            {"type": "tile-render", "data": {}, "tasks": [{"data": d, **task} for d in tasks]}
            for tasks in stages
        ],
    }


def tiles(n: int, zoom: int = 3, **extra: Any) -> list[dict[str, Any]]:
    return [{"x": i % 2**zoom, "y": i // 2**zoom, "zoom": zoom, **extra} for i in range(n)]


def wait_status(
    url: str, job_id: str, want: str = "COMPLETED", seconds: float = 90
) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=10).json()
        if job.get("status") in ("COMPLETED", "FAILED", "ABORTED"):
            break
        time.sleep(0.3)
    if job.get("status") != want:
        failed = [t for t in tasks_of(url, job_id) if t["status"] != "COMPLETED"]
        raise AssertionError(f"job {job_id}: {job.get('status')}, not {want}: {failed}")
    return job


def tasks_of(url: str, job_id: str) -> list[dict[str, Any]]:
    stages = httpx.get(f"{url}/v1/jobs/{job_id}/stages", timeout=10).json()
    found: list[dict[str, Any]] = []
    for stage in stages:
        page = httpx.get(f"{url}/v1/stages/{stage['id']}/tasks", timeout=10).json()
        found += page["items"]
    return found


def events_of(url: str, job_id: str) -> list[dict[str, Any]]:
    page = httpx.get(f"{url}/v1/jobs/{job_id}/events", params={"page_size": 1000}, timeout=10)
    items: list[dict[str, Any]] = page.json()["items"]
    return items


def test_every_container_turns_healthy_and_runs_as_its_user(stack: Stack) -> None:
    for service in ("postgres", "rabbitmq", "manager"):
        assert f"{container(service)} healthy" in stack.health_log
    for i in range(1, WORKERS + 1):
        assert f"{container('worker', i)} healthy" in stack.health_log
        assert podman("exec", container("worker", i), "id", "-u") == IMAGE_UID
    assert podman("exec", container("manager"), "id", "-u") == IMAGE_UID
    state = json.loads(podman("inspect", container("manager")))[0]["State"]
    assert state["Health"]["Status"] == "healthy"


def test_a_job_submitted_with_curl_completes_across_containers(stack: Stack) -> None:
    body = json.dumps(job_body("curl", [tiles(4), tiles(2), tiles(3)]))
    out = run(
        "curl", "-sf", "-X", "POST", f"{stack.url}/v1/jobs",
        "-H", "Content-Type: application/json", "-d", body,
    ).stdout  # fmt: skip
    job = wait_status(stack.url, json.loads(out)["id"])
    assert job["percentage"] == 100
    tasks = tasks_of(stack.url, job["id"])
    assert len(tasks) == 9 and {t["status"] for t in tasks} == {"COMPLETED"}


def test_a_job_submitted_with_the_cli_completes_across_containers(
    stack: Stack, tmp_path: Path
) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(job_body("cli", [tiles(3), tiles(3)])))
    job_id = run("jobnik", "create", str(spec), "--url", stack.url).stdout.strip()
    waited = run("jobnik", "wait", job_id, "--url", stack.url, timeout=120, check=False)
    assert waited.returncode == 0, waited.stdout + waited.stderr
    wait_status(stack.url, job_id)


def test_a_job_submitted_with_the_sdk_completes_across_containers(stack: Stack) -> None:
    async def submit() -> None:
        async with JobnikClient(stack.url) as client:
            job = await client.create_job(
                "sdk",
                stages=[
                    NewStage(type="tile-render", tasks=[NewTask(data=d) for d in tiles(n)])
                    for n in (2, 5)
                ],
            )
            done = await client.wait(job.id, timeout=timedelta(seconds=90))
            assert done.status is JobStatus.COMPLETED

    asyncio.run(submit())


def test_a_killed_worker_containers_task_is_finished_by_another(stack: Stack) -> None:
    created = httpx.post(
        f"{stack.url}/v1/jobs",
        json=job_body("kill-worker", [tiles(1, sleep=6)], maxAttempts=2),
        timeout=10,
    ).json()
    first = wait_for_claim(stack.url, created["id"])["worker"]
    victim = container_of(first)
    podman("kill", "--signal", "KILL", victim)
    wait_status(stack.url, created["id"], seconds=60)
    (task,) = tasks_of(stack.url, created["id"])
    assert task["status"] == "COMPLETED"
    assert task["worker"] != first
    # Claimed twice: the first attempt's lease ran out, the other worker took it.
    assert claims_of(stack.url, created["id"]) == [first, task["worker"]]
    podman("start", victim)  # as the restart policy would, for the tests after this


def test_a_restarted_manager_container_loses_nothing(stack: Stack) -> None:
    # A job in flight while the manager is killed: it completes once the manager is back,
    # and the event log it had before is all still there, each task completed once.
    created = httpx.post(
        f"{stack.url}/v1/jobs",
        json=job_body("restart", [tiles(8, sleep=0.5), tiles(4)]),
        timeout=10,
    ).json()
    time.sleep(1.5)
    before = events_of(stack.url, created["id"])
    assert before
    podman("kill", "--signal", "KILL", container("manager"))
    podman("start", container("manager"))
    deadline = time.monotonic() + 60
    while run("podman", "healthcheck", "run", container("manager"), check=False).returncode:
        assert time.monotonic() < deadline, "the manager did not turn healthy again"
        time.sleep(1)
    wait_status(stack.url, created["id"], seconds=90)
    after = events_of(stack.url, created["id"])
    assert after[: len(before)] == before
    completed = [e for e in after if e["entity"] == "TASK" and e["toStatus"] == "COMPLETED"]
    assert len(completed) == 12, after
    assert len({e["entityId"] for e in completed}) == 12


# --- Prometheus ------------------------------------------------------------------


# Room for the queue ahead of it (a retry, a time limit run past) and for an idle worker
# that missed a wake-up, which claims at its next safety poll (every 30 s).
def wait_for_claim(url: str, job_id: str, seconds: float = 75) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        (task,) = tasks_of(url, job_id)
        if task["status"] == "IN_PROGRESS" and task.get("worker"):
            return task
        assert time.monotonic() < deadline, task
        time.sleep(0.2)


def container_of(worker: str) -> str:
    """The worker container whose process has this name (<hostname>-<pid>)."""
    return next(
        name
        for name in (container("worker", i) for i in range(1, WORKERS + 1))
        if worker.startswith(podman("inspect", "--format", "{{.Config.Hostname}}", name) + "-")
    )


def claims_of(url: str, job_id: str) -> list[str]:
    """The workers that claimed the job's tasks, in order."""
    return [
        e["worker"]
        for e in events_of(url, job_id)
        if e["entity"] == "TASK" and e["toStatus"] == "IN_PROGRESS"
    ]


def make_trouble(stack: Stack) -> None:
    """What the quiet path never shows: a retry and a final failure (data off the map),
    a time limit run past, a lease lost by a worker that froze, and 503s while the
    database is away."""
    post = partial(httpx.post, f"{stack.url}/v1/jobs", timeout=10)
    bad = post(json=job_body("off-the-map", [[{"x": 9, "y": 0, "zoom": 1}]], maxAttempts=2))
    late = post(json=job_body("too-slow", [tiles(1, sleep=3)], timeoutSeconds=1)).json()
    frozen = post(json=job_body("frozen", [tiles(1, sleep=8)], maxAttempts=3)).json()
    victim = container_of(wait_for_claim(stack.url, frozen["id"])["worker"])
    podman("pause", victim)
    try:  # until the lease ran out and another worker has the task
        deadline = time.monotonic() + 30
        while len(claims_of(stack.url, frozen["id"])) < 2:
            assert time.monotonic() < deadline, "the frozen worker's task was not taken over"
            time.sleep(0.3)
    finally:
        podman("unpause", victim)
    wait_status(stack.url, bad.json()["id"], want="FAILED")
    wait_status(stack.url, late["id"], want="FAILED")
    wait_status(stack.url, frozen["id"], seconds=60)
    podman("stop", "-t", "10", container("postgres"))
    try:
        assert httpx.get(f"{stack.url}/readiness", timeout=10).status_code == 503
    finally:
        podman("start", container("postgres"))
    deadline = time.monotonic() + 60
    while httpx.get(f"{stack.url}/readiness", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the manager did not get its database back"
        time.sleep(0.5)


def query(stack: Stack, expr: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{stack.prometheus}/api/v1/query", params={"query": expr}, timeout=10)
    assert answer.status_code == 200, f"{expr}: {answer.text}"
    result: list[dict[str, Any]] = answer.json()["data"]["result"]
    return result


def test_prometheus_scrapes_every_container_and_each_dashboard_query_has_series(
    stack: Stack,
) -> None:
    make_trouble(stack)
    # Work waiting and work running while Prometheus looks: the manager's state gauges
    # have a series per stage type with tasks in that state. No worker claims
    # tile-archive; the tile-render task takes 20 s.
    waiting = job_body("waiting", [tiles(2)])
    waiting["stages"][0]["type"] = "tile-archive"
    httpx.post(f"{stack.url}/v1/jobs", json=waiting, timeout=10).raise_for_status()
    # A container started again may have a new address, which Prometheus finds at its
    # next DNS look-up (every 30 s) and then scrapes.
    expected = [("jobnik-manager", "up")] + [("jobnik-worker", "up")] * WORKERS
    deadline = time.monotonic() + 90
    while True:
        targets = httpx.get(f"{stack.prometheus}/api/v1/targets", timeout=10).json()["data"]
        health = sorted((t["labels"]["job"], t["health"]) for t in targets["activeTargets"])
        if health == expected or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert health == expected
    # A rate over the panels' window needs two scrapes of each target inside it: a target
    # found again (above) may have only one yet.
    deadline = time.monotonic() + 90
    while len(query(stack, "count_over_time(up[1m]) >= 2")) < len(expected):
        assert time.monotonic() < deadline, "some target was not scraped twice in a minute"
        time.sleep(1)
    # Started only now, so that its 20 s outlast the queries below: the waits above can
    # take longer, and a lease's gauge has no series once its task is done.
    running = httpx.post(
        f"{stack.url}/v1/jobs", json=job_body("running", [tiles(1, sleep=20)]), timeout=10
    ).json()
    wait_for_claim(stack.url, running["id"])
    time.sleep(4 * SCRAPE_SECONDS)  # scraped since, twice at least
    rules = httpx.get(f"{stack.prometheus}/api/v1/rules", timeout=10).json()["data"]
    alerts = [r for g in rules["groups"] for r in g["rules"] if r["type"] == "alerting"]
    assert len(alerts) == 9 and {r["health"] for r in alerts} == {"ok"}
    dashboard = json.loads((DEPLOY / "grafana" / "jobnik-dashboard.json").read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    # A counter's series is born with its first increment; a rate over it has a point
    # once two scrapes saw that series, which may be a scrape or two after the targets'.
    # Each query counts once it has had series in some pass.
    exprs = {
        f"{panel['title']}: {target['expr']}": target["expr"]
        for panel in panels
        for target in panel["targets"]
    }
    empty = list(exprs)
    deadline = time.monotonic() + 60
    while True:
        empty = [name for name in empty if not query(stack, grafana_query(exprs[name]))]
        if not empty or time.monotonic() > deadline:
            break
        time.sleep(SCRAPE_SECONDS)
    assert not empty, "queries without series:\n" + "\n".join(empty)


def grafana_query(expr: str) -> str:
    """As Grafana sends it: every stage type, and a rate window of four scrapes."""
    return expr.replace("$__rate_interval", "1m").replace("$stage_type", ".*")


def test_containers_stop_cleanly_on_sigterm(stack: Stack) -> None:
    # Last: it stops them. Exit 0, not 137: each process is PID 1 and stops on SIGTERM
    # itself, within the time podman gives it before SIGKILL. The workers first, as
    # compose does (they depend on the manager): they report what they still run.
    workers = [container("worker", i) for i in range(1, WORKERS + 1)]
    podman("stop", "-t", "30", *workers, timeout=120)
    podman("stop", "-t", "30", container("manager"), timeout=120)
    for name in [*workers, container("manager")]:
        assert podman("inspect", "--format", "{{.State.ExitCode}}", name) == "0", name
    assert "worker stopped" in run("podman", "logs", "--tail", "5", container("worker")).stderr


# --- the README on a distribution's own Python ---------------------------------------


def readme_commands() -> list[str]:
    """The two commands of the README's quick start, as written."""
    text = (ROOT / "README.md").read_text()
    quick = text.split("\n## Quick start\n", 1)[1].split("\n### ", 1)[0]
    return [block.strip() for block in re.findall(r"^```sh\n(.*?)^```", quick, re.M | re.S)]


def test_the_readmes_two_commands_work_on_debian_12s_own_python(
    engine: None, tmp_path: Path
) -> None:
    # Debian 12 with its own Python 3.11 and venv module, nothing else (base-image.sh,
    # made by `engine`), and a checkout of this commit: no uv, no pip, no environment.
    checkout = tmp_path / "jobnik"
    checkout.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=ROOT, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive.stdout, check=True)
    demo, tests = readme_commands()
    assert demo.endswith("run jobnik-manager serve --demo") and tests.endswith("run pytest")
    port = free_port()
    script = f"""
set -u
cd /src
command -v uv pip || true
{demo} >/tmp/demo.log 2>&1 &
server=$!
for _ in $(seq 1 300); do
  grep -q "demo: done; job COMPLETED 100%" /tmp/demo.log && break
  sleep 1
done
echo "readiness: $(python3 -c "import urllib.request as u; \
print(u.urlopen('http://127.0.0.1:{port}/readiness').read().decode())")"
kill $server; wait $server
grep -E "demo:|uvw:" /tmp/demo.log
{tests} -q -p no:cacheprovider 2>&1 | tail -5
echo "tests exited ${{PIPESTATUS[0]:-?}}"
"""
    ca = (
        ["--volume", f"{CA_BUNDLE}:{CA_BUNDLE}:ro", "--env", f"SSL_CERT_FILE={CA_BUNDLE}",
         "--env", f"PIP_CERT={CA_BUNDLE}"]
        if CA_BUNDLE.exists() else []
    )  # fmt: skip
    done = run(
        "podman", "run", "--rm", "--network", "host", *ca,
        "--volume", f"{checkout}:/src", "--env", f"JOBNIK_PORT={port}",
        BASE, "bash", "-c", script,
        timeout=840, check=False,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert "demo: done; job COMPLETED 100%" in said, said[-4000:]
    assert 'readiness: {"status":"ok"}' in said, said[-4000:]
    assert "tests exited 0" in said and " passed" in said, said[-4000:]
