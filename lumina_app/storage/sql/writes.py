"""The write path's transactions (start a conversation, append a turn, update an answer,
settle an answer with the rows that follow it) as plain synchronous functions of one
SQLAlchemy ``Connection``.

Every chat turn runs these, so they are built for CPU:

* statements are built once, values come as execute() parameters (columns not named in
  ``values()`` join the SET clause by key); building and cache-keying a statement per
  call cost more than running it;
* a whole transaction is one sync function: on SQLite it runs inline on a plain pysqlite
  connection (``sqlite_inline.SyncSQLite``), on MariaDB/PostgreSQL through the async
  engine's ``run_sync`` (one greenlet per transaction instead of one per statement).

``ColdStore`` is the only caller; it holds the SQLite write gate around them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lumina_app.domain import (
    ConversationInfo,
    ConversationNotFound,
    MessageStatus,
    Msg,
    MsgRole,
    RunRecord,
    RunStatus,
)
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import runs as R
from lumina_app.storage.sql.runs import run_values

_CONVERSATION_FIELDS = [c.name for c in C.columns if c.name != "id"]
_INSERT_CONVERSATION = sa.insert(C)
_INSERT_MESSAGE = sa.insert(M)
_INSERT_MESSAGES_RETURNING = sa.insert(M).returning(M.c.id, sort_by_parameter_order=True)
_INSERT_RUN = sa.insert(R)
_BUMP = (
    sa.update(C)
    .where(C.c.id == sa.bindparam("_cid"))
    .values(
        last_seq=C.c.last_seq + sa.bindparam("_n"),
        message_count=C.c.message_count + sa.bindparam("_n"),
        tool_call_count=C.c.tool_call_count + sa.bindparam("_tools"),
    )
)
_BUMP_RETURNING = _BUMP.returning(C.c.last_seq)
_LAST_SEQ = sa.select(C.c.last_seq).where(C.c.id == sa.bindparam("_cid"))
_UPDATE_MESSAGE = sa.update(M).where(M.c.id == sa.bindparam("_mid"))
_UPDATE_STREAMING_MESSAGE = _UPDATE_MESSAGE.where(M.c.status == MessageStatus.STREAMING.value)
_SETTLE_CONVERSATION = (
    sa.update(C)
    .where(C.c.id == sa.bindparam("_cid"))
    .values(tool_call_count=C.c.tool_call_count + sa.bindparam("_tools"))
)
_SETTLE_RUN = sa.update(R).where(R.c.run_id == sa.bindparam("_rid"))


def _final_write() -> sa.Select:
    """PostgreSQL's final write as one statement: the fenced answer UPDATE, then — only if
    it matched — the conversation and the run, as data-modifying CTEs. One statement is
    atomic on its own, so it needs no BEGIN/COMMIT either (``SQLDatabase.transact_one``):
    one round trip where the three UPDATEs in a transaction made five."""

    def bind(name: str, column: sa.Column) -> sa.BindParameter:
        return sa.bindparam(name, type_=column.type)

    answer = (
        sa.update(M)
        .where(M.c.id == sa.bindparam("_mid"), M.c.status == MessageStatus.STREAMING.value)
        .values(
            content=bind("m_content", M.c.content),
            status=bind("m_status", M.c.status),
            meta=bind("m_meta", M.c.meta),
            updated_at=bind("m_now", M.c.updated_at),
        )
        .returning(M.c.id)
        .cte("answer")
    )
    written = sa.exists(sa.select(answer.c.id))
    conversation = (
        sa.update(C)
        .where(C.c.id == sa.bindparam("_cid"), written)
        .values(
            tool_call_count=C.c.tool_call_count + sa.bindparam("_tools"),
            status=bind("c_status", C.c.status),
            updated_at=bind("c_now", C.c.updated_at),
        )
        .returning(C.c.id)
        .cte("conversation")
    )
    run = (
        sa.update(R)
        .where(R.c.run_id == sa.bindparam("_rid"), written)
        .values(
            assistant_message_id=sa.bindparam("r_answer"),
            status=bind("r_status", R.c.status),
            finished_at=bind("r_finished", R.c.finished_at),
            error=bind("r_error", R.c.error),
        )
        .returning(R.c.run_id)
        .cte("run")
    )
    return sa.select(answer.c.id).add_cte(conversation, run)


_FINAL_WRITE = _final_write()
_MESSAGE_FIELDS = ("turn_id", "role", "content", "status", "created_at", "updated_at", "meta")


def _accept(count: int) -> sa.Select:
    """PostgreSQL's ``append_messages`` with a run as one statement, for ``count`` rows:
    the conversation's seq bump (its row lock orders concurrent writers as before), the
    rows numbered from it, and the run pointing at the first and the last row, as
    data-modifying CTEs; returns the rows' (seq, id). No conversation: no rows at all."""

    def bind(name: str, column: sa.Column) -> sa.BindParameter:
        return sa.bindparam(name, type_=column.type)

    bumped = (
        sa.update(C)
        .where(C.c.id == sa.bindparam("_cid"))
        .values(
            last_seq=C.c.last_seq + sa.bindparam("_n"),
            message_count=C.c.message_count + sa.bindparam("_n"),
            tool_call_count=C.c.tool_call_count + sa.bindparam("_tools"),
            status=bind("c_status", C.c.status),
            updated_at=bind("c_now", C.c.updated_at),
        )
        .returning(C.c.last_seq)
        .cte("bumped")
    )
    selects = [
        sa.select(
            bind("_cid", M.c.conversation_id),
            bumped.c.last_seq - (count - 1 - i),
            *(bind(f"m{i}_{name}", M.c[name]) for name in _MESSAGE_FIELDS),
        )
        for i in range(count)
    ]
    rows = (
        sa.insert(M)
        .from_select(["conversation_id", "seq", *_MESSAGE_FIELDS], sa.union_all(*selects))
        .returning(M.c.seq, M.c.id)
        .cte("inserted")
    )

    def row_id(offset: int) -> sa.ScalarSelect:
        return (
            sa.select(rows.c.id).where(rows.c.seq == bumped.c.last_seq - offset).scalar_subquery()
        )

    ids = {"user_message_id": row_id(count - 1), "assistant_message_id": row_id(0)}
    run_columns = [c.name for c in R.columns]
    run = (
        sa.insert(R)
        .from_select(
            run_columns,
            sa.select(
                *(ids.get(name, bind(f"r_{name}", R.c[name])) for name in run_columns)
            ).select_from(bumped),
        )
        .returning(R.c.run_id)
        .cte("run")
    )
    return sa.select(rows.c.seq, rows.c.id).add_cte(run)


