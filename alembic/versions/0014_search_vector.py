"""Search at a million messages.

PostgreSQL keeps each message's search document: a stored generated ``tsvector`` column,
``lumina_message.search_vector``, of exactly the expression 0012 indexed, and the GIN index
now on that column. Ranking (``ts_rank``) reads the stored vector instead of parsing the
text of every candidate again. ``storage/sql/search.py`` queries this column by name.

SQLite's FTS5 table gets prefix indexes of 2 and 3 characters: the last word of a query is
matched as a prefix, and without them FTS5 merges the row lists of every word starting
with it before returning the first row (~0.4 s for ``to*`` over a million messages); with
them it reads such a prefix newest first like a word. The table is rebuilt (same content,
same triggers). Nothing changes on MariaDB/MySQL (FULLTEXT).

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PUNCTUATION = "!\"#$&'()*+,-./:;<=>?@[\\]^_`{|}~"
_TEXT = (
    "translate(left(content, 100000), "
    f"'{_PUNCTUATION.replace(chr(39), chr(39) * 2)}', '{' ' * len(_PUNCTUATION)}')"
)
_DOCUMENT = f"to_tsvector('simple', {_TEXT})"  # 0012's index expression

_ADD_COLUMN = (
    "ALTER TABLE lumina_message ADD COLUMN search_vector tsvector "
    f"GENERATED ALWAYS AS ({_DOCUMENT}) STORED"
)
_INDEX = (
    "CREATE INDEX ix_lumina_message_fts ON lumina_message USING gin (search_vector) "
    "WHERE status <> 'streaming'"
)
# The index as this revision leaves it (bench/scale.py drops and rebuilds it from here).
_POSTGRES_FTS = [_INDEX]


_SQLITE_TOKENIZE = "tokenize='unicode61 remove_diacritics 2'"


def _sqlite_fts(options: str) -> list[str]:
    """The FTS5 table of migration 0007 with ``options``, filled again (its triggers,
    on lumina_message, stay as they are)."""
    return [
        "DROP TABLE lumina_message_fts",
        "CREATE VIRTUAL TABLE lumina_message_fts USING fts5(content, "
        f"content='lumina_message', content_rowid='id', {options})",
        "INSERT INTO lumina_message_fts(rowid, content) "
        "SELECT id, content FROM lumina_message WHERE status <> 'streaming'",
    ]


_SQLITE_FTS = _sqlite_fts(f"{_SQLITE_TOKENIZE}, prefix='2 3'")


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for statement in _SQLITE_FTS:
            op.execute(statement)
    if dialect == "postgresql":
        op.execute(_ADD_COLUMN)
        op.execute("DROP INDEX IF EXISTS ix_lumina_message_fts")
        op.execute(_INDEX)
        op.execute("ANALYZE lumina_message")  # the new column's statistics, which search reads


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for statement in _sqlite_fts(_SQLITE_TOKENIZE):
            op.execute(statement)
    if dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_lumina_message_fts")
        op.execute("ALTER TABLE lumina_message DROP COLUMN search_vector")
        op.execute(
            f"CREATE INDEX ix_lumina_message_fts ON lumina_message USING gin ({_DOCUMENT}) "
            "WHERE status <> 'streaming'"
        )
