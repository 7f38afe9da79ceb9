"""0008 (after 0007), 2026-11-26: the workers the manager has seen claiming.

One row per worker name: the stage types its claims asked for, the token it used, when
it was first and last seen. The workers view reads it with the tasks in flight; rows of
workers unseen for a day are deleted by the maintenance loop.
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0008"
down_revision: str | None = "0007"


# The table's columns: (name, type, nullable).
COLUMNS: list[tuple[str, Any, bool]] = [
    ("name", sa.String(100), False),
    ("stage_types", JsonColumn, False),
    ("principal", sa.String(100), True),
    ("first_seen", UtcDateTime, False),
    ("last_seen", UtcDateTime, False),
]


def upgrade() -> None:
    columns = [sa.Column(name, kind, nullable=null) for name, kind, null in COLUMNS]
    op.create_table("workers", *columns, sa.PrimaryKeyConstraint("name", name="pk_workers"))
    op.create_index("ix_workers_last_seen", "workers", ["last_seen"])


def downgrade() -> None:
    op.drop_index("ix_workers_last_seen", table_name="workers")
    op.drop_table("workers")