_ACCEPTS: dict[int, sa.Select] = {}
_STARTS: dict[int, sa.Select] = {}


def _start(count: int) -> sa.Select:
    """PostgreSQL's ``start_conversation`` with a run as one statement, for ``count`` rows
    numbered 1…count: the conversation, its rows and the run, as data-modifying CTEs;
    returns the conversation's id and the rows' (seq, id)."""

    def bind(name: str, column: sa.Column) -> sa.BindParameter:
        return sa.bindparam(name, type_=column.type)

    created = (
        sa.insert(C)
        .values({name: bind(f"c_{name}", C.c[name]) for name in _CONVERSATION_FIELDS})
        .returning(C.c.id)
        .cte("created")
    )
    selects = [
        sa.select(
            created.c.id,
            sa.literal(i + 1, M.c.seq.type),
            *(bind(f"m{i}_{name}", M.c[name]) for name in _MESSAGE_FIELDS),
        )
        for i in range(count)
    ]
    rows = (
        sa.insert(M)
        .from_select(["conversation_id", "seq", *_MESSAGE_FIELDS], sa.union_all(*selects))
        .returning(M.c.conversation_id, M.c.seq, M.c.id)
        .cte("inserted")
    )

    def row_id(seq: int) -> sa.ScalarSelect:
        return sa.select(rows.c.id).where(rows.c.seq == seq).scalar_subquery()

    computed = {
        "conversation_id": created.c.id,
        "user_message_id": row_id(1),
        "assistant_message_id": row_id(count),
    }
    run_columns = [c.name for c in R.columns]
    run = (
        sa.insert(R)
        .from_select(
            run_columns,
            sa.select(
                *(computed.get(name, bind(f"r_{name}", R.c[name])) for name in run_columns)
            ).select_from(created),
        )
        .returning(R.c.run_id)
        .cte("run")
    )
    return sa.select(rows.c.conversation_id, rows.c.seq, rows.c.id).add_cte(run)


