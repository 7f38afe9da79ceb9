"""0018 (after 0017), 2026-12-06: priority ranks fine enough for the Open Job Spec's
numbers.

A task's `priority_rank` (the claim index's order, lower first) was one of five, 0 for
VERY_HIGH to 4 for VERY_LOW, so OJS priorities 1 and 9 were taken oldest first. Ranks
are now 200 minus an OJS number (-100 to 100, higher first), and each v1 priority ranks
at the number in the middle of its band (domain/ranks.py): 150, 190, 200, 210, 250. The
existing tasks move to their priority's new rank, so their order among themselves is
the one they had. `jobs.priority_number` keeps an OJS job's own number for the tasks it
may still get (nullable, no default: on PostgreSQL a change of the catalogue alone).

The two scales do not meet (0..4 and 100..300), so the move can run again on a table it
half did. On PostgreSQL it runs outside the migration's transaction, a range of `seq`
at a time, each range committed: a large tasks table is never locked whole, and keeps
taking claims and writes meanwhile.
"""

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"

# Old rank -> new rank, the values of this migration's day (not imported: they are fixed).
NEW_RANK = {0: 150, 1: 190, 2: 200, 3: 210, 4: 250}
BATCH = 20_000  # tasks' seq values per statement on PostgreSQL


def _move(mapping: dict[int, int]) -> None:
    cases = " ".join(f"WHEN {old} THEN {new}" for old, new in mapping.items())
    listed = ", ".join(str(old) for old in mapping)
    statement = f"UPDATE tasks SET priority_rank = CASE priority_rank {cases} END "
    statement += f"WHERE priority_rank IN ({listed})"
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        op.execute(statement)
        return
    with op.get_context().autocommit_block():
        low, high = bind.execute(sa.text("SELECT min(seq), max(seq) FROM tasks")).one()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            ranged = sa.text(f"{statement} AND seq >= :start AND seq < :end")
            bind.execute(ranged, {"start": start, "end": start + BATCH})


def upgrade() -> None:
    op.add_column("jobs", sa.Column("priority_number", sa.SmallInteger(), nullable=True))
    _move(NEW_RANK)


def downgrade() -> None:
    # An OJS number between two v1 priorities goes to the old rank of the first at or
    # after it in the claim order.
    _move_back = {new: old for old, new in NEW_RANK.items()}
    op.execute(
        "UPDATE tasks SET priority_rank = CASE "
        + " ".join(
            f"WHEN priority_rank <= {new} THEN {old}" for new, old in sorted(_move_back.items())
        )
        + " ELSE 4 END WHERE priority_rank >= 100"
    )
    op.drop_column("jobs", "priority_number")
