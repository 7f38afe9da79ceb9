"""0015 (after 0014), 2026-11-28: what an operator told a worker to do.

A row per Open Job Spec worker told to go quiet or to terminate, with when and by whom;
the worker hears it in the answer to its next heartbeat, and its FETCHes get no jobs.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import UtcDateTime

revision: str = "0015"
down_revision: str | None = "0014"


def upgrade() -> None:
    op.create_table(
        "worker_directives",
        sa.Column("worker", sa.String(100), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("set_at", UtcDateTime, nullable=False),
        sa.Column("principal", sa.String(100), nullable=True),
        sa.PrimaryKeyConstraint("worker", name="pk_worker_directives"),
        # What services.worker_directives reads back as a WorkerState: nothing else.
        sa.CheckConstraint("state IN ('quiet', 'terminate')", name="ck_worker_directives_state"),
    )


def downgrade() -> None:
    op.drop_table("worker_directives")