def start(
    conn: Connection, conversation: ConversationInfo, msgs: Sequence[Msg], run: RunRecord
) -> None:
    """``start_conversation`` as one statement (``_start``), for a backend whose INSERTs
    can be CTEs (PostgreSQL); the same rows and values. Sets the conversation's ``id``."""
    count = len(msgs)
    statement = _STARTS.get(count)
    if statement is None:
        statement = _STARTS[count] = _start(count)
    now = conversation.updated_at
    number(msgs, 1, now)
    params: dict[str, Any] = {
        f"c_{name}": getattr(conversation, name) for name in _CONVERSATION_FIELDS
    }
    params["c_status"] = conversation.status.value
    for i, msg in enumerate(msgs):
        params.update({f"m{i}_{name}": getattr(msg, name) for name in _MESSAGE_FIELDS})
        params[f"m{i}_role"], params[f"m{i}_status"] = msg.role.value, msg.status.value
    run.started_at = run.started_at or now
    params.update({f"r_{name}": value for name, value in run_values(run).items()})
    result = conn.execute(statement, params).all()
    conversation.id = result[0][0]
    ids = {seq: row_id for _, seq, row_id in result}
    for msg in msgs:
        msg.id = ids[msg.seq]
    run.conversation_id = conversation.id
    run.user_message_id = msgs[0].id
    run.assistant_message_id = msgs[-1].id


def one_statement_accept(msgs: Sequence[Msg], bump: dict[str, Any], run: RunRecord | None) -> bool:
    """Whether ``accept`` can make this ``append_messages``: rows, the conversation's new
    status, and a run pointing at them."""
    return bool(msgs) and "status" in bump and run is not None


def accept(
    conn: Connection,
    conversation_id: int,
    msgs: Sequence[Msg],
    bump: dict[str, Any],
    run: RunRecord,
) -> None:
    """``append_messages`` as one statement (``_accept``), for a backend whose INSERTs and
    UPDATEs can be CTEs (PostgreSQL); the same rows and values."""
    now = bump["updated_at"]
    count = len(msgs)
    statement = _ACCEPTS.get(count)
    if statement is None:
        statement = _ACCEPTS[count] = _accept(count)
    run.conversation_id = conversation_id
    run.started_at = run.started_at or now
    params: dict[str, Any] = {
        "_cid": conversation_id,
        "_n": count,
        "_tools": bump["_tools"],
        "c_status": bump["status"],
        "c_now": now,
    }
    for i, msg in enumerate(msgs):
        created = msg.created_at or now
        params.update(
            {
                f"m{i}_turn_id": msg.turn_id,
                f"m{i}_role": msg.role.value,
                f"m{i}_content": msg.content,
                f"m{i}_status": msg.status.value,
                f"m{i}_created_at": created,
                f"m{i}_updated_at": msg.updated_at or created,
                f"m{i}_meta": msg.meta,
            }
        )
    params.update({f"r_{name}": value for name, value in run_values(run).items()})
    ids = dict(conn.execute(statement, params).all())
    if not ids:
        raise ConversationNotFound(str(conversation_id))
    number(msgs, min(ids), now)
    for msg in msgs:
        msg.id = ids[msg.seq]
    run.user_message_id = msgs[0].id
    run.assistant_message_id = msgs[-1].id


