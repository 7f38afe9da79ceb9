"""SQLite rows read as SQLAlchemy reads them: each value converted once per run of equal
values, and every row with a JSON object of its own."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime

from jobnik_manager.db.bulk import equal_to_last
from jobnik_manager.db.models import TASKS
from jobnik_manager.db.sqlite_values import Columns
from jobnik_manager.domain.statuses import TaskStatus


def test_rows_that_share_times_and_ids_read_alike_and_keep_their_own_json() -> None:
    columns = Columns(TASKS)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (id, stage_id, status, data, update_time)")
    stage, when = uuid.uuid4(), "2026-11-27 18:00:00.123456"
    ids = [uuid.uuid4() for _ in range(3)]
    values = [
        (ids[0].hex, stage.hex, "IN_PROGRESS", '{"a": 1}', when),
        (ids[1].hex, stage.hex, "IN_PROGRESS", '{"a": 1}', when),
        (ids[2].hex, stage.hex, "COMPLETED", '{"a": 2}', None),
    ]
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", values)
    rows = columns.rows(conn.execute("SELECT * FROM t ORDER BY rowid"))
    assert [r["id"] for r in rows] == ids
    assert {r["stage_id"] for r in rows} == {stage}
    assert [r["status"] for r in rows] == [TaskStatus.IN_PROGRESS] * 2 + [TaskStatus.COMPLETED]
    assert [r["update_time"] for r in rows] == [
        datetime(2026, 11, 27, 18, 0, 0, 123456, tzinfo=UTC)
    ] * 2 + [None]
    # Equal JSON texts, yet each row's object is its own: a change to one is not the other's.
    assert rows[0]["data"] == rows[1]["data"] == {"a": 1}
    assert rows[0]["data"] is not rows[1]["data"]


def test_a_value_equal_to_the_last_but_of_another_type_is_converted_again() -> None:
    seen: list[object] = []
    convert = equal_to_last(lambda v: seen.append(v) or type(v).__name__)
    assert [convert(v) for v in (1, 1, True, 1.0, 1.0, "1")] == [
        "int",
        "int",
        "bool",
        "float",
        "float",
        "str",
    ]
    assert seen == [1, True, 1.0, "1"]  # each run of equal values converted once
