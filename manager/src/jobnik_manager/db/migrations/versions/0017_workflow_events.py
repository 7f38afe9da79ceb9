"""0017 (after 0016), 2026-11-29: a workflow's lifecycle events, as the Open Job Spec
asks (workflow.started, workflow.completed, workflow.failed, workflow.cancelled).

A workflow's state is worked out from its jobs when it is read; `started_at` and
`ended_at` record the moment it was first seen started and final, each set once by an
UPDATE only one transaction can win, in the transaction that writes the event's row in
`workflow_events` (services/workflow_events.py). `ix_workflows_open` holds the workflows
not yet seen final: what the maintenance tick looks at. Workflows made before this
migration are open: the tick records their events once, with the times their jobs
started and ended. An event goes with its workflow (retention deletes both).
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0017"
down_revision: str | None = "0016"

OPEN = sa.text("ended_at IS NULL")
SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Nullable, no default: on PostgreSQL a change of the catalogue alone.
    op.add_column("workflows", sa.Column("started_at", UtcDateTime, nullable=True))
    op.add_column("workflows", sa.Column("ended_at", UtcDateTime, nullable=True))
    op.create_index(
        "ix_workflows_open", "workflows", ["created_at"], postgresql_where=OPEN, sqlite_where=OPEN
    )
    op.create_table(
        "workflow_events",
        sa.Column("seq", SEQ, primary_key=True, autoincrement=True),
        sa.Column(
            "workflow_id",
            sa.Uuid(),
            sa.ForeignKey(
                "workflows.id",
                ondelete="CASCADE",
                name="fk_workflow_events_workflow_id_workflows",
            ),
            nullable=False,
        ),
        sa.Column("type", sa.String(24), nullable=False),
        sa.Column("time", UtcDateTime, nullable=False),
        sa.Column("data", JsonColumn, nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_workflow_events"),
    )
    op.create_index("ix_workflow_events_workflow_id", "workflow_events", ["workflow_id"])


def downgrade() -> None:
    op.drop_index("ix_workflow_events_workflow_id", table_name="workflow_events")
    op.drop_table("workflow_events")
    op.drop_index("ix_workflows_open", table_name="workflows")
    op.drop_column("workflows", "ended_at")
    op.drop_column("workflows", "started_at")