def one_statement_final(
    values: dict[str, Any], settle: dict[str, Any] | None, run: RunRecord | None
) -> bool:
    """Whether ``final_write`` can make this ``update_message``: a fenced answer with its
    status and meta, the conversation's status, and a run that has ended."""
    return (
        settle is not None
        and "status" in settle
        and "status" in values
        and "meta" in values
        and run is not None
        and run.status != RunStatus.RUNNING
    )


def final_write(
    conn: Connection, values: dict[str, Any], settle: dict[str, Any], run: RunRecord
) -> bool:
    """``update_message(only_streaming=True)`` as one statement (``_final_write``), for a
    backend whose UPDATEs can be CTEs (PostgreSQL); the same rows and values."""
    run.finished_at = run.finished_at or values["updated_at"]
    params = {
        "_mid": values["_mid"],
        "m_content": values["content"],
        "m_status": values["status"],
        "m_meta": values["meta"],
        "m_now": values["updated_at"],
        "_cid": settle["_cid"],
        "_tools": settle["_tools"],
        "c_status": settle["status"],
        "c_now": settle["updated_at"],
        "_rid": run.run_id,
        "r_answer": run.assistant_message_id,
        "r_status": str(run.status),
        "r_finished": run.finished_at,
        "r_error": run.error,
    }
    return conn.execute(_FINAL_WRITE, params).first() is not None


def insert_conversation(conn: Connection, conversation: ConversationInfo) -> None:
    """Insert a conversation built with ``ConversationInfo.new``; sets its ``id``."""
    row = {name: getattr(conversation, name) for name in _CONVERSATION_FIELDS}
    row["status"] = conversation.status.value
    conversation.id = conn.execute(_INSERT_CONVERSATION, row).inserted_primary_key[0]


def start_conversation(
    conn: Connection, conversation: ConversationInfo, msgs: Sequence[Msg], run: RunRecord | None
) -> None:
    """A new conversation with its first messages (seq 1…n) and the run answering them;
    its counters are already set by the caller, so no seq bump is needed."""
    insert_conversation(conn, conversation)
    number(msgs, 1, conversation.updated_at)
    _insert_messages(conn, conversation.id, msgs)
    if run is not None:
        _insert_run(conn, run, conversation.id, msgs, conversation.updated_at)


def append_messages(
    conn: Connection,
    conversation_id: int,
    msgs: Sequence[Msg],
    bump: dict[str, Any],
    run: RunRecord | None,
) -> None:
    """The next seqs for ``msgs``, taken under the conversation row's lock (so concurrent
    writers get strictly increasing, gapless seqs), then the rows and the run."""
    now = bump["updated_at"]
    last = _bump_last_seq(conn, conversation_id, bump)
    number(msgs, last - len(msgs) + 1, now)
    _insert_messages(conn, conversation_id, msgs)
    if run is not None:
        _insert_run(conn, run, conversation_id, msgs, now)


def update_message(
    conn: Connection,
    values: dict[str, Any],
    *,
    only_streaming: bool,
    settle: dict[str, Any] | None,
    run: RunRecord | None,
) -> bool:
    """The answer's text (and status/meta); then the conversation and the run, if given.
    Fenced by ``only_streaming``: False, and nothing written, if the answer was closed."""
    statement = _UPDATE_STREAMING_MESSAGE if only_streaming else _UPDATE_MESSAGE
    if not conn.execute(statement, values).rowcount and only_streaming:
        return False
    if settle is not None:
        conn.execute(_SETTLE_CONVERSATION, settle)
    if run is not None:
        _settle_run(conn, run, values["updated_at"])
    return True


