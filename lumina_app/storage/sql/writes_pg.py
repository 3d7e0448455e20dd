"""PostgreSQL's write path: each phase of a turn as one statement (data-modifying CTEs),
sent in autocommit by ``write_paths.PostgresWrites`` on the write connections of
``pg_raw``: one round trip where a transaction of three statements made five (BEGIN, the
statements, COMMIT). The same rows and values as ``writes``' functions, which the other
backends (no DML in CTEs) keep using. Each function here builds its statement's parameters
and says what the rows it returns mean (a :class:`OneStatement`); it sends nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from lumina_app.domain import (
    ConversationInfo,
    ConversationNotFound,
    MessageStatus,
    Msg,
    RunRecord,
    RunStatus,
)
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import runs as R
from lumina_app.storage.sql.pg_raw import OneStatement
from lumina_app.storage.sql.runs import run_values
from lumina_app.storage.sql.writes import BUMP, CONVERSATION_FIELDS, number


def _bind(name: str, column: sa.Column) -> sa.BindParameter:
    return sa.bindparam(name, type_=column.type)


def _insert_run(computed: dict[str, Any], source: sa.CTE) -> sa.CTE:
    """The run record as a CTE: ``computed`` columns from the other CTEs, the rest bound
    (``r_<column>``); one row per row of ``source``, so none if it has none."""
    columns = [c.name for c in R.columns]
    values = (computed.get(name, _bind(f"r_{name}", R.c[name])) for name in columns)
    select = sa.select(*values).select_from(source)
    return sa.insert(R).from_select(columns, select).returning(R.c.run_id).cte("run")


def _final_write() -> sa.Select:
    """PostgreSQL's final write as one statement: the fenced answer UPDATE, then — only if
    it matched — the conversation and the run, as data-modifying CTEs. One statement is
    atomic on its own, so it needs no BEGIN/COMMIT either (``write_paths.PostgresWrites``):
    one round trip where the three UPDATEs in a transaction made five."""

    answer = (
        sa.update(M)
        .where(M.c.id == sa.bindparam("_mid"), M.c.status == MessageStatus.STREAMING.value)
        .values(
            content=_bind("m_content", M.c.content),
            status=_bind("m_status", M.c.status),
            meta=_bind("m_meta", M.c.meta),
            updated_at=_bind("m_now", M.c.updated_at),
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
            status=_bind("c_status", C.c.status),
            updated_at=_bind("c_now", C.c.updated_at),
        )
        .returning(C.c.id)
        .cte("conversation")
    )
    run = (
        sa.update(R)
        .where(R.c.run_id == sa.bindparam("_rid"), written)
        .values(
            assistant_message_id=sa.bindparam("r_answer"),
            status=_bind("r_status", R.c.status),
            finished_at=_bind("r_finished", R.c.finished_at),
            error=_bind("r_error", R.c.error),
        )
        .returning(R.c.run_id)
        .cte("run")
    )
    return sa.select(answer.c.id).add_cte(conversation, run)


_FINAL_WRITE = _final_write()
_MESSAGE_FIELDS = ("turn_id", "role", "content", "status", "created_at", "updated_at", "meta")


def _inserted(keys: Sequence[tuple[Any, Any]], *returning: sa.Column) -> sa.CTE:
    """The INSERT of one message row per (conversation id, seq) of ``keys`` (row i's fields
    bound as ``m<i>_<field>``: :func:`_message_params`) as the CTE ``inserted``."""
    selects = [
        sa.select(key, seq, *(_bind(f"m{i}_{name}", M.c[name]) for name in _MESSAGE_FIELDS))
        for i, (key, seq) in enumerate(keys)
    ]
    columns = ["conversation_id", "seq", *_MESSAGE_FIELDS]
    insert = sa.insert(M).from_select(columns, sa.union_all(*selects))
    return insert.returning(*returning).cte("inserted")


def _message_params(msgs: Sequence[Msg], now: datetime) -> dict[str, Any]:
    """The rows' bound values (``m<i>_<field>``), their times as ``writes.number`` sets them."""
    params: dict[str, Any] = {}
    for i, msg in enumerate(msgs):
        created = msg.created_at or now
        params.update({f"m{i}_{name}": getattr(msg, name) for name in _MESSAGE_FIELDS})
        params[f"m{i}_role"], params[f"m{i}_status"] = msg.role.value, msg.status.value
        params[f"m{i}_created_at"], params[f"m{i}_updated_at"] = created, msg.updated_at or created
    return params


def _accept(count: int) -> sa.Select:
    """PostgreSQL's ``append_messages`` with a run as one statement, for ``count`` rows:
    the conversation's seq bump (its row lock orders concurrent writers as before), the
    rows numbered from it, and the run pointing at the first and the last row, as
    data-modifying CTEs; returns the rows' (seq, id). No conversation: no rows at all."""

    bumped = (
        BUMP.values(status=_bind("c_status", C.c.status), updated_at=_bind("c_now", C.c.updated_at))
        .returning(C.c.last_seq)
        .cte("bumped")
    )
    keys = [
        (_bind("_cid", M.c.conversation_id), bumped.c.last_seq - (count - 1 - i))
        for i in range(count)
    ]
    rows = _inserted(keys, M.c.seq, M.c.id)

    def row_id(offset: int) -> sa.ScalarSelect:
        return (
            sa.select(rows.c.id).where(rows.c.seq == bumped.c.last_seq - offset).scalar_subquery()
        )

    ids = {"user_message_id": row_id(count - 1), "assistant_message_id": row_id(0)}
    run = _insert_run(ids, bumped)
    return sa.select(rows.c.seq, rows.c.id).add_cte(run)


