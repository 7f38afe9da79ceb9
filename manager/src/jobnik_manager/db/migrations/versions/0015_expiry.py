"""0015 (after 0014), 2026-11-28: expiry.

`expiresAt` on tasks and jobs: a task is never handed out from then on, and one still
waiting is aborted ("expired"); a job none of whose tasks started by then is aborted.
The index holds the waiting tasks that expire, by when, for the maintenance loop.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import UtcDateTime

revision: str = "0015"
down_revision: str | None = "0014"

WAITING = sa.text("expires_at IS NOT NULL AND status IN ('PENDING', 'RETRIED')")


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("expires_at", UtcDateTime, nullable=True))
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("expires_at", UtcDateTime, nullable=True))
    index = ("ix_tasks_expiring", "tasks", ["expires_at"])
    op.create_index(*index, postgresql_where=WAITING, sqlite_where=WAITING)


def downgrade() -> None:
    op.drop_index("ix_tasks_expiring", table_name="tasks")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("expires_at")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("expires_at")
