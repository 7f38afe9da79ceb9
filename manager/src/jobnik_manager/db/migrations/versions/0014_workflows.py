"""0014 (after 0013), 2026-11-27: workflows, as the Open Job Spec composes jobs.

A row per workflow (a chain, a group or a batch) and one per job it holds, in order
(`workflow_jobs`: a chain's one job, a group's or a batch's jobs, a batch's callback
jobs named by the outcome each waits for). `fired_at` is set once, in the transaction
that approves the callbacks due; `ix_workflows_unfired` holds the batches still to fire.
Retention deletes a job's row here with the job, and a workflow with its last job.
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import UtcDateTime

revision: str = "0014"
down_revision: str | None = "0013"

UNFIRED = sa.text("kind = 'batch' AND fired_at IS NULL AND cancelled_at IS NULL")
# Each table's columns (name, type, nullable) and its key.
TABLES: dict[str, tuple[list[tuple[str, Any, bool]], list[str]]] = {
    "workflows": (
        [
            ("id", sa.Uuid(), False),
            ("kind", sa.String(8), False),
            ("name", sa.String(200), True),
            ("owner", sa.String(100), True),
            ("created_at", UtcDateTime, False),
            ("fired_at", UtcDateTime, True),
            ("cancelled_at", UtcDateTime, True),
        ],
        ["id"],
    ),
    "workflow_jobs": (
        [
            ("workflow_id", sa.Uuid(), False),
            ("position", sa.Integer(), False),
            ("role", sa.String(12), False),
            ("job_id", sa.Uuid(), False),
        ],
        ["workflow_id", "position"],
    ),
}


def upgrade() -> None:
    for table, (columns, key) in TABLES.items():
        made = [sa.Column(name, kind, nullable=null) for name, kind, null in columns]
        op.create_table(table, *made, sa.PrimaryKeyConstraint(*key, name=f"pk_{table}"))
    index = ("ix_workflows_unfired", "workflows", ["created_at"])
    op.create_index(*index, postgresql_where=UNFIRED, sqlite_where=UNFIRED)
    op.create_index("ix_workflow_jobs_job_id", "workflow_jobs", ["job_id"])


def downgrade() -> None:
    op.drop_index("ix_workflow_jobs_job_id", table_name="workflow_jobs")
    op.drop_index("ix_workflows_unfired", table_name="workflows")
    for table in reversed(TABLES):
        op.drop_table(table)
