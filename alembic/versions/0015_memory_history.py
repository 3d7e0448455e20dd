"""Facts that change over time: each long-term memory gets ``valid_from`` (when it became
true) and ``valid_until`` (null while current; set when a newer fact replaced it, the one
``superseded_by`` names). Existing rows: ``valid_from`` = ``created_at``; a row already
superseded gets ``valid_until`` = its ``updated_at`` (when it was replaced), the others null.
An index on (owner, superseded_by) finds the versions a memory replaced.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from lumina_app.storage.sql.types import utc_datetime_column_type

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("lumina_memory") as batch:
        batch.add_column(sa.Column("valid_from", utc_datetime_column_type(), nullable=True))
        batch.add_column(sa.Column("valid_until", utc_datetime_column_type(), nullable=True))
    op.execute("UPDATE lumina_memory SET valid_from = created_at")
    op.execute("UPDATE lumina_memory SET valid_until = updated_at WHERE status = 'superseded'")
    with op.batch_alter_table("lumina_memory") as batch:
        batch.alter_column("valid_from", existing_type=utc_datetime_column_type(), nullable=False)
    op.create_index("ix_lumina_memory_replaced", "lumina_memory", ["owner", "superseded_by"])


def downgrade() -> None:
    op.drop_index("ix_lumina_memory_replaced", table_name="lumina_memory")
    with op.batch_alter_table("lumina_memory") as batch:
        batch.drop_column("valid_until")
        batch.drop_column("valid_from")
