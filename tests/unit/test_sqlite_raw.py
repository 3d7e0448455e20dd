"""The SQLite write path's own statements go straight to the cursor (``sqlite_raw``): the
rows they store are the ones SQLAlchemy stores, byte for byte; driver errors are still
SQLAlchemy's; statement events still fire; everything else is SQLAlchemy's to run."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from lumina_app.domain import ConversationInfo, MessageStatus, Msg
from lumina_app.storage.sql import writes
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import runs as R
from lumina_app.storage.sql.sqlite_raw import RawWrites
from lumina_app.storage.sql.types import UTCDateTime
from tests.turns import new_run_record

AT = datetime(2026, 12, 3, 9, 30, 15, 120034, tzinfo=UTC)
WHOLE_SECOND = datetime(2026, 12, 3, 9, 30, 16, tzinfo=timezone(timedelta(hours=2)))


@pytest.fixture
def sync_engine(sqlite_database):
    engine = sa.create_engine(sqlite_database.url)
    yield engine
    engine.dispose()


def _a_turns_writes(conn, title: str) -> int:
    """A conversation started with one turn, a follow-up accepted, both answers settled:
    every statement of the write path, with fixed times and text."""
    conversation = ConversationInfo.new(agent_id="a", title=title)
    conversation.created_at = conversation.updated_at = AT
    conversation.message_count = conversation.last_seq = 2
    first = [Msg.user("q1 ‘quoted’", turn_id="t1"), Msg.assistant("", turn_id="t1")]
    first[1].status = MessageStatus.STREAMING
    first[1].meta = {"runId": "1", "ünïcode": ["x", 1]}
    writes.start_conversation(conn, conversation, first, new_run_record(f"{conversation.uuid}-1"))
    pk = conversation.id
    second = [Msg.user("q2", turn_id="t2"), Msg.assistant("", turn_id="t2")]
    second[1].status = MessageStatus.STREAMING
    bump = {"_cid": pk, "_n": 2, "_tools": 0, "updated_at": WHOLE_SECOND}
    writes.append_messages(conn, pk, second, bump, new_run_record(f"{conversation.uuid}-2"))
    for answer, text in ((first[1], "a1"), (second[1], "a2")):
        values = {"_mid": answer.id, "content": text, "status": "complete", "updated_at": AT}
        settle = {"_cid": pk, "_tools": 0, "status": "completed", "updated_at": AT}
        assert writes.update_message(conn, values, only_streaming=True, settle=settle, run=None)
    closed = {"_mid": first[1].id, "content": "late", "updated_at": AT}
    assert not writes.update_message(conn, closed, only_streaming=True, settle=None, run=None)
    return pk


def _stored(engine, pk: int) -> dict[str, list[tuple]]:
    """The rows as SQLite holds them (text, not parsed back), without their ids."""
    with engine.connect() as conn:
        raw = conn.connection.driver_connection

        def rows(sql: str) -> list[tuple]:
            return [r[1:] for r in raw.execute(sql, (pk,)).fetchall()]

        return {
            "conversation": rows(
                "SELECT id, agent_id, title, status, message_count, tool_call_count, last_seq,"
                " owner, created_at, updated_at, meta FROM lumina_conversation WHERE id = ?"
            ),
            "messages": rows(
                "SELECT id, seq, turn_id, role, content, status, created_at, updated_at, meta"
                " FROM lumina_message WHERE conversation_id = ? ORDER BY seq"
            ),
            "runs": rows(
                "SELECT run_id, status, started_at, finished_at, context,"
                " user_message_id IS NOT NULL FROM lumina_run"
                " WHERE conversation_id = ? ORDER BY run_id"
            ),
        }


def test_the_rows_stored_are_the_ones_sqlalchemy_stores(sync_engine) -> None:
    with sync_engine.begin() as conn:
        through_sqlalchemy = _a_turns_writes(conn, "same")
    with sync_engine.begin() as conn:
        raw = RawWrites(conn)
        through_cursor = _a_turns_writes(raw, "same")
    plain, direct = _stored(sync_engine, through_sqlalchemy), _stored(sync_engine, through_cursor)
    assert direct["conversation"] == plain["conversation"]
    assert direct["messages"] == plain["messages"]
    assert len(direct["messages"]) == 4
    assert direct["messages"][0][5] == "2026-12-03 09:30:15.120034"
    assert direct["messages"][2][6] == "2026-12-03 07:30:16.000000"  # UTC, microseconds kept
    assert direct["runs"] == plain["runs"]


def test_the_write_path_uses_the_cursor_and_keeps_the_statement_events(
    sync_engine, sqlite_database
) -> None:
    seen: list[str] = []
    sa.event.listen(sync_engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    with sync_engine.begin() as conn:
        raw = RawWrites(conn)
        _a_turns_writes(raw, "counted")
        sent_by_sqlalchemy = conn.get_execution_options()  # delegated attribute
    assert sent_by_sqlalchemy is not None
    assert len(seen) == 11, seen  # 3 start, 3 accept, 2 × (answer + conversation), 1 fenced
    assert seen[1].count("(?, ?, ?, ?, ?, ?, ?, ?, ?)") == 2  # both first messages, one INSERT


async def test_the_inline_write_path_hands_the_cursor_path_its_transactions(
    sqlite_database,
) -> None:
    from lumina_app.settings import load_settings

    engine = create_engine(load_settings(database_url=sqlite_database.url).async_database_url)
    try:
        db = SQLDatabase(engine)
        assert await db.transact_inline(lambda conn: type(conn)) is RawWrites
    finally:
        await engine.dispose()


def test_a_driver_error_is_raised_as_sqlalchemys(sync_engine) -> None:
    with sync_engine.begin() as conn:
        pk = _a_turns_writes(RawWrites(conn), "dup")
    twice = Msg.user("again", turn_id="t9")
    twice.seq, twice.created_at, twice.updated_at = 1, AT, AT  # seq 1 is taken
    with pytest.raises(sa.exc.IntegrityError), sync_engine.begin() as conn:
        raw = RawWrites(conn)
        raw.execute(writes._INSERT_MESSAGE, writes.message_row(pk, twice))
    with pytest.raises(sa.exc.StatementError, match="_mid"), sync_engine.begin() as conn:
        RawWrites(conn).execute(writes._UPDATE_MESSAGE, {"content": "no id"})


def test_statements_not_marked_fast_are_sqlalchemys(sync_engine) -> None:
    with sync_engine.begin() as conn:
        pk = _a_turns_writes(RawWrites(conn), "read")
        raw = RawWrites(conn)
        result = raw.execute(sa.select(C.c.title, C.c.updated_at).where(C.c.id == pk))
        title, updated_at = result.one()
        runs = raw.scalar(
            sa.select(sa.func.count()).select_from(R).where(R.c.conversation_id == pk)
        )
        texts = raw.execute(sa.select(M.c.content).where(M.c.conversation_id == pk)).scalars()
    assert (title, updated_at, runs) == ("read", AT, 2)  # typed by SQLAlchemy: aware datetime
    assert sorted(texts) == ["a1", "a2", "q1 ‘quoted’", "q2"]


@pytest.mark.unit
def test_a_utc_time_binds_as_sqlalchemys_sqlite_datetime_text() -> None:
    dialect = sqlite.pysqlite.dialect()
    ours = UTCDateTime().bind_processor(dialect)
    generic = sa.DateTime().dialect_impl(dialect).bind_processor(dialect)
    for at in (AT, WHOLE_SECOND, datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)):
        assert ours(at) == generic(at.astimezone(UTC).replace(tzinfo=None))
    assert ours(None) is None
    with pytest.raises(ValueError, match="naive"):
        ours(datetime(2026, 1, 1))
