"""The OpenAI-compatible gateway: a conversation's opening hash (indexed, for matching a
re-sent history to its conversation) and a JSON meta (the client's system prompt).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("lumina_conversation") as batch:
        batch.add_column(sa.Column("opening_hash", sa.String(64), nullable=True))
        batch.add_column(sa.Column("meta", sa.JSON(), nullable=True))
        batch.create_index("ix_lumina_conversation_opening", ["owner", "agent_id", "opening_hash"])


def downgrade() -> None:
    with op.batch_alter_table("lumina_conversation") as batch:
        batch.drop_index("ix_lumina_conversation_opening")
        batch.drop_column("meta")
        batch.drop_column("opening_hash")
