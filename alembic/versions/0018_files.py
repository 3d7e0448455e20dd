"""Uploaded files (#48, part 1): content-addressed blobs per owner (``lumina_file_blob``,
unique on owner and sha256), their bytes in chunks of at most 512 KiB
(``lumina_file_chunk``), and the files that name them (``lumina_file``: a public id, a
name, the sniffed type).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_unicode_ci"}


def upgrade() -> None:
    op.create_table(
        "lumina_file_blob",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        sa.UniqueConstraint("owner", "sha256", name="uq_lumina_file_blob_owner_sha256"),
        **_MYSQL,
    )
    op.create_table(
        "lumina_file_chunk",
        sa.Column(
            "blob_id",
            sa.Integer(),
            sa.ForeignKey("lumina_file_blob.id", ondelete="CASCADE"),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("n", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column(
            "data",
            sa.LargeBinary().with_variant(mysql.MEDIUMBLOB(), "mysql", "mariadb"),
            nullable=False,
        ),
        **_MYSQL,
    )
    op.create_table(
        "lumina_file",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("file_id", sa.String(32), nullable=False, unique=True),
        sa.Column("owner", sa.String(128), nullable=False),
        sa.Column(
            "blob_id",
            sa.Integer(),
            sa.ForeignKey("lumina_file_blob.id", name="fk_lumina_file_blob"),
            nullable=False,
        ),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("media_type", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("created_at", utc_datetime_column_type(), nullable=False),
        **_MYSQL,
    )
    op.create_index("ix_lumina_file_blob_id", "lumina_file", ["blob_id"])
    op.create_index("ix_lumina_file_owner_listing", "lumina_file", ["owner", "created_at", "id"])


def downgrade() -> None:
    op.drop_table("lumina_file")  # its indexes with it (MariaDB keeps one for the key)
    op.drop_table("lumina_file_chunk")
    op.drop_table("lumina_file_blob")
