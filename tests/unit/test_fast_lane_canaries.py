"""Canaries of the library internals the fast lanes read through platform/*_private.py
(#44): each exercises the private name as the lane uses it, so an upgrade that changes it
fails here, by name, rather than as a write that sends the wrong value. And the version
guards: on an untested release each lane takes its plain path, logged once, no error."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import sqlite3
import threading
from datetime import datetime

import aiosqlite
import pytest
import sqlalchemy as sa

from lumina_app.platform import aiosqlite_private, sqlalchemy_private, tokenizers_private, versions

pytestmark = pytest.mark.unit

METADATA = sa.MetaData()
ROWS = sa.Table(
    "canary_row",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("at", sa.DateTime),
    sa.Column("meta", sa.JSON),
    sa.Column("status", sa.String(16)),
)
INSERT = sa.insert(ROWS)


@pytest.fixture
def sqlite_engine():
    sqlite_engine = sa.create_engine("sqlite://")
    METADATA.create_all(sqlite_engine)
    yield sqlite_engine
    sqlite_engine.dispose()


# -- SQLAlchemy --------------------------------------------------------------------------


def test_the_tested_sqlalchemy_is_installed_and_its_names_are_there() -> None:
    assert sqlalchemy_private.AVAILABLE


def test_bind_processors_render_values_as_the_engine_sends_them(sqlite_engine) -> None:
    """``SQLCompiler._bind_processors``: JSON and dates rendered for SQLite's driver."""
    compiled = INSERT.compile(dialect=sqlite_engine.dialect, column_keys=["at", "meta", "status"])
    processors = sqlalchemy_private.bind_processors(compiled)
    assert processors is not None
    assert json.loads(processors["meta"]({"a": 1})) == {"a": 1}
    assert processors["at"](datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02 03:04:05.000000"
    assert processors.get("status") is None  # a plain string goes as it is


def test_insertmanyvalues_gives_the_values_group_of_a_multi_row_insert(sqlite_engine) -> None:
    returning = INSERT.returning(ROWS.c.id)  # as the write path's multi-row INSERT
    compiled = returning.compile(
        dialect=sqlite_engine.dialect, column_keys=["status"], for_executemany=True
    )
    group = sqlalchemy_private.single_values(compiled)
    assert group is not None and f"({group})" in compiled.string
    assert compiled.string.count(f"({group})") == 1


def test_has_events_and_the_listeners_are_called_as_the_engine_calls_them(sqlite_engine) -> None:
    seen: list[str] = []
    with sqlite_engine.connect() as conn:
        assert sqlalchemy_private.has_events(conn) is False
        assert sqlalchemy_private.has_events(sqlite_engine) is False

    def before(conn, cursor, statement, params, context, many) -> None:
        seen.append(statement)  # returns nothing: the dispatch hands back what it was given

    sa.event.listen(sqlite_engine, "before_cursor_execute", before)
    with sqlite_engine.connect() as conn:
        assert sqlalchemy_private.has_events(conn) is True
        assert sqlalchemy_private.has_events(sqlite_engine) is True
        (fn,) = sqlalchemy_private.listeners(conn, "before_cursor_execute")
        assert fn(conn, None, "SELECT 1", (), None, False) == ("SELECT 1", ())
        assert list(sqlalchemy_private.listeners(sqlite_engine, "after_cursor_execute")) == []
    assert seen == ["SELECT 1"]


def test_a_driver_error_is_raised_as_sqlalchemys_own() -> None:
    orig = sqlite3.IntegrityError("UNIQUE constraint failed")
    error = sqlalchemy_private.driver_error("INSERT …", (1,), orig, sqlite3.Error)
    assert isinstance(error, sa.exc.IntegrityError) and error.orig is orig
    lost = sqlalchemy_private.driver_error(None, None, sqlite3.OperationalError("gone"),
                                           sqlite3.Error, invalidated=True)  # fmt: skip
    assert isinstance(lost, sa.exc.OperationalError) and lost.connection_invalidated


def test_without_the_internals_the_sqlite_lane_writes_through_sqlalchemy(
    sqlite_engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain path: no plan compiled, the same row written by ``Connection.execute``."""
    from lumina_app.storage.sql import sqlite_raw

    statement = sqlite_raw.fast(sa.insert(ROWS))
    monkeypatch.setattr(sqlalchemy_private, "AVAILABLE", False)
    monkeypatch.setattr(sqlite_raw, "_PLANS", {})
    with sqlite_engine.begin() as conn:
        result = sqlite_raw.RawWrites(conn).execute(statement, {"status": "plain"})
        assert result.inserted_primary_key[0] == 1
    assert list(sqlite_raw._PLANS.values()) == [None]
    with sqlite_engine.connect() as conn:
        assert conn.execute(sa.select(ROWS.c.status)).scalar_one() == "plain"


# -- aiosqlite -----------------------------------------------------------------------------


def _memory() -> sqlite3.Connection:
    return sqlite3.connect(":memory:", check_same_thread=False)  # as SQLAlchemy connects


def _hooks(inline: bool, where: list[str]):
    def waiting(conn, fn, args, kwargs):
        where.append("waited on " + threading.current_thread().name)
        return fn(*args, **kwargs)

    return (lambda: inline, lambda exc: "locked" in str(exc), waiting)


async def test_aiosqlite_calls_run_inline_or_on_its_thread() -> None:
    """``_execute`` (overridden), ``_running``/``_connection`` (open?) and ``_thread``."""
    assert aiosqlite_private.AVAILABLE
    here = threading.get_ident()
    for inline in (True, False):
        make = aiosqlite_private.connector(_memory, 64, _hooks(inline, []))
        conn = await make()
        try:
            assert isinstance(conn, aiosqlite_private.InlineConnection)
            assert conn._thread.daemon
            await conn.create_function("tid", 0, threading.get_ident)
            [(ran_on,)] = await (await conn.execute("SELECT tid()")).fetchall()
            assert (ran_on == here) is inline
        finally:
            await conn.close()
        with pytest.raises(ValueError, match=r"closed|no active connection"):
            await conn.execute("SELECT 1")


async def test_a_busy_inline_call_runs_again_on_the_thread_through_waiting() -> None:
    """``_conn``: the sqlite3 connection handed to ``waiting`` on the worker thread."""
    where: list[str] = []
    calls = {"n": 0}
    make = aiosqlite_private.connector(_memory, 64, _hooks(True, where))
    conn = await make()
    try:

        def flaky() -> int:
            calls["n"] += 1
            if calls["n"] == 1:
                raise sqlite3.OperationalError("database is locked")
            return 42

        assert await conn._execute(flaky) == 42
        assert where and not where[0].endswith(threading.current_thread().name)
    finally:
        await conn.close()


# -- tokenizers ----------------------------------------------------------------------------


def test_a_bpe_model_can_turn_its_word_cache_off() -> None:
    from tokenizers import Tokenizer
    from tokenizers.models import BPE

    tokenizer = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    assert tokenizers_private.drop_word_cache(tokenizer) is True
    assert tokenizer.encode("ab").ids == [2]  # still tokenizes, uncached


# -- the guards ----------------------------------------------------------------------------


def test_a_release_is_compared_to_the_depth_tested() -> None:
    assert versions.release("2.1.9", 2) == (2, 1)
    assert versions.release("0.22.1", 2) == (0, 22)


def test_an_untested_release_takes_the_plain_path_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda _name: "9.0.0")
    monkeypatch.setattr(versions, "_told", set())
    with caplog.at_level(logging.WARNING, logger=versions.__name__):
        assert versions.tested("sqlalchemy", "2.1", "lane.x") is False
        assert versions.tested("sqlalchemy", "2.1", "lane.x") is False
        from tokenizers import Tokenizer
        from tokenizers.models import BPE

        assert tokenizers_private.drop_word_cache(Tokenizer(BPE())) is False
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if m.startswith("lane.x")]) == 1
    assert any("tokenizers_private" in m and "plain path" in m for m in said)


async def test_an_untested_aiosqlite_gives_plain_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(aiosqlite_private, "AVAILABLE", False)
    conn = await aiosqlite_private.connector(_memory, 64, _hooks(True, []))()
    try:
        assert type(conn) is aiosqlite.Connection
        assert await (await conn.execute("SELECT 7")).fetchall() == [(7,)]
    finally:
        await conn.close()
    await asyncio.sleep(0)
