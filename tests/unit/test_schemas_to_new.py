"""A task's wire model becomes its create spec field by field (for speed): every field
the two name alike is carried over, so a field added to both cannot be left behind."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from jobnik_manager.api.same_named import same_named
from jobnik_manager.api.schemas import TaskCreate
from jobnik_manager.services.specs import NewTask

pytestmark = pytest.mark.unit


def test_to_new_carries_every_field_a_task_and_its_spec_share() -> None:
    # A value unlike its default in every field of the wire model.
    task = TaskCreate.model_validate(
        {
            "data": {"tile": 7},
            "userMetadata": {"team": "maps"},
            "maxAttempts": 5,
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "tracestate": "vendor=1",
            "retryPolicy": {"initialDelaySeconds": 2, "nonRetryableErrors": ["Bad"]},
            "notBefore": "2030-01-01T00:00:00Z",
            "timeoutSeconds": 30,
            "expiresAt": "2030-01-02T00:00:00Z",
        }
    )
    defaults = TaskCreate.model_validate({"data": {}})
    assert all(
        getattr(task, name) != getattr(defaults, name) for name in TaskCreate.model_fields
    ), "give every field of TaskCreate a value of its own here"
    assert set(TaskCreate.model_fields) - {f.name for f in dataclasses.fields(NewTask)} == set()

    new = task.to_new()

    assert task.retry_policy is not None
    by_name = NewTask(
        **same_named(task, NewTask, retry_policy=task.retry_policy.to_domain(), id=None)
    )
    assert new == by_name
    assert new.retry_policy == task.retry_policy.to_domain()
    assert new.not_before == datetime(2030, 1, 1, tzinfo=UTC) and new.id is None
