"""The metrics hook counts a committed batch of settled attempts as it would count each
attempt alone: every label set by its own outcomes, whatever the batch mixes."""

from __future__ import annotations

import uuid

import pytest
from prometheus_client import REGISTRY

from jobnik_manager.domain import observations
from jobnik_manager.domain.observations import Settled
from jobnik_manager.observe.metrics import MetricsHook


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_mixed_batch_counts_each_attempt_under_its_own_labels() -> None:
    a, b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    batch = [
        Settled(a, "COMPLETED", "COMPLETED", None, 0.5),
        Settled(b, "COMPLETED", "COMPLETED", None, 2.0),
        Settled(a, "FAILED", "RETRIED", "boom", 1.0),
        Settled(a, "COMPLETED", "COMPLETED", None, 0.2),
        Settled(b, "FAILED", "FAILED", "lease expired", None),
        Settled(a, "RETRIED", "RETRIED", None, 0.1),  # "try again later"
    ]
    MetricsHook().after_commit({observations.SETTLED: batch})
    assert value("jobnik_task_completions_total", stage_type=a) == 2
    assert value("jobnik_task_completions_total", stage_type=b) == 1
    assert value("jobnik_task_retries_total", stage_type=a) == 2
    assert value("jobnik_task_retries_total", stage_type=b) == 0
    assert (
        value("jobnik_task_failures_total", stage_type=a, reason_class="reported", final="false")
        == 1
    )
    assert (
        value(
            "jobnik_task_failures_total", stage_type=b, reason_class="lease_expired", final="true"
        )
        == 1
    )
    assert value("jobnik_leases_reaped_total", stage_type=b) == 1
    assert value("jobnik_task_run_seconds_count", stage_type=a, status="COMPLETED") == 2
    assert value("jobnik_task_run_seconds_sum", stage_type=a, status="COMPLETED") == pytest.approx(
        0.7
    )
    assert value("jobnik_task_run_seconds_count", stage_type=a, status="RETRIED") == 2
    assert value("jobnik_task_run_seconds_count", stage_type=b, status="COMPLETED") == 1
    assert value("jobnik_task_run_seconds_count", stage_type=b, status="FAILED") == 0
