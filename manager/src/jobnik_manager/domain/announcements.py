"""What a change announces beyond the database: tasks that became claimable (to wake the
workers of their type) and, when someone carries them, lifecycle messages.

A transaction records them in its info (a plain dict, `Session.info`) as it makes the
changes; `dispatch` carries them when it commits: wake-ups to long-polling claims, and,
with a broker, each message as an outbox row written in the same transaction. Nothing
here does I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, MutableMapping
from datetime import datetime
from typing import Any

# Info keys. ANNOUNCING is set from the start (`Database.info`) when a broker carries the
# messages; without it only the ready types are recorded. ANNOUNCED says that the work
# stored messages to publish (an outbox row, written by `dispatch` or by a statement).
ANNOUNCING = "announcing"
READY_TYPES = "ready_types"  # stage type -> how many of its tasks became claimable
MESSAGES = "messages"
ANNOUNCED = "announced"

Message = tuple[str, dict[str, Any], datetime]  # routing key, body, time
# A count that wakes every waiting claim of a type (a resumed type: how many wait is not
# known here).
EVERY = 1 << 30
Info = MutableMapping[str, Any]


def announcing(info: Mapping[str, Any]) -> bool:
    return bool(info.get(ANNOUNCING))


READY_PREFIX = "task.ready."  # a wake-up's routing key, before its stage type


def ready_key(stage_type: str) -> str:
    return f"{READY_PREFIX}{stage_type}"


def is_wakeup(routing_key: str) -> bool:
    """Whether a message is a wake-up: a hint, whose loss costs at most a safety poll."""
    return routing_key.startswith(READY_PREFIX)


def lifecycle_key(entity: str, status: str) -> str:
    return f"{entity.lower()}.{status.lower()}"


def _ready(info: Info, stage_type: str, count: int) -> None:
    ready: dict[str, int] = info.setdefault(READY_TYPES, {})
    ready[stage_type] = min(ready.get(stage_type, 0) + count, EVERY)


def tasks_ready(
    info: Info,
    stage_type: str,
    job_id: uuid.UUID,
    stage_id: uuid.UUID,
    now: datetime,
    count: int = 1,
) -> None:
    """`count` tasks of `stage_type` became claimable: wake as many of that type's
    waiting claims (here and on other replicas; over the broker, when there is one, the
    type's workers)."""
    _ready(info, stage_type, count)
    if info.get(ANNOUNCING):
        body = {"stageType": stage_type, "jobId": str(job_id), "stageId": str(stage_id)}
        _add(info, [(ready_key(stage_type), body, now)])


def stage_type_resumed(info: Info, stage_type: str, now: datetime) -> None:
    """A paused stage type was resumed: its waiting tasks may be claimed again, so its
    workers are woken as for tasks that became ready: all of them."""
    _ready(info, stage_type, EVERY)
    if info.get(ANNOUNCING):
        _add(info, [(ready_key(stage_type), {"stageType": stage_type}, now)])


def moves(info: Info, rows: Iterable[Mapping[str, Any]]) -> None:
    """`job.<status>` and `stage.<status>` for the job and stage moves among these event
    rows (task moves announce nothing). A row may carry `stage_type` for the message.
    stage.waiting goes out when approval becomes possible (`stage_awaits_approval`), not
    with the move."""
    if not info.get(ANNOUNCING):
        return
    _add(
        info,
        [
            (lifecycle_key(row["entity"], row["to_status"]), _moved(row), row["time"])
            for row in rows
            if row["entity"] != "TASK" and row["to_status"] != "WAITING"
        ],
    )


def stage_awaits_approval(
    info: Info, *, job_id: uuid.UUID, stage_id: uuid.UUID, stage_type: str, now: datetime
) -> None:
    """`stage.waiting`: a WAITING stage's turn has come; it runs once a person approves.

    Sent when approval becomes possible (the stages before it are done), not when a
    WAITING stage is merely created behind unfinished ones.
    """
    if not info.get(ANNOUNCING):
        return
    body = {
        "entity": "STAGE",
        "jobId": str(job_id),
        "stageId": str(stage_id),
        "stageType": stage_type,
        "fromStatus": None,
        "toStatus": "WAITING",
        "time": now.isoformat(),
    }
    _add(info, [(lifecycle_key("STAGE", "WAITING"), body, now)])


def workflow_event(info: Info, kind: str, body: dict[str, Any], now: datetime) -> None:
    """An Open Job Spec workflow's lifecycle event (`workflow.completed`, ...), its body
    the spec's event envelope: routed by its type."""
    if info.get(ANNOUNCING):
        _add(info, [(kind, body, now)])


def _add(info: Info, messages: list[Message]) -> None:
    if messages:
        info.setdefault(MESSAGES, []).extend(messages)


def _moved(row: Mapping[str, Any]) -> dict[str, Any]:
    """A move's message body; the claim statement (db/sql/claim.sql) writes
    the same, key for key, in SQL."""
    body: dict[str, Any] = {
        "entity": str(row["entity"]),
        "jobId": str(row["job_id"]),
        "fromStatus": None if row["from_status"] is None else str(row["from_status"]),
        "toStatus": str(row["to_status"]),
        "time": row["time"].isoformat(),
    }
    if row.get("stage_id") is not None:
        body["stageId"] = str(row["stage_id"])
        body["stageType"] = row.get("stage_type")
    if row.get("reason") is not None:
        body["reason"] = row["reason"]
    return body