_ACCEPTS: dict[int, sa.Select] = {}
_STARTS: dict[int, sa.Select] = {}


def _start_statement(count: int) -> sa.Select:
    """PostgreSQL's ``start_conversation`` with a run as one statement, for ``count`` rows
    numbered 1…count: the conversation, its rows and the run, as data-modifying CTEs;
    returns the conversation's id and the rows' (seq, id)."""

    created = (
        sa.insert(C)
        .values({name: _bind(f"c_{name}", C.c[name]) for name in CONVERSATION_FIELDS})
        .returning(C.c.id)
        .cte("created")
    )
    keys = [(created.c.id, sa.literal(i + 1, M.c.seq.type)) for i in range(count)]
    rows = _inserted(keys, M.c.conversation_id, M.c.seq, M.c.id)

    def row_id(seq: int) -> sa.ScalarSelect:
        return sa.select(rows.c.id).where(rows.c.seq == seq).scalar_subquery()

    computed = {
        "conversation_id": created.c.id,
        "user_message_id": row_id(1),
        "assistant_message_id": row_id(count),
    }
    run = _insert_run(computed, created)
    return sa.select(rows.c.conversation_id, rows.c.seq, rows.c.id).add_cte(run)


def start_conversation(
    conversation: ConversationInfo, msgs: Sequence[Msg], run: RunRecord
) -> OneStatement[None]:
    """``start_conversation`` as one statement (``_start_statement``), for a backend whose INSERTs
    can be CTEs (PostgreSQL); the same rows and values. Sets the conversation's ``id``."""
    count = len(msgs)
    statement = _STARTS.get(count)
    if statement is None:
        statement = _STARTS[count] = _start_statement(count)
    now = conversation.updated_at
    number(msgs, 1, now)
    params: dict[str, Any] = {
        f"c_{name}": getattr(conversation, name) for name in CONVERSATION_FIELDS
    }
    params["c_status"] = conversation.status.value
    params.update(_message_params(msgs, now))
    run.started_at = run.started_at or now
    params.update({f"r_{name}": value for name, value in run_values(run).items()})

    def started(result: list[tuple]) -> None:
        conversation.id = result[0][0]
        ids = {seq: row_id for _, seq, row_id in result}
        for msg in msgs:
            msg.id = ids[msg.seq]
        run.conversation_pk = conversation.id
        run.user_message_id = msgs[0].id
        run.assistant_message_id = msgs[-1].id

    return OneStatement(statement, params, started)


def one_statement_accept(msgs: Sequence[Msg], bump: dict[str, Any], run: RunRecord | None) -> bool:
    """Whether ``accept`` can make this ``append_messages``: rows, the conversation's new
    status, and a run pointing at them (its question among them: not a continued turn's)."""
    return bool(msgs) and "status" in bump and run is not None and run.user_message_id is None


def accept(
    conversation_pk: ConversationPk,
    msgs: Sequence[Msg],
    bump: dict[str, Any],
    run: RunRecord,
) -> OneStatement[None]:
    """``append_messages`` as one statement (``_accept``), for a backend whose INSERTs and
    UPDATEs can be CTEs (PostgreSQL); the same rows and values."""
    now = bump["updated_at"]
    count = len(msgs)
    statement = _ACCEPTS.get(count)
    if statement is None:
        statement = _ACCEPTS[count] = _accept(count)
    run.conversation_pk = conversation_pk
    run.started_at = run.started_at or now
    params: dict[str, Any] = {
        "_cid": conversation_pk,
        "_n": count,
        "_tools": bump["_tools"],
        "c_status": bump["status"],
        "c_now": now,
    }
    params.update(_message_params(msgs, now))
    params.update({f"r_{name}": value for name, value in run_values(run).items()})

    def accepted(rows: list[tuple]) -> None:
        ids = dict(rows)
        if not ids:
            raise ConversationNotFound(str(conversation_pk))
        number(msgs, min(ids), now)
        for msg in msgs:
            msg.id = ids[msg.seq]
        run.user_message_id = msgs[0].id
        run.assistant_message_id = msgs[-1].id

    return OneStatement(statement, params, accepted)


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
    values: dict[str, Any], settle: dict[str, Any], run: RunRecord
) -> OneStatement[bool]:
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
    return OneStatement(_FINAL_WRITE, params, _written)


def _written(rows: list[tuple]) -> bool:
    """The final write matched its answer (still streaming): the fence held."""
    return bool(rows)


_RETITLE = (
    sa.update(C)
    .where(C.c.uuid == sa.bindparam("_uuid"), C.c.title == sa.bindparam("_was"))
    .values(title=sa.bindparam("title", type_=C.c.title.type))
    .returning(C.c.id)
)


def retitle(conversation_uuid: str, title: str, replacing: str) -> OneStatement[bool]:
    """``writes.retitle`` (a compare and set of the title) as a statement that says whether
    it matched by the row it returns: its own commit, no BEGIN/COMMIT round trips."""
    params = {"_uuid": conversation_uuid, "_was": replacing, "title": title}
    return OneStatement(_RETITLE, params, _written)
