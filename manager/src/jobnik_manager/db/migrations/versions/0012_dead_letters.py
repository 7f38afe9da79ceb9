"""0012 (after 0011), 2026-11-27: dead letters.

Tasks FAILED for good are the dead letters, newest first (`ix_tasks_failed`, the FAILED
rows only, by end). One an operator discards leaves the list: `dead_letter_discards`
keeps it, with its job for deletes, until the job is deleted.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import UtcDateTime

revision: str = "0012"
down_revision: str | None = "0011"


def upgrade() -> None:
    failed = sa.text("status = 'FAILED'")
    index = ("ix_tasks_failed", "tasks", ["end_time"])
    op.create_index(*index, postgresql_where=failed, sqlite_where=failed)
    op.create_table(
        "dead_letter_discards",
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("discarded_at", UtcDateTime, nullable=False),
        sa.Column("principal", sa.String(100), nullable=True),
        sa.PrimaryKeyConstraint("task_id", name="pk_dead_letter_discards"),
    )
    op.create_index("ix_dead_letter_discards_job_id", "dead_letter_discards", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_dead_letter_discards_job_id", table_name="dead_letter_discards")
    op.drop_table("dead_letter_discards")
    op.drop_index("ix_tasks_failed", table_name="tasks")
