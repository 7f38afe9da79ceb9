"""0004 (after 0003), 2026-11-24: the lifecycle beyond Jobnik v1.

How jobs and stages ended (start and end times, reason, the failing task), partial
success (allowed failures, partial), schedules (not_before), time limits (timeouts,
deadlines), progress messages, and entries a task's worker adds to its job's history.
Every new column is nullable or has a server default, so PostgreSQL adds it without
rewriting the table.
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0004"
down_revision: str | None = "0003"


def _flag() -> sa.Column[Any]:
    return sa.Column("partial", sa.Boolean(), nullable=False, server_default=sa.false())


def _columns() -> dict[str, list[sa.Column[Any]]]:
    """Table by table, the columns added (new objects each call: a column belongs to one
    table once added)."""

    def outcome() -> list[sa.Column[Any]]:
        return [
            sa.Column("start_time", UtcDateTime, nullable=True),
            sa.Column("end_time", UtcDateTime, nullable=True),
            sa.Column("reason", sa.String(2000), nullable=True),
        ]

    return {
        "jobs": [
            *outcome(),
            sa.Column("failed_task_id", sa.Uuid(), nullable=True),
            sa.Column("failed_stage_id", sa.Uuid(), nullable=True),
            _flag(),
            sa.Column("not_before", UtcDateTime, nullable=True),
            sa.Column("deadline", UtcDateTime, nullable=True),
        ],
        "stages": [
            *outcome(),
            sa.Column("allowed_failures", sa.Integer(), nullable=False, server_default="0"),
            _flag(),
            sa.Column("timeout_seconds", sa.Float(), nullable=True),
        ],
        "tasks": [
            sa.Column("progress_message", sa.String(500), nullable=True),
            sa.Column("timeout_seconds", sa.Float(), nullable=True),
        ],
        "events": [
            sa.Column("name", sa.String(100), nullable=True),
            sa.Column("level", sa.String(8), nullable=True),
            sa.Column("message", sa.String(2000), nullable=True),
            sa.Column("fields", JsonColumn, nullable=True),
        ],
    }


# What the maintenance tick reads: running attempts that have a time limit, and jobs
# that have a deadline.
_INDEXES = {
    "ix_tasks_timed": (
        "tasks",
        "start_time",
        "status = 'IN_PROGRESS' AND timeout_seconds IS NOT NULL",
    ),
    "ix_jobs_deadline": ("jobs", "deadline", "deadline IS NOT NULL"),
}


def upgrade() -> None:
    for table, columns in _columns().items():
        with op.batch_alter_table(table) as batch:
            if table == "events":  # an added entry has no status
                batch.alter_column("to_status", existing_type=sa.String(16), nullable=True)
            for column in columns:
                batch.add_column(column)
    for index, (table, indexed, where) in _INDEXES.items():
        op.create_index(
            index, table, [indexed], postgresql_where=sa.text(where), sqlite_where=sa.text(where)
        )


def downgrade() -> None:
    for index, (table, _, _) in _INDEXES.items():
        op.drop_index(index, table_name=table)
    op.execute("DELETE FROM events WHERE to_status IS NULL")
    for table, columns in _columns().items():
        with op.batch_alter_table(table) as batch:
            for column in columns:
                batch.drop_column(column.name)
            if table == "events":
                batch.alter_column("to_status", existing_type=sa.String(16), nullable=False)
