"""Checks of the observability files: the Grafana dashboard, the Prometheus alerts and
scrape configuration, and the charts' ServiceMonitor, PodMonitor and PrometheusRule.

Every expression is checked by Prometheus's own promtool (`check rules`; the alerts also
by `test rules`, deploy/prometheus/alerts.test.yaml) and may name only the metrics the
manager and the workers export; test_containers.py runs every dashboard query against a
real Prometheus. Those names are checked against real scrapes: a manager process on
a temporary SQLite database, and a Worker of the SDK serving its metrics port, run a
small job, and every name the dashboard and the alerts use must be in what they answer.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from test_deploy import (
    COMPOSE,
    DB_URL,
    DEPLOY,
    MANAGER_CHART,
    WORKER_CHART,
    import_or_missing,
    missing,
    only,
    render,
)

from jobnik_sdk import TaskContext
from tests.support.processes import free_port, manager_process
from tests.support.workers import worker

DASHBOARD = DEPLOY / "grafana" / "jobnik-dashboard.json"
ALERTS = DEPLOY / "prometheus" / "alerts.yaml"
ALERTS_TESTS = DEPLOY / "prometheus" / "alerts.test.yaml"
CHART_ALERTS = MANAGER_CHART / "files" / "alerts.yaml"
SCRAPE = DEPLOY / "prometheus" / "scrape.yaml"

COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"

# The manager's metrics by family name (a scrape's counters end in _total, histograms in
# _bucket, _sum and _count).
MANAGER_METRICS = {
    "jobnik_task_claims": COUNTER,
    "jobnik_task_completions": COUNTER,
    "jobnik_task_failures": COUNTER,
    "jobnik_task_retries": COUNTER,
    "jobnik_leases_reaped": COUNTER,
    "jobnik_task_timeouts": COUNTER,
    "jobnik_task_run_seconds": HISTOGRAM,
    "jobnik_claim_latency_seconds": HISTOGRAM,
    "jobnik_report_latency_seconds": HISTOGRAM,
    "jobnik_http_requests": COUNTER,
    "jobnik_http_request_duration_seconds": HISTOGRAM,
    "jobnik_relay_publish_lag_seconds": HISTOGRAM,
    "jobnik_relay_published": COUNTER,
    "jobnik_db_pool_connections": GAUGE,
    "jobnik_db_pool_size": GAUGE,
    "jobnik_build_info": GAUGE,
    "jobnik_tasks_ready": GAUGE,
    "jobnik_tasks_oldest_ready_age_seconds": GAUGE,
    "jobnik_tasks_in_flight": GAUGE,
    "jobnik_leases_expiring": GAUGE,
    "jobnik_jobs": GAUGE,
    "jobnik_stages": GAUGE,
    "jobnik_outbox_backlog": GAUGE,
    "jobnik_outbox_oldest_age_seconds": GAUGE,
}
# Read from the database at scrape time: every replica exports the same value, so a
# sum over replicas would multiply it.
STATE_GAUGES = {
    "jobnik_tasks_ready",
    "jobnik_tasks_oldest_ready_age_seconds",
    "jobnik_tasks_in_flight",
    "jobnik_leases_expiring",
    "jobnik_jobs",
    "jobnik_stages",
    "jobnik_outbox_backlog",
    "jobnik_outbox_oldest_age_seconds",
}
WORKER_METRICS = {
    "jobnik_worker_tasks_in_flight": GAUGE,
    "jobnik_worker_handler_seconds": HISTOGRAM,
    "jobnik_worker_failures": COUNTER,
    "jobnik_worker_claims": COUNTER,
    "jobnik_worker_empty_polls": COUNTER,
    "jobnik_worker_heartbeat_seconds": HISTOGRAM,
    "jobnik_worker_leases_lost": COUNTER,
}
# The port the examples and the worker chart give a worker's metrics.
WORKER_METRICS_PORT = 9100
# Prometheus's own series, there for any target.
BUILTIN = {"up"}

SUFFIXES = {COUNTER: ("_total",), HISTOGRAM: ("_bucket", "_sum", "_count"), GAUGE: ("",)}


def sample_names(families: dict[str, str]) -> dict[str, str]:
    """The names a scrape's samples carry, each with its family's type."""
    return {
        name + suffix: kind
        for name, kind in families.items()
        for suffix in SUFFIXES.get(kind, ("",))
    }


KNOWN = sample_names(MANAGER_METRICS | WORKER_METRICS)
FAMILY_OF = {
    name + suffix: name
    for name, kind in (MANAGER_METRICS | WORKER_METRICS).items()
    for suffix in SUFFIXES[kind]
}


def families_of(text: str) -> dict[str, str]:
    """A scrape's Jobnik metric families (declared, whether or not they have samples
    yet)."""
    return {
        f.name: f.type for f in text_string_to_metric_families(text) if f.name.startswith("jobnik_")
    }


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples_of(text: str) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


METRIC_NAME = re.compile(r"\b(jobnik_[a-z_]+|up)\b")
GROUPING = re.compile(r"\bby \(([^)]*)\)")


def metric_names(expr: str) -> set[str]:
    """The metrics an expression selects."""
    return set(METRIC_NAME.findall(expr)) - BUILTIN


def grafana_to_promql(expr: str) -> str:
    """A dashboard query as Prometheus runs it once Grafana has filled in its variables."""
    return expr.replace("$__rate_interval", "1m").replace("$stage_type", ".*")


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("promtool") is None:
        missing("promtool", "apt-get install prometheus (Debian's package has promtool)")
    return subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=60)


def check_expressions(exprs: list[str], tmp_path: Path) -> None:
    """Prometheus's own parser over each expression, as recording rules promtool checks."""
    rules = {
        "groups": [
            {
                "name": "check",
                "rules": [{"record": f"check:{i}", "expr": e} for i, e in enumerate(exprs)],
            }
        ]
    }
    path = tmp_path / "exprs.yaml"
    path.write_text(yaml.safe_dump(rules))
    done = promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_refuses_a_broken_expression(tmp_path: Path) -> None:
    # The check below is worth something only if a broken expression fails it.
    with pytest.raises(AssertionError, match="parse error"):
        check_expressions(["sum(rate(jobnik_task_claims_total[5m])"], tmp_path)


