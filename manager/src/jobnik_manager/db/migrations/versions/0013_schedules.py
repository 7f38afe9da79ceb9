"""0013 (after 0012), 2026-11-28: schedules.

A row per named schedule (a cron expression in a time zone, or an interval, and the job
to make at each time); a row per time of one and what came of it (its job, or why none).
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0013"
down_revision: str | None = "0012"


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("cron", sa.String(200), nullable=True),
        sa.Column("interval_seconds", sa.Float(), nullable=True),
        sa.Column("timezone", sa.String(64), nullable=False),
        sa.Column("job", JsonColumn, nullable=False),
        sa.Column("overlap", sa.String(16), nullable=False),
        sa.Column("missed", sa.String(16), nullable=False),
        sa.Column("description", sa.String(500), nullable=True),
        sa.Column("next_run_at", UtcDateTime, nullable=False),
        sa.Column("anchor", UtcDateTime, nullable=False),
        sa.Column("paused_at", UtcDateTime, nullable=True),
        sa.Column("last_run_at", UtcDateTime, nullable=True),
        sa.Column("last_job_id", sa.Uuid(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
        sa.Column("skipped_count", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(100), nullable=True),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("updated_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_schedules"),
    )
    op.create_index("ix_schedules_next_run_at", "schedules", ["next_run_at"])
    op.create_table(
        "schedule_runs",
        sa.Column("schedule", sa.String(100), nullable=False),
        sa.Column("run_at", UtcDateTime, nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("skipped", sa.String(16), nullable=True),
        sa.Column("manual", sa.Boolean(), nullable=False),
        sa.Column("made_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("schedule", "run_at", name="pk_schedule_runs"),
    )


def downgrade() -> None:
    op.drop_table("schedule_runs")
    op.drop_index("ix_schedules_next_run_at", table_name="schedules")
    op.drop_table("schedules")
