"""SQLite statements run on the loop's thread; a lock held by another process is waited
for on the worker thread (the loop keeps running); ``offloaded()`` work uses the thread."""

import asyncio
import contextlib
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from lumina_app.domain import Msg, new_turn_id
from lumina_app.settings import load_settings
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from lumina_app.storage.sql.sqlite_inline import offloaded
from tests.waits import wait_until


@pytest.fixture
async def sqlite_engine(sqlite_database):
    engine = create_engine(load_settings(database_url=sqlite_database.url).async_database_url)
    yield engine
    await engine.dispose()


def _thread_recorder(engine) -> list[int]:
    """A SQL function that records which thread ran the statement calling it."""
    seen: list[int] = []

    def on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.create_function(
            "lumina_thread", 0, lambda: seen.append(threading.get_ident()) or 1
        )

    sa.event.listen(engine.sync_engine, "connect", on_connect)
    return seen


async def test_statements_run_on_the_loop_thread_unless_offloaded(sqlite_engine) -> None:
    seen = _thread_recorder(sqlite_engine)
    async with sqlite_engine.connect() as conn:
        assert await conn.scalar(sa.text("SELECT lumina_thread()")) == 1
        with offloaded():
            assert await conn.scalar(sa.text("SELECT lumina_thread()")) == 1
    loop_thread = threading.get_ident()
    assert seen[0] == loop_thread
    assert seen[1] != loop_thread


async def test_a_lock_held_by_another_process_is_waited_for_off_the_loop(
    sqlite_engine, sqlite_database
) -> None:
    store = SQLColdStore(SQLDatabase(sqlite_engine))
    conv = await store.create_conversation(agent_id="assistant")
    other = sqlite3.connect(make_url(sqlite_database.url).database, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(ticker())
    write = asyncio.create_task(
        store.append_messages(conv.id, [Msg.user("waits for the lock", turn_id=new_turn_id())])
    )
    await wait_until(lambda: ticks >= 10, "the loop to keep running while the write waits")
    assert not write.done()  # waiting, not failed
    assert ticks >= 10  # and the loop kept running meanwhile
    other.execute("COMMIT")
    (saved,) = await asyncio.wait_for(write, 5)
    ticking.cancel()
    other.close()
    assert saved.seq == 1
    assert [m.content for m in await store.last_messages(conv.id, 5)] == ["waits for the lock"]


def _in_database_file(path: Path, scratch: Path, conversation_id: int) -> int:
    """Messages of the conversation in the database file itself (not in its WAL): a copy
    of the file alone, opened elsewhere, shows only what was checkpointed."""
    copy = scratch / "file-only.db"
    shutil.copyfile(path, copy)
    with contextlib.closing(sqlite3.connect(copy)) as conn:
        query = "SELECT COUNT(*) FROM lumina_message WHERE conversation_id = ?"
        return conn.execute(query, (conversation_id,)).fetchone()[0]


async def test_the_wal_is_checkpointed_by_the_store_not_by_commits(
    sqlite_engine, sqlite_database, tmp_path
) -> None:
    store = SQLColdStore(SQLDatabase(sqlite_engine))
    async with sqlite_engine.connect() as conn:
        assert await conn.scalar(sa.text("PRAGMA wal_autocheckpoint")) == 0
    conv = await store.create_conversation(agent_id="assistant")
    path = Path(make_url(sqlite_database.url).database)
    for i in range(20):
        await store.append_messages(conv.id, [Msg.user(f"message {i}", turn_id=new_turn_id())])
    assert _in_database_file(path, tmp_path, conv.id) == 0  # all still in the WAL
    await store.db.checkpoint()
    assert _in_database_file(path, tmp_path, conv.id) == 20
    await store.db.close()


async def test_inline_writes_hold_one_connection_and_a_failed_one_leaves_nothing(
    sqlite_engine,
) -> None:
    """The write path keeps one connection out of the pool (no checkout per transaction);
    a transaction that fails gives it back, rolled back, and the next one starts clean."""
    db = SQLDatabase(sqlite_engine)
    store = SQLColdStore(db)
    conv = await store.create_conversation(agent_id="assistant")
    (sync_engine,) = [e for e in db.engines if e is not sqlite_engine.sync_engine]
    checkouts: list[int] = []
    sa.event.listen(sync_engine, "engine_connect", lambda conn: checkouts.append(1))
    for i in range(5):
        await store.append_messages(conv.id, [Msg.user(f"kept {i}", turn_id=new_turn_id())])
    assert len(checkouts) <= 1

    def half_then_fail(conn, conversation_pk: int) -> None:
        conn.execute(
            sa.text("UPDATE lumina_conversation SET title = 'half' WHERE id = :id"),
            {"id": conversation_pk},
        )
        raise RuntimeError("the body fails after a statement")

    with pytest.raises(RuntimeError):
        await db.transact_inline(half_then_fail, conv.id)
    await store.append_messages(conv.id, [Msg.user("after", turn_id=new_turn_id())])
    assert (await ConversationQueries(store.db).get_conversation(conv.uuid)).title != "half"
    contents = [m.content for m in await store.last_messages(conv.id, 10)]
    assert contents == [f"kept {i}" for i in range(5)] + ["after"]
    await db.close()


async def _loop_turns(work) -> int:
    """How many turns of the event loop ``work()`` waits through (another task spins it)."""
    turns = 0

    async def spin() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    spinner = asyncio.create_task(spin())
    await asyncio.sleep(0)
    before = turns
    await work()
    used = turns - before
    spinner.cancel()
    return used


async def test_an_inline_connection_is_returned_without_a_loop_turn(sqlite_engine) -> None:
    """SQLAlchemy's exit closes a connection in a task behind a shield: three loop turns,
    each a wait behind every other ready task under load. Inline, the close never suspends
    and is awaited in place; offloaded, SQLAlchemy's exit still runs."""
    db = SQLDatabase(sqlite_engine)
    pool = sqlite_engine.sync_engine.pool

    async def read() -> None:
        async with db.connect() as conn:
            assert (await conn.execute(sa.text("SELECT 1"))).scalar() == 1

    async def write() -> None:
        async with db.begin() as conn:
            await conn.execute(sa.text("INSERT INTO inline_t VALUES (1)"))

    async with db.begin() as conn:
        await conn.execute(sa.text("DROP TABLE IF EXISTS inline_t"))
        await conn.execute(sa.text("CREATE TABLE inline_t (x)"))
    await read()
    assert await _loop_turns(read) == 0
    assert await _loop_turns(write) == 0
    with offloaded():
        assert await _loop_turns(read) > 0
    assert pool.checkedout() == 0
    async with db.connect() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM inline_t"))).scalar() == 1


async def test_a_task_cancelled_inside_a_connection_gives_it_back(sqlite_engine) -> None:
    db = SQLDatabase(sqlite_engine)
    pool = sqlite_engine.sync_engine.pool
    inside, never = asyncio.Event(), asyncio.Event()

    async def held() -> None:
        async with db.begin() as conn:
            await conn.execute(sa.text("INSERT INTO cancelled_t VALUES (2)"))
            inside.set()
            await never.wait()

    async with db.begin() as conn:
        await conn.execute(sa.text("DROP TABLE IF EXISTS cancelled_t"))
        await conn.execute(sa.text("CREATE TABLE cancelled_t (x)"))
    task = asyncio.create_task(held())
    await inside.wait()
    assert pool.checkedout() == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pool.checkedout() == 0  # back in the pool, its transaction rolled back
    async with db.connect() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM cancelled_t"))).scalar() == 0
