"""0014 (after 0013), 2026-11-28: stage-type limits.

A row per limited stage type: at most so many of its tasks in flight, and a token
bucket of so many a second; the claim statements hand such a type out only under the
row's lock.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import UtcDateTime

revision: str = "0014"
down_revision: str | None = "0013"


def upgrade() -> None:
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


def downgrade() -> None:
    op.drop_table("stage_type_limits")
