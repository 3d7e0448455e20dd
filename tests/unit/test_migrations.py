"""Alembic: upgrade head, downgrade base and upgrade again on every backend; no drift."""

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from lumina_app.storage.sql.models import metadata
from tests.conftest import Database, alembic_config


def _tables(url: str) -> set[str]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        names = set(sa.inspect(conn).get_table_names())
    engine.dispose()
    return names


def test_upgrade_downgrade_upgrade(database: Database) -> None:
    cfg = alembic_config(database.url)
    assert {"lumina_conversation", "lumina_message"} <= _tables(database.url)
    command.downgrade(cfg, "base")
    assert not {"lumina_conversation", "lumina_message"} & _tables(database.url)
    command.upgrade(cfg, "head")
    assert {"lumina_conversation", "lumina_message"} <= _tables(database.url)


def test_models_and_migrations_agree(database: Database) -> None:
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    engine.dispose()
    assert diff == []


def test_message_seq_is_unique_per_conversation(database: Database) -> None:
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        indexes = sa.inspect(conn).get_indexes("lumina_message")
    engine.dispose()
    by_name = {i["name"]: i for i in indexes}
    index = by_name["ix_lumina_message_conversation_seq"]
    assert index["column_names"] == ["conversation_id", "seq"]
    assert index["unique"]
