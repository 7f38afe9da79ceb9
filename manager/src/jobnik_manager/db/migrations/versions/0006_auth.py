"""0006 (after 0005), 2026-11-25: API tokens and job ownership.

A token is stored only as the SHA-256 of its text (it is 256 random bits, so a fast hash
is as good as a slow one), with its name, role and the stage types a worker token is
limited to. A job records the token name that created it (`owner`), and an event the
token name of the request that made it (`principal`); both null with authentication off.
"""

import sqlalchemy as sa
from alembic import op

from jobnik_manager.db.types import JsonColumn, UtcDateTime

revision: str = "0006"
down_revision: str | None = "0005"


def upgrade() -> None:
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("stage_types", JsonColumn, nullable=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime, nullable=False),
        sa.Column("revoked_at", UtcDateTime, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_tokens"),
        sa.UniqueConstraint("name", name="uq_api_tokens_name"),
        sa.UniqueConstraint("token_hash", name="uq_api_tokens_token_hash"),
    )
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("owner", sa.String(100), nullable=True))
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("principal", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.drop_column("principal")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("owner")
    op.drop_table("api_tokens")
