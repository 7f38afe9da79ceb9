"""0011 (after 0010), 2026-11-27: what a job produced.

`jobs.result` holds the JSON object a task set as its job's result; `job_assets` the
outputs its tasks recorded (a type, where it is, its size), each with the task that
made it, listed with the job and deleted with it.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0011"
down_revision: str | None = "0010"


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("result", JsonColumn, nullable=True))
    op.create_table(
        "job_assets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=True),
        sa.Column("type", sa.String(50), nullable=False),
        sa.Column("uri", sa.String(2000), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("name", sa.String(200), nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("principal", sa.String(100), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_job_assets_job_id_jobs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_job_assets"),
    )
    op.create_index("ix_job_assets_job_id_created_at", "job_assets", ["job_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_job_assets_job_id_created_at", table_name="job_assets")
    op.drop_table("job_assets")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("result")
