"""Priority ranks (domain/ranks.py): v1's five priorities keep their order and meaning
on the finer scale, OJS numbers order one by one (higher first), named priorities are
the conformance levels' numbers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from jobnik_manager.domain import ojs, ranks
from jobnik_manager.domain.ranks import NUMBER, rank_of, rank_of_number
from jobnik_manager.domain.statuses import Priority


def test_v1_priorities_keep_their_order_and_each_stands_in_its_own_band() -> None:
    assert sorted(Priority, key=rank_of) == list(Priority)  # VERY_HIGH first, as before
    for priority in Priority:
        assert ojs.priority_of(NUMBER[priority]) is priority
        assert rank_of(priority) == rank_of_number(NUMBER[priority])
    # A MEDIUM job and an OJS job of the default priority tie: taken oldest first.
    assert rank_of(Priority.MEDIUM) == rank_of(Priority.MEDIUM, 0)


def test_every_ojs_number_has_its_own_rank_higher_numbers_first() -> None:
    ranks = [rank_of(ojs.priority_of(n), n) for n in range(-100, 101)]
    assert ranks == sorted(ranks, reverse=True) and len(set(ranks)) == 201
    assert rank_of(Priority.MEDIUM, 9) < rank_of(Priority.MEDIUM, 1)
    # Apart from the 0..4 v1's priorities ranked at before migration 0018; a SmallInteger.
    assert min(ranks) > 4 and max(ranks) < 32768


@pytest.mark.parametrize(
    ("given", "number"),
    [
        ("HIGH", 3),
        ("NORMAL", 2),
        ("LOW", 1),
        ("high", 3),
        (0, 0),
        (-100, -100),
        (100, 100),
        (101, None),
        (-101, None),
        ("URGENT", None),
        ("", None),
        (2.0, None),
        (True, None),
        (None, None),
    ],
)
def test_a_priority_is_a_number_or_a_name(given: object, number: int | None) -> None:
    assert ojs.priority_number(given) == number


def test_migration_0018_moves_each_old_rank_to_its_priorities_new_one() -> None:
    path = Path(ranks.__file__).parents[1] / "db/migrations/versions/0018_priority_ranks.py"
    spec = importlib.util.spec_from_file_location("migration_0018", path)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    # Protocol's `rank` is the 0..4 the tasks were ranked at before it.
    assert {p.rank: rank_of(p) for p in Priority} == migration.NEW_RANK
