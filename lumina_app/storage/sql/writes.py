"""The write path's transactions (start a conversation, append a turn, update an answer,
settle an answer with the rows that follow it) as plain synchronous functions of one
SQLAlchemy ``Connection``.

Every chat turn runs these, so they are built for CPU:

* statements are built once, values come as execute() parameters (columns not named in
  ``values()`` join the SET clause by key); building and cache-keying a statement per
  call cost more than running it;
* a whole transaction is one sync function: on SQLite it runs inline on a plain pysqlite
  connection (``sqlite_inline.SyncSQLite``), where the statements marked ``fast`` go
  straight to the cursor (``sqlite_raw``); on MariaDB/PostgreSQL through the async
  engine's ``run_sync`` (one greenlet per transaction instead of one per statement).

The cold store calls them through its write strategy (``write_paths``), which runs each
as one transaction (behind the SQLite write gate).
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
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import runs as R
from lumina_app.storage.sql.runs import run_values
from lumina_app.storage.sql.sqlite_raw import fast

# The gateway's own columns (history matching, client meta) are set by history_match.py.
_GATEWAY_COLUMNS = ("opening_hash", "meta")
CONVERSATION_FIELDS = [c.name for c in C.columns if c.name not in ("id", *_GATEWAY_COLUMNS)]
# A temporary conversation is marked in the meta column (the gateway's keys sit beside it:
# every gateway write reads the meta and keeps what it does not set).
TEMPORARY = "temporary"

_INSERT_CONVERSATION = fast(sa.insert(C))
_INSERT_MESSAGE = fast(sa.insert(M))
# Rows come back matched by seq (unique in the conversation), not by parameter order:
# asking for that order makes SQLite's insertmanyvalues send one INSERT per row.
_INSERT_MESSAGES_RETURNING = fast(sa.insert(M).returning(M.c.id, M.c.seq))
_INSERT_RUN = fast(sa.insert(R))
BUMP = (
    sa.update(C)
    .where(C.c.id == sa.bindparam("_cid"))
    .values(
        last_seq=C.c.last_seq + sa.bindparam("_n"),
        message_count=C.c.message_count + sa.bindparam("_n"),
        tool_call_count=C.c.tool_call_count + sa.bindparam("_tools"),
    )
)
_BUMP_RETURNING = fast(BUMP.returning(C.c.last_seq))
_LAST_SEQ = sa.select(C.c.last_seq).where(C.c.id == sa.bindparam("_cid"))
_UPDATE_MESSAGE = fast(sa.update(M).where(M.c.id == sa.bindparam("_mid")))
_UPDATE_STREAMING_MESSAGE = fast(_UPDATE_MESSAGE.where(M.c.status == MessageStatus.STREAMING.value))
_SETTLE_CONVERSATION = fast(
    sa.update(C)
    .where(C.c.id == sa.bindparam("_cid"))
    .values(tool_call_count=C.c.tool_call_count + sa.bindparam("_tools"))
)
_SETTLE_RUN = fast(sa.update(R).where(R.c.run_id == sa.bindparam("_rid")))
# A conversation's own columns (title, status, updated_at: those given).
_UPDATE_CONVERSATION = fast(sa.update(C).where(C.c.id == sa.bindparam("_cid")))
# A proposed title, only while the title is still the one it replaces. By public id, not
# primary key: SQLite gives a deleted conversation's key to the next one, and a proposal
# can land seconds after its run, long enough for that.
_RETITLE = fast(
    sa.update(C).where(C.c.uuid == sa.bindparam("_uuid"), C.c.title == sa.bindparam("_was"))
)


def insert_conversation(conn: Connection, conversation: ConversationInfo) -> None:
    """Insert a conversation built with ``ConversationInfo.new``; sets its ``id``."""
    row = {name: getattr(conversation, name) for name in CONVERSATION_FIELDS}
    row["status"] = conversation.status.value
    if conversation.temporary:
        row["meta"] = {TEMPORARY: True}
    conversation.id = conn.execute(_INSERT_CONVERSATION, row).inserted_primary_key[0]


def start_conversation(
    conn: Connection, conversation: ConversationInfo, msgs: Sequence[Msg], run: RunRecord | None
) -> None:
    """A new conversation with its first messages (seq 1…n) and the run answering them;
    its counters are already set by the caller, so no seq bump is needed."""
    insert_conversation(conn, conversation)
    number(msgs, 1, conversation.updated_at)
    insert_messages(conn, conversation.id, msgs)
    if run is not None:
        insert_run(conn, run, conversation.id, msgs, conversation.updated_at)


def append_messages(
    conn: Connection,
    conversation_pk: ConversationPk,
    msgs: Sequence[Msg],
    bump: dict[str, Any],
    run: RunRecord | None,
) -> None:
    """The next seqs for ``msgs``, taken under the conversation row's lock (so concurrent
    writers get strictly increasing, gapless seqs), then the rows and the run."""
    now = bump["updated_at"]
    last = bump_last_seq(conn, conversation_pk, bump)
    number(msgs, last - len(msgs) + 1, now)
    insert_messages(conn, conversation_pk, msgs)
    if run is not None:
        insert_run(conn, run, conversation_pk, msgs, now)


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
    conversation_pk = bump["_cid"]
    now = bump["updated_at"]
    last = bump_last_seq(conn, conversation_pk, bump)
    if rows:
        number(rows, last - len(rows) + 1, now)
        insert_messages(conn, conversation_pk, rows)
    if run is not None:
        answers = [r.id for r in rows if r.role is MsgRole.ASSISTANT]
        run.assistant_message_id = answers[-1] if answers else run.assistant_message_id
        _settle_run(conn, run, now)
    return True


def update_conversation(
    conn: Connection, conversation_pk: ConversationPk, values: dict[str, Any]
) -> bool:
    """Set ``values`` on the conversation; whether a row changed."""
    return bool(conn.execute(_UPDATE_CONVERSATION, {"_cid": conversation_pk, **values}).rowcount)


def retitle(conn: Connection, conversation_uuid: str, title: str, replacing: str) -> bool:
    """``title`` on the conversation while its title is still ``replacing``; whether it
    was stored (its place in lists kept: ``updated_at`` is not touched)."""
    params = {"_uuid": conversation_uuid, "_was": replacing, "title": title}
    return bool(conn.execute(_RETITLE, params).rowcount)


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


def bump_last_seq(conn: Connection, conversation_pk: ConversationPk, params: dict[str, Any]) -> int:
    """Advance ``last_seq`` and read it back (one statement where the backend has
    UPDATE … RETURNING; MariaDB needs a second)."""
    if conn.dialect.update_returning:
        last = conn.execute(_BUMP_RETURNING, params).scalar_one_or_none()
    else:
        last = None
        if conn.execute(BUMP, params).rowcount:
            last = conn.scalar(_LAST_SEQ, {"_cid": conversation_pk})
    if last is None:
        raise ConversationNotFound(str(conversation_pk))
    return last


def insert_messages(conn: Connection, conversation_pk: ConversationPk, msgs: Sequence[Msg]) -> None:
    """One INSERT … RETURNING for all rows where supported (ids matched by seq)."""
    rows = [message_row(conversation_pk, msg) for msg in msgs]
    if len(rows) == 1 or not conn.dialect.insert_executemany_returning:
        for msg, row in zip(msgs, rows, strict=True):
            msg.id = conn.execute(_INSERT_MESSAGE, row).inserted_primary_key[0]
        return
    ids = {seq: new_id for new_id, seq in conn.execute(_INSERT_MESSAGES_RETURNING, rows)}
    for msg in msgs:
        msg.id = ids[msg.seq]


def message_row(conversation_pk: ConversationPk, msg: Msg) -> dict[str, Any]:
    """A numbered message as ``lumina_message`` column values."""
    return {
        "conversation_id": conversation_pk,
        "seq": msg.seq,
        "turn_id": msg.turn_id,
        "role": msg.role.value,
        "content": msg.content,
        "status": msg.status.value,
        "created_at": msg.created_at,
        "updated_at": msg.updated_at,
        "meta": msg.meta,
    }


def insert_run(
    conn: Connection,
    run: RunRecord,
    conversation_pk: ConversationPk,
    msgs: Sequence[Msg],
    now: datetime,
) -> None:
    """The run record, pointing at the question (first, unless the record names it: a
    continued turn's question is stored already) and the answer (last)."""
    run.conversation_pk = conversation_pk
    run.user_message_id = run.user_message_id or msgs[0].id
    run.assistant_message_id = msgs[-1].id
    run.started_at = run.started_at or now
    conn.execute(_INSERT_RUN, run_values(run))
