"""Migration 0017 (#45) on every backend: conversations stored before it are neither
pinned nor archived; the listing across agents has its index; down and up again."""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command

from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.types import UTCDateTime
from tests.conftest import Database, alembic_config


def test_0017_leaves_existing_conversations_unpinned_and_listed(database: Database) -> None:
    cfg = alembic_config(database.url)
    command.downgrade(cfg, "0016")
    made = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    old = sa.table(
        "lumina_conversation",
        *(sa.column(c) for c in ("uuid", "agent_id", "title", "status", "owner")),
        *(sa.column(c) for c in ("message_count", "tool_call_count", "last_seq")),
        sa.column("created_at", UTCDateTime()),
        sa.column("updated_at", UTCDateTime()),
    )
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(
                old.insert().values(
                    uuid="00000000-0000-4000-8000-000000000017", agent_id="demo", title="Old",
                    status="idle", owner="o", message_count=0, tool_call_count=0, last_seq=0,
                    created_at=made, updated_at=made,
                )
            )  # fmt: skip
        command.upgrade(cfg, "head")
        with engine.begin() as conn:
            rows = conn.execute(sa.select(C.c.title, C.c.pinned, C.c.archived_at)).all()
            assert [tuple(r) for r in rows] == [("Old", False, None)]
            conn.execute(sa.delete(C))
        indexes = {i["name"]: i for i in sa.inspect(engine).get_indexes("lumina_conversation")}
        listing = indexes["ix_lumina_conversation_owner_listing"]
        assert listing["column_names"] == ["owner", "updated_at", "id"]
        command.downgrade(cfg, "0016")
        columns = {c["name"] for c in sa.inspect(engine).get_columns("lumina_conversation")}
        assert not {"pinned", "archived_at"} & columns
        command.upgrade(cfg, "head")
    finally:
        engine.dispose()
