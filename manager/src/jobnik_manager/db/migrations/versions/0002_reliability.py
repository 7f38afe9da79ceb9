"""Leases, retry delays, failure detail, the event log and idempotency keys.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0002"
down_revision: str | None = "0001"

SeqType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

TASK_COLUMNS: list[tuple[str, Any]] = [
    ("lease_id", sa.Uuid),
    ("lease_expires_at", UtcDateTime),
    ("lease_seconds", sa.Float),
    ("worker", sa.String(100)),
    ("progress", sa.SmallInteger),
    ("not_before", UtcDateTime),
    ("retry_policy", JsonColumn),
    ("reason", sa.String(2000)),
    ("result", JsonColumn),
]


def upgrade() -> None:
    # Nullable columns only: SQLite adds them in place, PostgreSQL without a rewrite.
    for name, type_ in TASK_COLUMNS:
        op.add_column("tasks", sa.Column(name, type_, nullable=True))
    op.add_column("stages", sa.Column("retry_policy", JsonColumn, nullable=True))
    for index, column, where in (
        ("ix_tasks_lease_expiry", "lease_expires_at", "status = 'IN_PROGRESS'"),
        ("ix_tasks_not_before", "not_before", "not_before IS NOT NULL"),
    ):
        op.create_index(
            index,
            "tasks",
            [column],
            postgresql_where=sa.text(where),
            sqlite_where=sa.text(where),
        )

    op.create_table(
        "events",
        sa.Column("seq", SeqType, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.Uuid, nullable=False),
        sa.Column("entity", sa.String(8), nullable=False),
        sa.Column("entity_id", sa.Uuid, nullable=False),
        sa.Column("stage_id", sa.Uuid, nullable=True),
        sa.Column("task_id", sa.Uuid, nullable=True),
        sa.Column("from_status", sa.String(16), nullable=True),
        sa.Column("to_status", sa.String(16), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=True),
        sa.Column("lease_id", sa.Uuid, nullable=True),
        sa.Column("worker", sa.String(100), nullable=True),
        sa.Column("reason", sa.String(2000), nullable=True),
        sa.Column("time", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_events"),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_events_job_id_jobs", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_events_job_id_seq", "events", ["job_id", "seq"])

    op.create_table(
        "idempotency_keys",
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("status_code", sa.Integer, nullable=False),
        sa.Column("response", JsonColumn, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_idempotency_keys"),
    )
    op.create_index("ix_idempotency_keys_created_at", "idempotency_keys", ["created_at"])


def downgrade() -> None:
    op.drop_table("idempotency_keys")
    op.drop_table("events")
    op.drop_index("ix_tasks_not_before", table_name="tasks")
    op.drop_index("ix_tasks_lease_expiry", table_name="tasks")
    with op.batch_alter_table("stages") as stages:
        stages.drop_column("retry_policy")
    with op.batch_alter_table("tasks") as tasks:
        for name, _ in reversed(TASK_COLUMNS):
            tasks.drop_column(name)