def settle_with_rows(
    conn: Connection,
    values: dict[str, Any],
    rows: Sequence[Msg],
    bump: dict[str, Any],
    run: RunRecord | None,
) -> bool:
    """An answer settles (fenced on it still ``streaming``: False, and nothing written,
    if it was closed) and ``rows`` follow it with the next seqs — a tool step's TOOL
    results, and the next answer row unless the run ends here — all in one transaction,
    with the conversation's counters (``bump``) and the run, which points at its latest
    answer row."""
    if not conn.execute(_UPDATE_STREAMING_MESSAGE, values).rowcount:
        return False
    conversation_id = bump["_cid"]
    now = bump["updated_at"]
    last = _bump_last_seq(conn, conversation_id, bump)
    if rows:
        number(rows, last - len(rows) + 1, now)
        _insert_messages(conn, conversation_id, rows)
    if run is not None:
        answers = [r.id for r in rows if r.role is MsgRole.ASSISTANT]
        run.assistant_message_id = answers[-1] if answers else run.assistant_message_id
        _settle_run(conn, run, now)
    return True


def _settle_run(conn: Connection, run: RunRecord, now: datetime) -> None:
    """The run's latest answer row; once it has ended, how (a running run stays open)."""
    params: dict[str, Any] = {"_rid": run.run_id, "assistant_message_id": run.assistant_message_id}
    if run.status != RunStatus.RUNNING:  # a plain string from some callers
        run.finished_at = run.finished_at or now
        params.update(status=str(run.status), finished_at=run.finished_at, error=run.error)
    conn.execute(_SETTLE_RUN, params)


def flush_answers(conn: Connection, flushes: Sequence[dict[str, Any]]) -> list[bool]:
    """Several growing answers' text in one transaction (``_mid``, ``content``,
    ``updated_at`` each), each fenced: False where the answer was closed meanwhile."""
    return [bool(conn.execute(_UPDATE_STREAMING_MESSAGE, f).rowcount) for f in flushes]


def number(msgs: Sequence[Msg], first_seq: int, now: datetime) -> None:
    """Give new messages consecutive seqs from ``first_seq`` and their timestamps."""
    for offset, msg in enumerate(msgs):
        msg.seq = first_seq + offset
        msg.created_at = msg.created_at or now
        msg.updated_at = msg.updated_at or msg.created_at


def _bump_last_seq(conn: Connection, conversation_id: int, params: dict[str, Any]) -> int:
    """Advance ``last_seq`` and read it back (one statement where the backend has
    UPDATE … RETURNING; MariaDB needs a second)."""
    if conn.dialect.update_returning:
        last = conn.execute(_BUMP_RETURNING, params).scalar_one_or_none()
    else:
        last = None
        if conn.execute(_BUMP, params).rowcount:
            last = conn.scalar(_LAST_SEQ, {"_cid": conversation_id})
    if last is None:
        raise ConversationNotFound(str(conversation_id))
    return last


def _insert_messages(conn: Connection, conversation_id: int, msgs: Sequence[Msg]) -> None:
    """One INSERT … RETURNING for all rows (ids in parameter order) where supported."""
    rows = [
        {
            "conversation_id": conversation_id,
            "seq": msg.seq,
            "turn_id": msg.turn_id,
            "role": msg.role.value,
            "content": msg.content,
            "status": msg.status.value,
            "created_at": msg.created_at,
            "updated_at": msg.updated_at,
            "meta": msg.meta,
        }
        for msg in msgs
    ]
    if len(rows) == 1 or not conn.dialect.insert_executemany_returning_sort_by_parameter_order:
        for msg, row in zip(msgs, rows, strict=True):
            msg.id = conn.execute(_INSERT_MESSAGE, row).inserted_primary_key[0]
        return
    ids = conn.execute(_INSERT_MESSAGES_RETURNING, rows).scalars().all()
    for msg, new_id in zip(msgs, ids, strict=True):
        msg.id = new_id


def _insert_run(
    conn: Connection, run: RunRecord, conversation_id: int, msgs: Sequence[Msg], now: datetime
) -> None:
    """The run record, pointing at the question (first) and the answer (last)."""
    run.conversation_id = conversation_id
    run.user_message_id = msgs[0].id
    run.assistant_message_id = msgs[-1].id
    run.started_at = run.started_at or now
    conn.execute(_INSERT_RUN, run_values(run))
