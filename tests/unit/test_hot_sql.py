"""The hand-tuned PostgreSQL statements (db/sql/) against the moves they make: each
writes every column its move declares, with the status its move names bound as a
constant, and no status written as a literal. (That their rows are the moves' rows is
shown on a real database by tests/integration/test_every_move.py.)"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from jobnik_manager.db.claim import claim_statement, context_statement
from jobnik_manager.db.complete import complete_statement
from jobnik_manager.db.direct import GIVEN, DirectStatement
from jobnik_manager.db.queries import queries, statement
from jobnik_manager.domain.moves import TASK_CLAIMED, TASK_COMPLETED, Move
from jobnik_manager.domain.statuses import TaskStatus

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _set_columns(sql: str, table: str) -> dict[str, str]:
    """The columns an `UPDATE <table> SET ... FROM` of `sql` writes, with their values."""
    found = re.search(rf"UPDATE {table} SET(.*?)\n\s*FROM ", sql, re.DOTALL)
    assert found, sql
    pairs = re.findall(r"^\s*(\w+) = (.+?),?$", found.group(1), re.MULTILINE)
    return dict(pairs)


def _constant(st: DirectStatement, sql_value: str) -> object:
    """The constant bound to `$n` in a SQL value like `$4::varchar`."""
    n = int(re.match(r"\$(\d+)", sql_value).group(1))  # type: ignore[union-attr]
    return st.binds[n - 1].constant


@pytest.mark.parametrize(
    ("st", "move"),
    [
        (claim_statement(True, False), TASK_CLAIMED),
        (claim_statement(False, True), TASK_CLAIMED),
        (complete_statement(), TASK_COMPLETED),
    ],
    ids=["claim one type", "claim types, announced", "complete"],
)
def test_a_hot_statement_writes_what_its_move_declares(st: DirectStatement, move: Move) -> None:
    written = _set_columns(st.sql, "tasks")
    declared = move.columns(NOW)
    assert set(declared) <= set(written)
    assert _constant(st, written["status"]) == move.target
    for column, value in declared.items():
        if isinstance(value, bool):
            assert written[column] == str(value).lower()


def test_no_status_is_written_as_a_literal() -> None:
    for family in ("claim", "complete"):
        for name, sql in queries(family).items():
            for status in TaskStatus:
                assert f"'{status.value}'" not in sql, (family, name)


def test_parameters_are_numbered_in_order_of_first_use() -> None:
    st = statement("SELECT :a::int, :b, :a, '::x', x::text WHERE y = :c", {"b": 2})
    assert st.sql == "SELECT $1::int, $2, $1, '::x', x::text WHERE y = $3"
    assert [(b.name, b.constant) for b in st.binds] == [("a", GIVEN), ("b", 2), ("c", GIVEN)]
    assert st.args({"a": 1, "c": 3}) == [1, 2, 3]


def test_a_constant_the_statement_does_not_use_is_refused() -> None:
    with pytest.raises(ValueError, match="does not use"):
        statement("SELECT :a", {"b": 1})


def test_the_context_binds_only_the_stage_ids() -> None:
    assert [b.name for b in context_statement().binds] == ["stage_ids"]
