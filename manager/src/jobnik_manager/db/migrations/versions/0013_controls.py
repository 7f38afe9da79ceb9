"""0013 (after 0012), 2026-11-28: schedules, stage-type limits, expiry, name search.

- `schedules`: a row per named schedule (a cron expression in a time zone, or an
  interval, and the job to make at each time); `schedule_runs`: a row per time of one
  and what came of it (its job, or why none), keyed by schedule and time.
- `stage_type_limits`: a row per limited stage type: at most so many of its tasks in
  flight, and a token bucket of so many a second; the claim statements hand such a type
  out only under the row's lock.
- `expires_at` on tasks and jobs: a task is never handed out from then on, and one still
  waiting is aborted ("expired"); a job none of whose tasks started by then is aborted.
  The index holds the waiting tasks that expire, by when, for the maintenance loop.
- On PostgreSQL, a job name's trigrams (pg_trgm, a trusted extension a database's owner
  may create) in a GIN index, which serves `ILIKE '%text%'` from three characters.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0013"
down_revision: str | None = "0012"

WAITING = sa.text("expires_at IS NOT NULL AND status IN ('PENDING', 'RETRIED')")


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

    op.create_table(
        "stage_type_limits",
        sa.Column("type", sa.String(50), nullable=False),
        sa.Column("max_in_flight", sa.Integer(), nullable=True),
        sa.Column("rate", sa.Float(), nullable=True),
        sa.Column("burst", sa.Integer(), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("refilled_at", UtcDateTime, nullable=False),
        sa.Column("set_at", UtcDateTime, nullable=False),
        sa.Column("principal", sa.String(100), nullable=True),
        sa.PrimaryKeyConstraint("type", name="pk_stage_type_limits"),
    )

    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("expires_at", UtcDateTime, nullable=True))
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("expires_at", UtcDateTime, nullable=True))
    index = ("ix_tasks_expiring", "tasks", ["expires_at"])
    op.create_index(*index, postgresql_where=WAITING, sqlite_where=WAITING)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.create_index(
            "ix_jobs_name_trgm",
            "jobs",
            ["name"],
            postgresql_using="gin",
            postgresql_ops={"name": "gin_trgm_ops"},
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_jobs_name_trgm", table_name="jobs")
    op.drop_index("ix_tasks_expiring", table_name="tasks")
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("expires_at")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("expires_at")
    op.drop_table("stage_type_limits")
    op.drop_table("schedule_runs")
    op.drop_index("ix_schedules_next_run_at", table_name="schedules")
    op.drop_table("schedules")
