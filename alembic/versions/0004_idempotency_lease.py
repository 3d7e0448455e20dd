"""lumina_idempotency: a lease on claims in progress, and keys compared byte for byte.

``alive_at`` is when the request holding an in-progress claim last showed it is alive and
``claimed_by`` names that request; both are NULL once the response is recorded. A claim
whose holder stopped refreshing for longer than LUMINA_IDEMPOTENCY_LEASE_SECONDS (its
process died) may be taken over by a retry. Claims a crash left in progress before this
revision get ``alive_at = created_at``, so a retry can take them over at once.

MySQL/MariaDB: ``owner`` and ``key`` move to ``utf8mb4_bin``; with the table's
case-insensitive collation the keys ``AbC`` and ``abc`` were one key there (and only there).
Downgrading back fails if keys differing only in case were stored meanwhile.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLE = "lumina_idempotency"
_TEXT_COLUMNS = (("owner", 128), ("key", 255))


def _collate(collation: str) -> None:
    if op.get_bind().dialect.name != "mysql":
        return
    for name, length in _TEXT_COLUMNS:
        op.alter_column(
            _TABLE,
            name,
            type_=mysql.VARCHAR(length, collation=collation),
            existing_nullable=False,
        )


def upgrade() -> None:
    with op.batch_alter_table(_TABLE) as batch:
        batch.add_column(sa.Column("alive_at", utc_datetime_column_type(), nullable=True))
        batch.add_column(sa.Column("claimed_by", sa.String(32), nullable=True))
    _collate("utf8mb4_bin")
    # In progress: no response yet, stored as JSON null (or SQL NULL).
    table = sa.table(_TABLE, sa.column("response"), sa.column("alive_at"), sa.column("created_at"))
    in_progress = sa.or_(table.c.response.is_(None), sa.cast(table.c.response, sa.Text) == "null")
    op.execute(table.update().where(in_progress).values(alive_at=table.c.created_at))


def downgrade() -> None:
    _collate("utf8mb4_unicode_ci")
    with op.batch_alter_table(_TABLE) as batch:
        batch.drop_column("claimed_by")
        batch.drop_column("alive_at")
