"""PostgreSQL's one-statement writes run on psycopg connections of their own (``pg_raw``):
the rows they store are the ones the engine stores, byte for byte; driver errors are still
SQLAlchemy's (a lost server a 503); statement events still fire; a connection the server
dropped, or whose statement was cancelled, is never used again."""

import asyncio
from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa

from lumina_app.domain import ConversationInfo, MessageStatus, Msg, StoreUnavailable
from lumina_app.settings import load_settings
from lumina_app.storage.sql import pg_raw, writes_pg
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from lumina_app.storage.sql.pg_raw import OneStatement
from tests.turns import new_run_record

AT = datetime(2026, 12, 3, 9, 30, 15, 120034, tzinfo=UTC)
LATER = datetime(2026, 12, 3, 9, 30, 16, tzinfo=timezone(timedelta(hours=2)))


@pytest.fixture
async def db(_databases):
    database = _databases("postgresql")
    database.truncate()
    engine = create_engine(load_settings(database_url=database.url).async_database_url)
    db = SQLDatabase(engine)
    yield db
    await db.close()


class EngineOnly:
    """The same OneStatements sent through the engine, as before ``pg_raw``."""

    def __init__(self, db: SQLDatabase) -> None:
        self.auto = db.engine.execution_options(isolation_level="AUTOCOMMIT")

    async def one_statement(self, one: OneStatement):
        async with self.auto.begin() as conn:
            return one.apply(list((await conn.execute(one.statement, one.params)).all()))


async def _a_conversations_writes(db, title: str) -> int:
    """A conversation started with one turn, a follow-up accepted, both answers settled,
    and a final write that finds its answer no longer streaming: every statement of the
    PostgreSQL write path, with fixed times and text."""
    conversation = ConversationInfo.new(agent_id="a", title=title)
    conversation.created_at = conversation.updated_at = AT
    conversation.message_count = conversation.last_seq = 2
    first = [Msg.user("q1 ‘quoted’ %s %(x)s", turn_id="t1"), Msg.assistant("", turn_id="t1")]
    first[1].status = MessageStatus.STREAMING
    first[1].meta = {"runId": "1", "ünïcode": ["x", 1], "none": None}
    first_run = new_run_record(f"{conversation.uuid}-1")
    await db.one_statement(writes_pg.start_conversation(conversation, first, first_run))
    pk = conversation.id
    assert first_run.user_message_id == first[0].id and first[1].id > first[0].id
    second = [Msg.user("q2", turn_id="t2"), Msg.assistant("", turn_id="t2")]
    second[1].status = MessageStatus.STREAMING
    bump = {"_cid": pk, "_n": 2, "_tools": 1, "status": "active", "updated_at": LATER}
    second_run = new_run_record(f"{conversation.uuid}-2")
    await db.one_statement(writes_pg.accept(pk, second, bump, second_run))
    assert [m.seq for m in second] == [3, 4] and second_run.assistant_message_id == second[1].id
    for answer, run, text in ((first[1], first_run, "a1"), (second[1], second_run, "a2 ☃")):
        run.status, run.finished_at = "completed", LATER
        values = {"_mid": answer.id, "content": text, "status": "complete", "updated_at": AT}
        values["meta"] = {"model": "demo", "text": text}
        settle = {"_cid": pk, "_tools": 2, "status": "completed", "updated_at": AT}
        assert await db.one_statement(writes_pg.final_write(values, settle, run))
    values = {"_mid": first[1].id, "content": "late", "status": "complete", "updated_at": AT}
    values["meta"] = None
    settle = {"_cid": pk, "_tools": 0, "status": "failed", "updated_at": AT}
    assert not await db.one_statement(writes_pg.final_write(values, settle, first_run))
    return pk


async def _stored(db: SQLDatabase, pk: int) -> dict[str, list[tuple]]:
    """The rows as PostgreSQL holds them (as text, not parsed back), without ids or the
    uuid and run ids, which differ between the two conversations."""
    queries = {
        "conversation": "SELECT agent_id, status, message_count, tool_call_count, last_seq,"
        " owner, created_at::text, updated_at::text, meta::text FROM lumina_conversation"
        " WHERE id = :pk",
        "messages": "SELECT seq, turn_id, role, content, status, created_at::text,"
        " updated_at::text, meta::text FROM lumina_message WHERE conversation_id = :pk"
        " ORDER BY seq",
        "runs": "SELECT agent_id, owner, scenario, provider, model, status, started_at::text,"
        " finished_at::text, error, context::text FROM lumina_run WHERE conversation_id = :pk"
        " ORDER BY started_at, run_id",
    }
    async with db.engine.connect() as conn:
        return {
            name: [tuple(r) for r in await conn.execute(sa.text(sql), {"pk": pk})]
            for name, sql in queries.items()
        }


