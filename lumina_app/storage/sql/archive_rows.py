"""The cold-store side of the archive: read a conversation's final messages in one query,
and import an archived conversation with its messages in one transaction."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from lumina_app.domain import (
    ConversationInfo,
    ConversationStatus,
    ImportOutcome,
    InvalidInput,
    MessageStatus,
    Msg,
    MsgRole,
    Summary,
    utcnow,
)
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql import branches
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import files as F
from lumina_app.storage.sql.models import message_files as MF
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.models import summaries as S
from lumina_app.storage.sql.sqlite_inline import offloaded
from lumina_app.storage.sql.writes import TEMPORARY, message_row

_BATCH = 2000


async def final_messages(db: SQLDatabase, conversation_pk: ConversationPk) -> list[Msg]:
    """Every final message of a conversation's active branch in seq order (a
    ``streaming`` answer is left out until it ends): one indexed query."""
    query = (
        sa.select(M.c.seq, M.c.role, M.c.content, M.c.turn_id, M.c.status, M.c.created_at, M.c.meta)
        .where(
            M.c.conversation_id == conversation_pk,
            M.c.status != MessageStatus.STREAMING.value,
            branches.NOT_PARKED,  # the active branch (the others: ``parked_messages``)
        )
        .order_by(M.c.seq)
    )
    with offloaded():  # every message of the conversation: may be long, keep off the loop
        rows = await db.rows(query)
    return [
        Msg(
            role=MsgRole(r.role),
            content=r.content,
            seq=r.seq,
            turn_id=r.turn_id,
            status=MessageStatus(r.status),
            created_at=r.created_at,
            meta=r.meta or {},  # tool calls and results travel with their rows
        )
        for r in rows
    ]


async def import_conversation(
    db: SQLDatabase,
    conv: ConversationInfo,
    msgs: Sequence[Msg],
    summaries: Sequence[Summary] = (),
) -> tuple[ImportOutcome, int]:
    """Insert ``conv`` (matched by its uuid) and ``msgs`` in one transaction.

    A conversation already stored keeps its rows; archive messages past the ones it holds
    (matched by position, checked by role and turn id) are appended with the next seqs.
    Only the same owner's conversation, under the same agent and not running, is appended
    to; its ``updatedAt`` never goes back, and its status changes only along with it.
    Returns what happened and how many messages were added. A refusal raises
    ``InvalidInput`` and writes nothing. The archive's summaries that reach further than
    the stored ones are added (so importing again adds none).
    """
    try:
        with offloaded():  # bulk inserts: keep them off the event loop's thread
            async with db.begin() as conn:
                row = (
                    await conn.execute(
                        sa.select(
                            C.c.id,
                            C.c.agent_id,
                            C.c.owner,
                            C.c.status,
                            C.c.last_seq,
                            C.c.tool_call_count,
                            C.c.updated_at,
                        )
                        .where(C.c.uuid == conv.uuid)
                        .with_for_update()
                    )
                ).first()
                if row is None:
                    conversation_pk = await _insert_conversation(conn, conv, len(msgs))
                    await _insert_messages(conn, conversation_pk, msgs, first_seq=1)
                    await _link_files(conn, conversation_pk, conv.owner, msgs, first_seq=1)
                    await _insert_summaries(conn, conversation_pk, summaries)
                    return ImportOutcome.CREATED, len(msgs)
                _check_target(conv, row)
                stored = (
                    await conn.execute(
                        sa.select(M.c.role, M.c.turn_id)
                        .where(M.c.conversation_id == row.id)
                        .order_by(M.c.seq)
                    )
                ).all()
                _check_prefix(conv.uuid, stored, msgs)
                missing = msgs[len(stored) :]
                await _insert_summaries(conn, row.id, summaries)
                if not missing:
                    return ImportOutcome.UNCHANGED, 0
                if row.status == ConversationStatus.RUNNING.value:
                    raise InvalidInput(
                        f"conversation {conv.uuid!r} is running: import again once its run "
                        "has ended"
                    )
                newer = conv.updated_at > row.updated_at
                await conn.execute(
                    sa.update(C)
                    .where(C.c.id == row.id)
                    .values(
                        last_seq=C.c.last_seq + len(missing),
                        message_count=C.c.message_count + len(missing),
                        status=conv.status.value if newer else row.status,
                        tool_call_count=max(row.tool_call_count, conv.tool_call_count),
                        updated_at=conv.updated_at if newer else row.updated_at,
                    )
                )
                await _insert_messages(conn, row.id, missing, first_seq=row.last_seq + 1)
                await _link_files(conn, row.id, conv.owner, missing, first_seq=row.last_seq + 1)
                return ImportOutcome.APPENDED, len(missing)
    except IntegrityError as exc:  # another importer inserted the same uuid meanwhile
        raise InvalidInput(f"conversation {conv.uuid!r} could not be imported: {exc.orig}") from exc
    except DataError as exc:  # a value the column cannot hold, past the reader's checks
        reason = str(exc.orig).splitlines()[0]
        raise InvalidInput(
            f"conversation {conv.uuid!r}: the database refused a value: {reason}"
        ) from exc


async def _insert_summaries(
    conn: AsyncConnection, conversation_pk: ConversationPk, summaries: Sequence[Summary]
) -> None:
    """Those reaching further than the newest stored one, in order."""
    reach = await conn.scalar(
        sa.select(sa.func.max(S.c.covered_to_seq)).where(S.c.conversation_id == conversation_pk)
    )
    rows = [
        {
            "conversation_id": conversation_pk,
            "covered_to_seq": s.covered_to_seq,
            "text": s.text,
            "model": s.model,
            "created_at": s.created_at or utcnow(),
        }
        for s in summaries
        if s.covered_to_seq > (reach or 0)
    ]
    if rows:
        await conn.execute(sa.insert(S), rows)


def _check_target(conv: ConversationInfo, row: sa.Row) -> None:
    """An existing conversation is appended to only by its own owner, under its agent."""
    if row.owner != conv.owner:
        raise InvalidInput(
            f"conversation {conv.uuid!r} already exists and belongs to another owner "
            f"(this import is for owner {conv.owner!r}): refused, nothing changed"
        )
    if row.agent_id != conv.agent_id:
        raise InvalidInput(
            f"conversation {conv.uuid!r} already exists under agent {row.agent_id!r}"
        )


def _check_prefix(uuid: str, stored: Sequence[sa.Row], msgs: Sequence[Msg]) -> None:
    for position, (row, msg) in enumerate(zip(stored, msgs, strict=False)):
        if row.role != msg.role.value or row.turn_id != msg.turn_id:
            raise InvalidInput(
                f"conversation {uuid!r} already exists and differs at message {position + 1}: "
                f"stored {row.role}/{row.turn_id}, archive {msg.role.value}/{msg.turn_id}"
            )


async def _insert_conversation(conn: AsyncConnection, conv: ConversationInfo, count: int) -> int:
    result = await conn.execute(
        sa.insert(C).values(
            uuid=conv.uuid,
            agent_id=conv.agent_id,
            title=conv.title[:255],
            status=conv.status.value,
            message_count=count,
            tool_call_count=conv.tool_call_count,
            last_seq=count,
            owner=conv.owner,
            created_at=conv.created_at,
            updated_at=conv.updated_at,
            parent_uuid=conv.parent_uuid,
            forked_at_seq=conv.forked_at_seq,
            **({"meta": {TEMPORARY: True}} if conv.temporary else {}),
        )
    )
    return result.inserted_primary_key[0]


async def _link_files(
    conn: AsyncConnection,
    conversation_pk: ConversationPk,
    owner: str,
    msgs: Sequence[Msg],
    *,
    first_seq: int,
) -> None:
    """The ``lumina_message_file`` rows of the messages whose ``meta["files"]`` name
    files (the owner's, uploaded by the import just before): in the same transaction."""
    wanted = {
        (first_seq + offset, position): d["id"]
        for offset, msg in enumerate(msgs)
        for position, d in enumerate(msg.meta.get("files") or ())
    }
    if not wanted:
        return
    found = dict(
        (
            await conn.execute(
                sa.select(F.c.file_id, F.c.id).where(
                    F.c.owner == owner, F.c.file_id.in_(set(wanted.values()))
                )
            )
        ).all()
    )
    rows = [
        {"conversation_id": conversation_pk, "seq": seq, "file_pk": found[file_id],
         "position": position}
        for (seq, position), file_id in wanted.items()
        if file_id in found
    ]  # fmt: skip
    if rows:
        await conn.execute(sa.insert(MF), rows)


async def _insert_messages(
    conn: AsyncConnection,
    conversation_pk: ConversationPk,
    msgs: Sequence[Msg],
    *,
    first_seq: int,
) -> None:
    """The rows in batches of ``_BATCH`` (one executemany each, seqs consecutive from
    ``first_seq``), so a big archive never has every row's parameters built at once."""
    for start in range(0, len(msgs), _BATCH):
        rows = [
            message_row(conversation_pk, msg)
            | {"seq": first_seq + start + offset, "updated_at": msg.updated_at or msg.created_at}
            for offset, msg in enumerate(msgs[start : start + _BATCH])
        ]
        await conn.execute(sa.insert(M), rows)
