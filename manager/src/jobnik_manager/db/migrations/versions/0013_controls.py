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

from typing import Any

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0013"
down_revision: str | None = "0012"

WAITING = sa.text("expires_at IS NOT NULL AND status IN ('PENDING', 'RETRIED')")
# Each table's columns (name, type, nullable) and its key.
TABLES: dict[str, tuple[list[tuple[str, Any, bool]], list[str]]] = {
    "schedules": (
        [
            ("name", sa.String(100), False),
            ("cron", sa.String(200), True),
            ("interval_seconds", sa.Float(), True),
            ("timezone", sa.String(64), False),
            ("job", JsonColumn, False),
            ("overlap", sa.String(16), False),
            ("missed", sa.String(16), False),
            ("description", sa.String(500), True),
            ("next_run_at", UtcDateTime, False),
            ("anchor", UtcDateTime, False),
            ("paused_at", UtcDateTime, True),
            ("last_run_at", UtcDateTime, True),
            ("last_job_id", sa.Uuid(), True),
            ("run_count", sa.Integer(), False),
            ("skipped_count", sa.Integer(), False),
            ("owner", sa.String(100), True),
            ("created_at", UtcDateTime, False),
            ("updated_at", UtcDateTime, False),
        ],
        ["name"],
    ),
    "schedule_runs": (
        [
            ("schedule", sa.String(100), False),
            ("run_at", UtcDateTime, False),
            ("job_id", sa.Uuid(), True),
            ("skipped", sa.String(16), True),
            ("manual", sa.Boolean(), False),
            ("made_at", UtcDateTime, False),
        ],
        ["schedule", "run_at"],
    ),
    "stage_type_limits": (
        [
            ("type", sa.String(50), False),
            ("max_in_flight", sa.Integer(), True),
            ("rate", sa.Float(), True),
            ("burst", sa.Integer(), False),
            ("tokens", sa.Float(), False),
            ("refilled_at", UtcDateTime, False),
            ("set_at", UtcDateTime, False),
            ("principal", sa.String(100), True),
        ],
        ["type"],
    ),
}


def _create_table(table: str) -> None:
    columns, key = TABLES[table]
    made = [sa.Column(name, kind, nullable=null) for name, kind, null in columns]
    op.create_table(table, *made, sa.PrimaryKeyConstraint(*key, name=f"pk_{table}"))


def upgrade() -> None:
    _create_table("schedules")
    op.create_index("ix_schedules_next_run_at", "schedules", ["next_run_at"])
    _create_table("schedule_runs")
    _create_table("stage_type_limits")

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