# --- the dashboard --------------------------------------------------------------


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def dashboard_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    panels = []
    for panel in dashboard["panels"]:
        panels.extend(panel.get("panels", []))  # those of a collapsed row
        if panel["type"] != "row":
            panels.append(panel)
    return panels


def dashboard_exprs(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard_panels(dashboard) for t in p["targets"]]


def test_dashboard_variables(dashboard: dict[str, Any]) -> None:
    assert 36 <= dashboard["schemaVersion"] <= 41
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    stage_type = variables["stage_type"]
    assert stage_type["datasource"]["uid"] == "${datasource}"
    query = re.fullmatch(r"label_values\((\w+), *(\w+)\)", stage_type["query"]["query"])
    assert query and query.groups() == ("jobnik_tasks_ready", "stage_type")
    # "All" matches every stage type through =~.
    assert stage_type["includeAll"] and stage_type["allValue"] == ".*"


def test_dashboard_panels(dashboard: dict[str, Any]) -> None:
    panels = dashboard_panels(dashboard)
    assert len(panels) >= 25
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    taken: set[tuple[int, int]] = set()
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & taken, f"{panel['title']} overlaps another panel"
        taken |= cells
    for panel in panels:
        assert panel["targets"], f"{panel['title']} has no query"
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
        # A series given a unit or axis of its own is found by its legend.
        legends = {t.get("legendFormat") for t in panel["targets"]}
        for override in panel["fieldConfig"]["overrides"]:
            assert override["matcher"]["id"] == "byName", panel["title"]
            assert override["matcher"]["options"] in legends, panel["title"]


