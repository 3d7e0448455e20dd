"""Search finds codes and numbers on PostgreSQL too: its full-text index is rebuilt on the
message text with ASCII punctuation (but ``%``) turned to spaces, so ``ZEBRA-4417`` is
indexed as ``zebra`` and ``4417`` (not ``-4417``), ``v2.3.1`` as ``v2 3 1`` — the words
SQLite's FTS5 and InnoDB's FULLTEXT already split it into. Nothing changes on SQLite and
MariaDB/MySQL. The expression must stay the one ``storage/sql/search.py`` queries with.

Revision ID: 0012
Revises: 0010
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PUNCTUATION = "!\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~"
_TEXT = (
    "translate(left(content, 100000), "
    f"'{_PUNCTUATION.replace(chr(39), chr(39) * 2)}', '{' ' * len(_PUNCTUATION)}')"
)
_NEW = f"to_tsvector('simple', {_TEXT})"
_OLD = "to_tsvector('simple', left(content, 100000))"


def _create(expression: str) -> str:
    return (
        f"CREATE INDEX ix_lumina_message_fts ON lumina_message USING gin ({expression}) "
        "WHERE status <> 'streaming'"
    )


# The index as this revision leaves it (bench/scale.py rebuilds it from here).
_POSTGRES_FTS = [_create(_NEW)]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_lumina_message_fts")
        for statement in _POSTGRES_FTS:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_lumina_message_fts")
        op.execute(_create(_OLD))
