"""Alembic: upgrade head, downgrade base and upgrade again on every backend; no drift."""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from lumina_app.storage.sql.models import idempotency as I
from lumina_app.storage.sql.models import is_search_object, metadata
from lumina_app.storage.sql.models import sessions as S
from lumina_app.storage.sql.types import UTCDateTime
from tests.conftest import Database, alembic_config


def include_name(name: str | None, type_: str, _parent: object) -> bool:
    return not (type_ in ("table", "index", "column") and is_search_object(name))


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
        context = MigrationContext.configure(conn, opts={"include_name": include_name})
        diff = compare_metadata(context, metadata)
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


def test_0004_leases_claims_a_crash_left_and_keys_compare_exactly(database: Database) -> None:
    """Upgrading: a claim left in progress (response JSON null) gets ``alive_at`` =
    ``created_at`` so a retry can take it over; a recorded one gets none. Keys differing
    only in case are two keys on every backend (MySQL's collation made them one)."""
    cfg = alembic_config(database.url)
    command.downgrade(cfg, "0003")
    then = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    old = sa.table(
        "lumina_idempotency",
        sa.column("owner"),
        sa.column("key"),
        sa.column("fingerprint"),
        sa.column("response", sa.JSON),
        sa.column("created_at", UTCDateTime()),
    )
    old_insert = old.insert().values(owner="o", fingerprint="f", created_at=then)
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(
                old_insert,
                [
                    {"key": "crashed", "response": None},
                    {"key": "done", "response": {"a": 1}},
                ],
            )
        command.upgrade(cfg, "head")
        with engine.begin() as conn:
            rows = conn.execute(
                sa.select(I.c.key, I.c.response, I.c.alive_at, I.c.claimed_by).order_by(I.c.key)
            ).all()
            assert [tuple(r) for r in rows] == [
                ("crashed", None, then, None),
                ("done", {"a": 1}, None, None),
            ]
            for key in ("AbC", "abc", "abç"):
                conn.execute(
                    sa.insert(I).values(owner="o", key=key, fingerprint="f", created_at=then)
                )
            conn.execute(sa.delete(I).where(I.c.key != "AbC"))
        command.downgrade(cfg, "0003")
        assert {c["name"] for c in sa.inspect(engine).get_columns("lumina_idempotency")} == {
            "owner",
            "key",
            "fingerprint",
            "response",
            "created_at",
        }
        command.upgrade(cfg, "head")
    finally:
        engine.dispose()


def test_0006_adds_accounts_and_links_sessions_to_users(database: Database) -> None:
    """Sessions signed in before accounts existed (user_id NULL) survive the new foreign
    key both ways; downgrading removes the account tables and the key again."""
    cfg = alembic_config(database.url)
    command.downgrade(cfg, "0005")
    assert not {"lumina_user", "lumina_api_key", "lumina_audit"} & _tables(database.url)
    then = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = {
        "token_hash": "h" * 64,
        "owner": "alice",
        "user_id": None,
        "method": "api-key",
        "created_at": then,
        "expires_at": then,
        "last_seen_at": then,
        "user_agent": "ua",
        "client_ip": "127.0.0.1",
    }
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(S).values(row))
        command.upgrade(cfg, "head")
        assert {"lumina_user", "lumina_api_key", "lumina_audit"} <= _tables(database.url)
        keys = sa.inspect(engine).get_foreign_keys("lumina_session")
        assert [(k["referred_table"], k["constrained_columns"]) for k in keys] == [
            ("lumina_user", ["user_id"])
        ]
        with engine.begin() as conn:
            assert conn.execute(sa.select(S.c.owner, S.c.user_id)).all() == [("alice", None)]
        command.downgrade(cfg, "0005")
        assert sa.inspect(engine).get_foreign_keys("lumina_session") == []
        with engine.begin() as conn:
            assert conn.execute(sa.select(S.c.owner)).scalars().all() == ["alice"]
            conn.execute(sa.delete(S))
        command.upgrade(cfg, "head")
    finally:
        engine.dispose()
