"""0003 (after 0002), 2026-11-21: the transactional outbox for RabbitMQ."""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0003"
down_revision: str | None = "0002"

SeqType = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("seq", SeqType, autoincrement=True, nullable=False),
        sa.Column("routing_key", sa.String(120), nullable=False),
        sa.Column("payload", JsonColumn, nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.PrimaryKeyConstraint("seq", name="pk_outbox"),
    )


def downgrade() -> None:
    op.drop_table("outbox")
