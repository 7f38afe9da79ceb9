"""Jobs, stages and tasks, with the partial claim index.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0001"
down_revision: str | None = None

SeqType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


# Columns every level of the hierarchy has: (name, type, nullable).
ENTITY_COLUMNS: list[tuple[str, Any, bool]] = [
    ("data", JsonColumn, False),
    ("user_metadata", JsonColumn, False),
    ("status", sa.String(16), False),
    ("traceparent", sa.String(55), False),
    ("tracestate", sa.String(512), True),
    ("creation_time", UtcDateTime, False),
    ("update_time", UtcDateTime, False),
]


def _entity_columns() -> list[sa.Column[object]]:
    """Columns every level of the hierarchy has."""
    return [sa.Column(name, kind, nullable=null) for name, kind, null in ENTITY_COLUMNS]


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Uuid, nullable=False),
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("priority", sa.String(16), nullable=False),
        sa.Column("percentage", sa.SmallInteger, nullable=False),
        *_entity_columns(),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
    )
    op.create_index("ix_jobs_name", "jobs", ["name"])
    op.create_index("ix_jobs_creation_time", "jobs", ["creation_time"])

    summary = [
        sa.Column(name, sa.Integer, nullable=False)
        for name in (
            "created",
            "pending",
            "in_progress",
            "retried",
            "completed",
            "failed",
            "aborted",
        )
    ]
    op.create_table(
        "stages",
        sa.Column("id", sa.Uuid, nullable=False),
        sa.Column("job_id", sa.Uuid, nullable=False),
        sa.Column("type", sa.String(50), nullable=False),
        sa.Column("stage_order", sa.Integer, nullable=False),
        sa.Column("percentage", sa.SmallInteger, nullable=False),
        *summary,
        *_entity_columns(),
        sa.PrimaryKeyConstraint("id", name="pk_stages"),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_stages_job_id_jobs", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("job_id", "stage_order", name="uq_stages_job_id_stage_order"),
    )
    op.create_index("ix_stages_type", "stages", ["type"])

    op.create_table(
        "tasks",
        sa.Column("seq", SeqType, autoincrement=True, nullable=False),
        sa.Column("id", sa.Uuid, nullable=False),
        sa.Column("stage_id", sa.Uuid, nullable=False),
        sa.Column("job_id", sa.Uuid, nullable=False),
        sa.Column("stage_type", sa.String(50), nullable=False),
        sa.Column("priority_rank", sa.SmallInteger, nullable=False),
        sa.Column("claimable", sa.Boolean, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("start_time", UtcDateTime, nullable=True),
        sa.Column("end_time", UtcDateTime, nullable=True),
        *_entity_columns(),
        sa.PrimaryKeyConstraint("seq", name="pk_tasks"),
        sa.UniqueConstraint("id", name="uq_tasks_id"),
        sa.ForeignKeyConstraint(
            ["stage_id"], ["stages.id"], name="fk_tasks_stage_id_stages", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_tasks_job_id_jobs", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_tasks_stage_id", "tasks", ["stage_id"])
    op.create_index("ix_tasks_job_id", "tasks", ["job_id"])
    op.create_index("ix_tasks_creation_time", "tasks", ["creation_time"])
    op.create_index(
        "ix_tasks_claim",
        "tasks",
        ["stage_type", "priority_rank", "seq"],
        postgresql_where=sa.text("claimable"),
        sqlite_where=sa.text("claimable = 1"),
    )


def downgrade() -> None:
    op.drop_table("tasks")
    op.drop_table("stages")
    op.drop_table("jobs")