def test_dashboard_queries_parse_and_use_known_metrics(
    dashboard: dict[str, Any], tmp_path: Path
) -> None:
    exprs = dashboard_exprs(dashboard)
    check_expressions([grafana_to_promql(e) for e in exprs], tmp_path)
    used = set().union(*(metric_names(e) for e in exprs))
    unknown = used - set(KNOWN)
    assert not unknown, f"no metric of the manager or the workers: {sorted(unknown)}"
    # Every metric of the manager and the workers is shown somewhere.
    unshown = set(MANAGER_METRICS | WORKER_METRICS) - {FAMILY_OF.get(n) for n in used}
    assert not unshown, f"no panel shows {sorted(unshown)}"


def test_dashboard_filters_by_the_stage_type_variable(dashboard: dict[str, Any]) -> None:
    # What is shown per stage type follows the stage types chosen at the top.
    for expr in dashboard_exprs(dashboard):
        if any("stage_type" in g for g in GROUPING.findall(expr)):
            assert 'stage_type=~"$stage_type"' in expr, expr


# --- the alerts and the scrape configuration -------------------------------------

DURATION = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+")
# The alerts the README explains, one each.
EXPECTED_ALERTS = {
    "JobnikManagerDown",
    "JobnikManagerAbsent",
    "JobnikTaskWaitingTooLong",
    "JobnikTaskFailureRatioHigh",
    "JobnikLeasesReapedBurst",
    "JobnikOutboxStuck",
    "JobnikOutboxBacklogGrowing",
    "JobnikRelayLagHigh",
    "JobnikHttp5xxRatioHigh",
}