async def test_the_rows_are_the_engines_byte_for_byte(db) -> None:
    raw = await _a_conversations_writes(db, "raw")
    engine = await _a_conversations_writes(EngineOnly(db), "engine")
    assert await _stored(db, raw) == await _stored(db, engine)
    stored = await _stored(db, raw)
    assert [m[3] for m in stored["messages"]] == ["q1 ‘quoted’ %s %(x)s", "a1", "q2", "a2 ☃"]
    assert stored["conversation"][0][3] == 5  # the tool counts went through the CTEs


async def test_statement_events_fire_and_it_commits_itself(db) -> None:
    seen: list[str] = []
    sync_engine = db.engine.sync_engine
    listeners = [
        ("before_cursor_execute", lambda _c, _cur, sql, *_: seen.append("before " + sql[:4])),
        ("after_cursor_execute", lambda _c, _cur, sql, *_: seen.append("after " + sql[:4])),
        ("commit", lambda _c: seen.append("commit")),
    ]
    for name, fn in listeners:
        sa.event.listen(sync_engine, name, fn)
    try:
        await _a_conversations_writes(db, "events")
    finally:
        for name, fn in listeners:
            sa.event.remove(sync_engine, name, fn)
    assert seen == ["before WITH", "after WITH", "commit"] * 5


async def test_driver_errors_are_sqlalchemys(db) -> None:
    """A conversation whose uuid is taken: an IntegrityError, as through the engine."""
    conversation = ConversationInfo.new(agent_id="a", title="twice")
    msgs = [Msg.user("q", turn_id="t"), Msg.assistant("", turn_id="t")]
    await db.one_statement(writes_pg.start_conversation(conversation, msgs, new_run_record("r1")))
    again = [Msg.user("q", turn_id="t"), Msg.assistant("", turn_id="t")]
    with pytest.raises(sa.exc.IntegrityError):
        await db.one_statement(
            writes_pg.start_conversation(conversation, again, new_run_record("r2"))
        )


async def _write_backends(db: SQLDatabase) -> list[int]:
    """The server pids of the write connections idle now."""
    pids = []
    for held in db._pg._idle:
        cursor = await held.conn.execute("SELECT pg_backend_pid()")
        pids.append((await cursor.fetchone())[0])
    return pids


async def _kill(db: SQLDatabase, pids: list[int]) -> None:
    async with db.engine.connect() as conn:
        for pid in pids:
            await conn.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": pid})


async def test_a_connection_dropped_while_idle_is_replaced_before_use(db, monkeypatch) -> None:
    await _a_conversations_writes(db, "before")
    before = await _write_backends(db)
    await _kill(db, before)
    monkeypatch.setattr(pg_raw, "PING_AFTER_IDLE_SECONDS", 0.0)  # it has been idle
    await _a_conversations_writes(db, "after")  # the ping found it dead: a new one wrote
    assert not set(await _write_backends(db)) & set(before)


async def test_a_server_lost_under_a_statement_is_unavailable_then_replaced(db) -> None:
    """Within the second after its last use a connection is not pinged: the statement
    meets the dead connection, fails as unavailable (503), and the next gets a new one."""
    pk = await _a_conversations_writes(db, "lost")
    before = await _write_backends(db)
    await _kill(db, before)
    msgs = [Msg.user("q", turn_id="t9"), Msg.assistant("", turn_id="t9")]
    bump = {"_cid": pk, "_n": 2, "_tools": 0, "status": "active", "updated_at": AT}
    with pytest.raises(StoreUnavailable):
        await db.one_statement(writes_pg.accept(pk, msgs, bump, new_run_record("r-lost")))
    await db.one_statement(writes_pg.accept(pk, msgs, bump, new_run_record("r-again")))
    assert not set(await _write_backends(db)) & set(before)


async def test_the_engine_losing_the_server_retires_the_idle_write_connections(db) -> None:
    await _a_conversations_writes(db, "first")
    before = await _write_backends(db)
    db._pg._engine_failed(_Disconnect())  # what the engine's handle_error event says
    await _a_conversations_writes(db, "second")
    assert not set(await _write_backends(db)) & set(before)


