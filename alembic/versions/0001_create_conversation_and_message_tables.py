"""Create lumina_conversation and lumina_message.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import long_text_column_type, utc_datetime_column_type

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def upgrade() -> None:
    op.create_table(
        "lumina_conversation",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False, unique=True),
        sa.Column("agent_id", sa.String(128), nullable=False),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message_count", sa.Integer(), nullable=False),
        sa.Column("tool_call_count", sa.Integer(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        sa.Column("updated_at", utc_datetime_column_type(), nullable=False),
        **_MYSQL,
    )
    op.create_index("ix_lumina_conversation_agent_id", "lumina_conversation", ["agent_id"])
    op.create_index(
        "ix_lumina_conversation_listing",
        "lumina_conversation",
        ["agent_id", "owner", "updated_at", "id"],
    )
    op.create_table(
        "lumina_message",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "conversation_id",
            sa.Integer(),
            sa.ForeignKey("lumina_conversation.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", long_text_column_type(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        sa.Column("updated_at", utc_datetime_column_type(), nullable=False),
        sa.Column("meta", sa.JSON(), nullable=False),
        **_MYSQL,
    )
    op.create_index(
        "ix_lumina_message_conversation_seq",
        "lumina_message",
        ["conversation_id", "seq"],
        unique=True,
    )
    op.create_index("ix_lumina_message_turn_id", "lumina_message", ["turn_id"])


def downgrade() -> None:
    op.drop_index("ix_lumina_message_turn_id", table_name="lumina_message")
    op.drop_table("lumina_message")
    op.drop_index("ix_lumina_conversation_listing", table_name="lumina_conversation")
    op.drop_index("ix_lumina_conversation_agent_id", table_name="lumina_conversation")
    op.drop_table("lumina_conversation")
