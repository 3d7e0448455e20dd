"""Files on messages (#48, part 2): which files a message carries (``lumina_message_file``,
by conversation and seq, so a question is linked before or after its row reaches SQL),
and the text read out of a file once (``lumina_file_text``, per blob: the same bytes give
the same text), for the context, search and recall.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import long_text_column_type, utc_datetime_column_type

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def upgrade() -> None:
    op.create_table(
        "lumina_message_file",
        sa.Column(
            "conversation_id",
            sa.Integer(),
            sa.ForeignKey(
                "lumina_conversation.id",
                ondelete="CASCADE",
                name="fk_lumina_message_file_conversation",
            ),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column(
            "file_pk",
            sa.Integer(),
            sa.ForeignKey("lumina_file.id", ondelete="CASCADE", name="fk_lumina_message_file_file"),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        **_MYSQL,
    )
    op.create_index("ix_lumina_message_file_file", "lumina_message_file", ["file_pk"])
    op.create_table(
        "lumina_file_text",
        sa.Column(
            "blob_id",
            sa.Integer(),
            sa.ForeignKey(
                "lumina_file_blob.id", ondelete="CASCADE", name="fk_lumina_file_text_blob"
            ),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("text", long_text_column_type(), nullable=False),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=True),
        sa.Column("note", sa.String(255), nullable=True),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        **_MYSQL,
    )


def downgrade() -> None:
    op.drop_table("lumina_file_text")
    op.drop_table("lumina_message_file")  # its indexes with it