class _Disconnect:
    is_disconnect = True
    sqlalchemy_exception = None


async def test_a_cancelled_statement_leaves_no_connection_behind(db, monkeypatch) -> None:
    """The accept waits on the conversation's row lock (another writer holds it) and is
    cancelled: its connection, in the middle of a statement, is closed, not reused."""
    opened = []
    open_one = db._pg._open

    async def recording():
        held = await open_one()
        opened.append(held.conn)
        return held

    monkeypatch.setattr(db._pg, "_open", recording)
    pk = await _a_conversations_writes(db, "locked")
    msgs = [Msg.user("q", turn_id="t8"), Msg.assistant("", turn_id="t8")]
    bump = {"_cid": pk, "_n": 2, "_tools": 0, "status": "active", "updated_at": AT}
    async with db.engine.connect() as holder:
        await holder.execute(
            sa.text("SELECT id FROM lumina_conversation WHERE id = :pk FOR UPDATE"), {"pk": pk}
        )
        task = asyncio.create_task(
            db.one_statement(writes_pg.accept(pk, msgs, bump, new_run_record("r-cancel")))
        )
        await asyncio.sleep(0.3)
        assert not task.done()  # waiting for the lock
        busy = len(db._pg._idle)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(db._pg._idle) == busy  # the cancelled one did not come back
        await holder.rollback()
    await db.one_statement(writes_pg.accept(pk, msgs, bump, new_run_record("r-after")))
    async with db.engine.connect() as conn:
        runs = (await conn.execute(sa.text("SELECT run_id FROM lumina_run"))).scalars().all()
    assert "r-after" in runs
    await asyncio.gather(*db._pg._closing)
    idle = {id(held.conn) for held in db._pg._idle}
    assert all(conn.closed for conn in opened if id(conn) not in idle)
    assert len(opened) > len(idle)  # the cancelled one was opened, and closed


async def test_a_retitle_is_a_compare_and_set_in_one_statement(db) -> None:
    conversation = ConversationInfo.new(agent_id="a", title="first words")
    msgs = [Msg.user("q", turn_id="t"), Msg.assistant("", turn_id="t")]
    await db.one_statement(
        writes_pg.start_conversation(conversation, msgs, new_run_record("r-title"))
    )
    uuid = conversation.uuid
    assert await db.one_statement(writes_pg.retitle(uuid, "Proposed", "first words"))
    # the person renamed it meanwhile: the proposal no longer replaces what it read
    assert not await db.one_statement(writes_pg.retitle(uuid, "Late proposal", "first words"))
    assert not await db.one_statement(writes_pg.retitle("no-such-uuid", "x", "first words"))
    async with db.engine.connect() as conn:
        title = await conn.scalar(
            sa.text("SELECT title FROM lumina_conversation WHERE uuid = :u"), {"u": uuid}
        )
    assert title == "Proposed"


def test_a_statement_is_planned_once_and_never_confused_with_another(db) -> None:
    """Plans are kept by the statement itself (not only its id, which a statement built and
    dropped could hand on), and only so many: one built per call is compiled per call."""
    pg = db._pg
    one = writes_pg.retitle("u", "t", "w")
    assert pg._plan(one) is pg._plan(writes_pg.retitle("v", "s", "x"))  # one plan, reused
    for _ in range(pg_raw.MAX_PLANS + 10):
        built = sa.update(sa.table("t", sa.column("x"))).values(x=sa.bindparam("x"))
        assert pg._plan(OneStatement(built, {"x": 1}, list)) is not None
    assert len(pg._plans) <= pg_raw.MAX_PLANS


async def test_reads_open_no_transaction_and_writes_do(db) -> None:
    """At READ COMMITTED a read's BEGIN and ROLLBACK changed nothing but cost two round
    trips: reads run in autocommit; a write transaction is still one."""
    from psycopg.pq import TransactionStatus

    async def status(conn) -> TransactionStatus:
        raw = await conn.get_raw_connection()
        return raw.driver_connection.info.transaction_status

    async with db.connect() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM lumina_message"))).scalar() == 0
        assert await status(conn) is TransactionStatus.IDLE
    async with db.begin() as conn:
        await conn.execute(sa.text("SELECT count(*) FROM lumina_message"))
        assert await status(conn) is TransactionStatus.INTRANS
