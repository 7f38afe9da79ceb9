"""0009 (after 0008), 2026-11-27: stage types paused by an operator.

A row per paused stage type, with when and by whom; the claim statements hand out no
task of a type that has one. Resuming deletes the row.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import UtcDateTime

revision: str = "0009"
down_revision: str | None = "0008"


def upgrade() -> None:
    op.create_table(
        "stage_type_pauses",
        sa.Column("type", sa.String(50), nullable=False),
        sa.Column("paused_at", UtcDateTime, nullable=False),
        sa.Column("principal", sa.String(100), nullable=True),
        sa.PrimaryKeyConstraint("type", name="pk_stage_type_pauses"),
    )


def downgrade() -> None:
    op.drop_table("stage_type_pauses")
