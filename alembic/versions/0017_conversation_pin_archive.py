"""Pinned and archived conversations (#45): ``pinned`` (false for existing rows) and
``archived_at`` (null: not archived); the listing across agents gets its own index on
(owner, updated_at, id), as the per-agent listing has one on (agent_id, owner, …).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("lumina_conversation") as batch:
        batch.add_column(
            sa.Column("pinned", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("archived_at", utc_datetime_column_type(), nullable=True))
        batch.create_index("ix_lumina_conversation_owner_listing", ["owner", "updated_at", "id"])


def downgrade() -> None:
    with op.batch_alter_table("lumina_conversation") as batch:
        batch.drop_index("ix_lumina_conversation_owner_listing")
        batch.drop_column("archived_at")
        batch.drop_column("pinned")