def alert_rules(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    assert set(data) == {"groups"}
    rules: list[dict[str, Any]] = []
    for group in data["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["name"], group
        rules.extend(group["rules"])
    return rules


def test_alert_rules() -> None:
    rules = alert_rules(ALERTS)
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names))
    assert set(names) == EXPECTED_ALERTS
    readme = (DEPLOY / "grafana" / "README.md").read_text()
    unexplained = {n for n in names if f"| `{n}` (" not in readme}
    assert not unexplained, f"grafana/README.md does not explain {sorted(unexplained)}"
    for rule in rules:
        name = rule["alert"]
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
        assert DURATION.fullmatch(rule.get("for", "0s")), name
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert {"summary", "description"} <= set(rule["annotations"]), name
        assert not metric_names(rule["expr"]) - set(KNOWN), name
    done = promtool("check", "rules", str(ALERTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout


def test_alert_rules_unit_tests_pass_and_cover_every_alert() -> None:
    done = promtool("test", "rules", str(ALERTS_TESTS))
    assert done.returncode == 0, done.stdout + done.stderr
    # Each alert is shown firing and shown quiet.
    tests = yaml.safe_load(ALERTS_TESTS.read_text())["tests"]
    cases = [case for test in tests for case in test["alert_rule_test"]]
    firing = {c["alertname"] for c in cases if c["exp_alerts"]}
    quiet = {c["alertname"] for c in cases if not c["exp_alerts"]}
    assert firing == quiet == EXPECTED_ALERTS


def test_a_wrong_expectation_fails_the_unit_tests(tmp_path: Path) -> None:
    tests = yaml.safe_load(ALERTS_TESTS.read_text())
    tests["rule_files"] = [str(ALERTS)]
    case = tests["tests"][0]["alert_rule_test"][0]  # JobnikManagerDown still pending
    case["exp_alerts"] = [{"exp_labels": {"severity": "critical"}}]
    broken = tmp_path / "alerts.test.yaml"
    broken.write_text(yaml.safe_dump(tests))
    assert promtool("test", "rules", str(broken)).returncode == 1


def test_state_gauges_are_never_summed_over_replicas(dashboard: dict[str, Any]) -> None:
    # Every replica exports the same value: a sum would multiply it by the replicas.
    exprs = dashboard_exprs(dashboard) + [r["expr"] for r in alert_rules(ALERTS)]
    for expr in exprs:
        for name in metric_names(expr) & STATE_GAUGES:
            within_max = rf"max(?: by \([^)]*\))? ?\((?:\w+\()?{name}\b"
            assert len(re.findall(within_max, expr)) == expr.count(name), expr


def test_alert_rules_in_the_chart_are_the_same() -> None:
    assert yaml.safe_load(CHART_ALERTS.read_text()) == yaml.safe_load(ALERTS.read_text())


def test_scrape_config() -> None:
    config = yaml.safe_load(SCRAPE.read_text())
    for rule_file in config["rule_files"]:
        assert (SCRAPE.parent / rule_file).resolve() == ALERTS
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"jobnik-manager", "jobnik-worker"}
    # The job the manager's alerts look for.
    for rule in alert_rules(ALERTS):
        for job in re.findall(r'job="([^"]+)"', rule["expr"]):
            assert job in jobs, rule["alert"]
    for job in jobs.values():
        assert job["metrics_path"] == "/metrics"
        assert DURATION.fullmatch(config["global"]["scrape_interval"])
    # The names it finds are compose.yaml's services, on the ports they serve on.
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    (manager,) = jobs["jobnik-manager"]["dns_sd_configs"]
    assert manager["names"] == ["manager"]
    command = services["manager"]["command"]
    assert str(manager["port"]) == command[command.index("--port") + 1]
    (workers,) = jobs["jobnik-worker"]["dns_sd_configs"]
    assert workers["names"] == ["worker"]
    assert workers["port"] == WORKER_METRICS_PORT
    assert services["worker"]["environment"]["WORKER_METRICS_PORT"] == str(WORKER_METRICS_PORT)


# --- real scrapes ---------------------------------------------------------------

STAGE = "metrics-check"
WORKER_STAGE = "metrics-worker"


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def job_of_two(stage_type: str) -> dict[str, Any]:
    """A job of one stage with two tasks, each allowed a second attempt."""
    tasks = [{"data": {"i": i}, "maxAttempts": 2} for i in range(2)]
    return {
        "name": f"{stage_type}-job",
        "data": {},
        "stages": [{"type": stage_type, "data": {}, "tasks": tasks}],
    }


@pytest.fixture(scope="module")
def manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("manager")
    with manager_process(f"sqlite+aiosqlite:///{folder / 'j.db'}", log=folder / "log") as url:
        yield url


@pytest.fixture(scope="module")
def manager_scrapes(manager: str) -> dict[str, str]:
    """/metrics of the manager at each step of a job run by hand: created, both tasks
    claimed, and done (one task failed once, was retried and completed)."""
    scrapes = {}
    with httpx.Client(base_url=manager, timeout=10) as http:

        def call(method: str, url: str, expect: int, **kw: Any) -> Any:
            response = http.request(method, url, **kw)
            assert response.status_code == expect, response.text
            return response.json()

        def scrape() -> str:
            response = http.get("/metrics")
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/plain")
            return response.text

        scrapes["before"] = scrape()
        call("POST", "/v1/jobs", 201, json=job_of_two(STAGE))
        scrapes["created"] = scrape()
        claim = f"/v1/stages/{STAGE}/tasks/dequeue"
        first, second = call("PATCH", claim, 200), call("PATCH", claim, 200)
        scrapes["claimed"] = scrape()
        failed = {"status": "FAILED", "reason": "flaked"}
        assert call("PUT", f"/v1/tasks/{first['id']}/status", 200, json=failed)
        assert call("PUT", f"/v1/tasks/{second['id']}/status", 200, json={"status": "COMPLETED"})
        again = call("PATCH", claim, 200)
        assert again["id"] == first["id"]
        assert call("PUT", f"/v1/tasks/{again['id']}/status", 200, json={"status": "COMPLETED"})
        scrapes["done"] = scrape()
    return scrapes


def test_manager_metrics_follow_the_job(manager_scrapes: dict[str, str]) -> None:
    before = samples_of(manager_scrapes["before"])

    def more(samples: Samples, name: str, **labels: str) -> float:
        """How much a value grew since before the job: other tests share the manager."""
        return (value(samples, name, **labels) or 0) - (value(before, name, **labels) or 0)

    created = samples_of(manager_scrapes["created"])
    assert value(created, "jobnik_tasks_ready", stage_type=STAGE) == 2
    assert (value(created, "jobnik_tasks_oldest_ready_age_seconds", stage_type=STAGE) or 0) >= 0
    assert more(created, "jobnik_jobs", status="PENDING") == 1
    claimed = samples_of(manager_scrapes["claimed"])
    assert value(claimed, "jobnik_tasks_in_flight", stage_type=STAGE) == 2
    assert not value(claimed, "jobnik_tasks_ready", stage_type=STAGE)
    assert more(claimed, "jobnik_jobs", status="IN_PROGRESS") == 1

    done = samples_of(manager_scrapes["done"])
    assert value(done, "jobnik_task_claims_total", stage_type=STAGE) == 3
    assert value(done, "jobnik_task_completions_total", stage_type=STAGE) == 2
    failure = {"stage_type": STAGE, "reason_class": "reported", "final": "false"}
    assert value(done, "jobnik_task_failures_total", **failure) == 1
    assert value(done, "jobnik_task_retries_total", stage_type=STAGE) == 1
    assert value(done, "jobnik_claim_latency_seconds_count", stage_type=STAGE) == 3
    assert more(done, "jobnik_report_latency_seconds_count") == 3
    run = {"stage_type": STAGE, "status": "COMPLETED"}
    assert value(done, "jobnik_task_run_seconds_count", **run) == 2
    route = {"method": "PATCH", "route": "/v1/stages/{stageType}/tasks/dequeue"}
    assert more(done, "jobnik_http_requests_total", status="200", **route) == 3
    assert more(done, "jobnik_http_request_duration_seconds_count", **route) == 3
    assert more(done, "jobnik_jobs", status="COMPLETED") == 1
    assert more(done, "jobnik_stages", status="COMPLETED") == 1
    assert not value(done, "jobnik_tasks_in_flight", stage_type=STAGE)
    assert value(done, "jobnik_outbox_backlog") == 0
    assert (value(done, "jobnik_db_pool_size") or 0) >= 1
    assert {labels for name, labels in done if name == "jobnik_build_info"}


def names_used() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [*dashboard_exprs(dashboard), *(r["expr"] for r in alert_rules(ALERTS))]
    variable = next(v for v in dashboard["templating"]["list"] if v["name"] == "stage_type")
    used = {m.group(1) for m in re.finditer(r"label_values\((\w+)", variable["definition"])}
    for expr in exprs:
        used |= metric_names(expr)
    return used


def test_manager_scrape_has_every_name_the_dashboard_and_alerts_use(
    manager_scrapes: dict[str, str],
) -> None:
    exposed = sample_names(families_of(manager_scrapes["done"]))
    used = {n for n in names_used() if not n.startswith("jobnik_worker_")}
    assert used, "no manager metric in the dashboard"
    assert not used - set(exposed), f"not in the manager's /metrics: {sorted(used - set(exposed))}"
    # The types the checks of the expressions assume.
    assert {n: exposed[n] for n in used} == {n: KNOWN[n] for n in used}


@pytest.fixture(scope="module")
def worker_scrape(manager: str) -> str:
    """/metrics of a Worker that ran a job of two tasks, one of which failed once."""

    async def handler(data: dict[str, Any], ctx: TaskContext) -> None:
        if data["i"] == 0 and ctx.attempt == 1:
            raise RuntimeError("flaked")

    async def run() -> str:
        port = free_port()
        async with httpx.AsyncClient(base_url=manager, timeout=10) as http:
            created = await http.post("/v1/jobs", json=job_of_two(WORKER_STAGE))
            assert created.status_code == 201, created.text
            job_url = f"/v1/jobs/{created.json()['id']}"
            async with worker(
                manager, WORKER_STAGE, handler, metrics_port=port, claim_wait=timedelta(0)
            ):
                deadline = time.monotonic() + 20
                while (await http.get(job_url)).json()["status"] != "COMPLETED":
                    assert time.monotonic() < deadline, "the worker did not finish the job"
                    await asyncio.sleep(0.05)
                scraped = await http.get(f"http://127.0.0.1:{port}/metrics")
                assert scraped.status_code == 200
                return scraped.text

    return asyncio.run(run())


def test_worker_metrics_follow_the_job(worker_scrape: str) -> None:
    samples = samples_of(worker_scrape)
    assert value(samples, "jobnik_worker_claims_total", stage_type=WORKER_STAGE) == 3
    outcomes = {"completed": 2, "retried": 1}
    for outcome, count in outcomes.items():
        labels = {"stage_type": WORKER_STAGE, "outcome": outcome}
        assert value(samples, "jobnik_worker_handler_seconds_count", **labels) == count
    error = {"stage_type": WORKER_STAGE, "error_type": "RuntimeError"}
    assert value(samples, "jobnik_worker_failures_total", **error) == 1
    assert value(samples, "jobnik_worker_tasks_in_flight", stage_type=WORKER_STAGE) == 0


def test_worker_scrape_has_every_name_the_dashboard_uses(worker_scrape: str) -> None:
    exposed = sample_names(families_of(worker_scrape))
    used = {n for n in names_used() if n.startswith("jobnik_worker_")}
    assert used, "no worker metric in the dashboard"
    assert not used - set(exposed), f"not in a worker's /metrics: {sorted(used - set(exposed))}"
    assert {n: exposed[n] for n in used} == {n: KNOWN[n] for n in used}


# --- the charts' ServiceMonitor, PodMonitor and PrometheusRule --------------------
# CRDs of the Prometheus Operator, which kubernetes-validate has no schemas for: their
# fields are checked here instead.

MONITORING = "monitoring.coreos.com/v1"
MANAGER_VALUES = {"database": {"url": DB_URL}}
MANAGER_METRICS_ON = {
    **MANAGER_VALUES,
    "metrics": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
    },
}
WORKER_METRICS_ON = {
    "metrics": {"enabled": True, "podMonitor": {"enabled": True}},
    "stageTypes": [{"name": "tile-render"}, {"name": "tile-publish"}],
}


