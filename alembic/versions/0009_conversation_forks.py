"""Forks: a conversation copied from another up to a seq names its parent and that seq.

Revision ID: 0009
Revises: 0007
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("lumina_conversation") as batch:
        batch.add_column(sa.Column("parent_uuid", sa.String(36), nullable=True))
        batch.add_column(sa.Column("forked_at_seq", sa.Integer(), nullable=True))
        batch.create_index("ix_lumina_conversation_parent_uuid", ["parent_uuid"])


def downgrade() -> None:
    with op.batch_alter_table("lumina_conversation") as batch:
        batch.drop_index("ix_lumina_conversation_parent_uuid")
        batch.drop_column("forked_at_seq")
        batch.drop_column("parent_uuid")
