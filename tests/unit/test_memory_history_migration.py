"""Migration 0015 (issue #42) on every backend: memories stored before it get
``valid_from`` = their creation time; an active one stays current (``valid_until`` null),
one already superseded is closed when it was replaced (its last change). Down and up again."""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command

from lumina_app.storage.sql.models import memories as M
from lumina_app.storage.sql.types import UTCDateTime
from tests.conftest import Database, alembic_config


def test_0015_dates_the_memories_already_stored(database: Database) -> None:
    cfg = alembic_config(database.url)
    command.downgrade(cfg, "0014")
    made = datetime(2026, 3, 1, 9, 30, 0, 123456, tzinfo=UTC)
    replaced = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
    old = sa.table(
        "lumina_memory",
        *(sa.column(c) for c in ("owner", "agent_id", "text", "status", "pinned")),
        sa.column("superseded_by"),
        sa.column("created_at", UTCDateTime()),
        sa.column("updated_at", UTCDateTime()),
    )
    rows = [
        {"text": "The user's API averages 250 ms.", "status": "active", "superseded_by": None,
         "updated_at": replaced},
        {"text": "The user's API averages 400 ms.", "status": "superseded", "superseded_by": 1,
         "updated_at": replaced},
    ]  # fmt: skip
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            for row in rows:
                values = {"owner": "o", "agent_id": "a", "pinned": False, "created_at": made}
                conn.execute(old.insert().values(**values, **row))
        command.upgrade(cfg, "head")
        query = sa.select(M.c.text, M.c.valid_from, M.c.valid_until).order_by(M.c.text)
        with engine.begin() as conn:
            assert [tuple(r) for r in conn.execute(query)] == [
                ("The user's API averages 250 ms.", made, None),
                ("The user's API averages 400 ms.", made, replaced),
            ]
            conn.execute(sa.delete(M))
        command.downgrade(cfg, "0014")
        columns = {c["name"] for c in sa.inspect(engine).get_columns("lumina_memory")}
        assert not {"valid_from", "valid_until"} & columns
        command.upgrade(cfg, "head")
    finally:
        engine.dispose()