@pytest.fixture(scope="module")
def helm() -> Any:
    return import_or_missing("helm_python", "helm-python-sdk")


def monitoring(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["apiVersion"].startswith("monitoring.coreos.com/")]


def scrape_job(endpoint: dict[str, Any]) -> str:
    (relabel,) = [r for r in endpoint["relabelings"] if r["targetLabel"] == "job"]
    assert relabel["action"] == "replace"
    return str(relabel["replacement"])


def test_monitoring_is_off_by_default(helm: Any) -> None:
    assert not monitoring(render(helm, MANAGER_CHART, MANAGER_VALUES))
    docs = render(helm, WORKER_CHART)
    assert not monitoring(docs)
    (container,) = only(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"]
    assert "ports" not in container
    assert "WORKER_METRICS_PORT" not in {e["name"] for e in container["env"]}


def test_manager_service_monitor(helm: Any) -> None:
    docs = render(helm, MANAGER_CHART, MANAGER_METRICS_ON)
    (monitor,) = only(docs, "ServiceMonitor")
    (service,) = only(docs, "Service")
    assert monitor["apiVersion"] == MONITORING
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    spec = monitor["spec"]
    # It finds the chart's Service, in the release's namespace, and scrapes its pods.
    assert spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert spec["selector"]["matchLabels"] == service["spec"]["selector"]
    assert spec["namespaceSelector"] == {"matchNames": ["jobnik"]}
    (endpoint,) = spec["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["path"] == "/metrics"
    assert DURATION.fullmatch(endpoint["interval"])
    assert DURATION.fullmatch(endpoint["scrapeTimeout"])
    # The job name the alerts and scrape.yaml use.
    assert scrape_job(endpoint) == "jobnik-manager"


def test_manager_prometheus_rule_holds_the_alerts(helm: Any) -> None:
    docs = render(helm, MANAGER_CHART, MANAGER_METRICS_ON)
    (rule,) = only(docs, "PrometheusRule")
    assert rule["apiVersion"] == MONITORING
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert set(rule["spec"]) == {"groups"}
    # Prometheus's {{ $labels.x }} templates reach it as they are in the file.
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())


def test_manager_renders_each_monitoring_object_on_its_own(helm: Any) -> None:
    for key, kind in (("serviceMonitor", "ServiceMonitor"), ("prometheusRule", "PrometheusRule")):
        docs = render(helm, MANAGER_CHART, {**MANAGER_VALUES, "metrics": {key: {"enabled": True}}})
        assert [d["kind"] for d in monitoring(docs)] == [kind]


def test_worker_pod_monitor(helm: Any) -> None:
    docs = render(helm, WORKER_CHART, WORKER_METRICS_ON)
    (monitor,) = only(docs, "PodMonitor")
    assert monitor["apiVersion"] == MONITORING
    spec = monitor["spec"]
    assert spec["namespaceSelector"] == {"matchNames": ["jobnik"]}
    (endpoint,) = spec["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    assert scrape_job(endpoint) == "jobnik-worker"
    deployments = only(docs, "Deployment")
    assert len(deployments) == 2
    for deployment in deployments:
        pod = deployment["spec"]["template"]
        # Every stage type's pods are selected, on a port they name and serve.
        assert spec["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        (container,) = pod["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert str(ports[endpoint["port"]]) == env["WORKER_METRICS_PORT"]
        assert ports[endpoint["port"]] == WORKER_METRICS_PORT


def test_worker_template_serves_on_the_port_the_chart_names(
    helm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tile_render_worker.settings import WorkerSettings

    (deployment, *_) = only(render(helm, WORKER_CHART, WORKER_METRICS_ON), "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    # Unknown settings are ignored, so a variable the template does not read would
    # silently change nothing.
    fields = WorkerSettings.model_fields
    unread = {n for n in env if n.removeprefix("WORKER_").lower() not in fields}
    assert not unread, f"the worker template reads no {sorted(unread)}"
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = WorkerSettings(_env_file=None)
    assert settings.metrics_port == WORKER_METRICS_PORT
    (port,) = container["ports"]
    assert port == {"name": "metrics", "containerPort": WORKER_METRICS_PORT, "protocol": "TCP"}


def test_worker_pod_monitor_needs_the_metrics_port(helm: Any) -> None:
    with pytest.raises(helm.HelmError, match=r"metrics\.enabled"):
        render(helm, WORKER_CHART, {"metrics": {"podMonitor": {"enabled": True}}})


@pytest.mark.parametrize(
    ("chart", "values"),
    [
        (MANAGER_CHART, {**MANAGER_VALUES, "metrics": {"serviceMonitor": {"enable": True}}}),
        (MANAGER_CHART, {**MANAGER_VALUES, "metrics": {"prometheusRule": {"labels": []}}}),
        (WORKER_CHART, {"metrics": {"podMonitor": {"interval": "soon"}}}),
    ],
    ids=["typo", "labels", "interval"],
)
def test_charts_refuse_bad_metrics_values(helm: Any, chart: Path, values: dict[str, Any]) -> None:
    with pytest.raises(helm.HelmError, match="metrics"):
        render(helm, chart, values)


@pytest.mark.parametrize(
    ("chart", "values"),
    [(MANAGER_CHART, MANAGER_METRICS_ON), (WORKER_CHART, WORKER_METRICS_ON)],
    ids=["manager", "worker"],
)
def test_charts_with_metrics_lint_clean(helm: Any, chart: Path, values: dict[str, Any]) -> None:
    report = helm.lint(str(chart), values, strict=True)
    assert not report["errors"], report
    assert all(m["severity"] < 2 for m in report["messages"]), report
