"""Where a long-term memory came from when no conversation gave it: ``origin`` (e.g.
"added over MCP by Claude Code", #46). Existing rows: null (added by hand, or learnt from
the conversation ``conversation_uuid`` names).

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("lumina_memory") as batch:
        batch.add_column(sa.Column("origin", sa.String(128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lumina_memory") as batch:
        batch.drop_column("origin")
