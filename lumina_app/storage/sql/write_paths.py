"""How the write path's transactions reach the database: one strategy per database, chosen
once (:func:`for_database`, called by the composition root), so the cold store never asks
which backend it is on. The rows and values are the same on every backend:

* :class:`TransactionWrites` — each transaction is one sync function of a ``Connection``
  (``writes``), run in one ``run_sync`` greenlet: MariaDB/MySQL, and any backend;
* :class:`InlineSQLiteWrites` — the same functions on SQLite's own pysqlite connection, on
  the event loop's thread, behind the write gate (``sqlite_inline``);
* :class:`PostgresWrites` — a turn's accept, a new conversation's first turn and the final
  write as one statement each (``writes_pg``), in autocommit on the write path's own
  psycopg connections (``pg_raw``); the rest as the first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lumina_app.domain import ConversationInfo, Msg, RunRecord
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql import writes, writes_pg
from lumina_app.storage.sql.database import SQLDatabase

T = TypeVar("T")


class TransactionWrites:
    """A transaction per call, through the async engine's ``run_sync``."""

    name = "transaction"

    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def transact(self, body: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """One transaction written as one sync function ``body(conn, *args)``."""
        async with self.db.begin() as conn:
            return await conn.run_sync(body, *args, **kwargs)

    async def start_conversation(
        self, conversation: ConversationInfo, msgs: Sequence[Msg], run: RunRecord | None
    ) -> None:
        """A new conversation with its first messages and the run answering them."""
        await self.transact(writes.start_conversation, conversation, msgs, run)

    async def accept(
        self,
        conversation_pk: ConversationPk,
        msgs: Sequence[Msg],
        bump: dict[str, Any],
        run: RunRecord | None,
    ) -> None:
        """``msgs`` with the next seqs, and the run pointing at them."""
        await self.transact(writes.append_messages, conversation_pk, msgs, bump, run)

    async def settle(
        self,
        values: dict[str, Any],
        *,
        only_streaming: bool,
        settle: dict[str, Any] | None,
        run: RunRecord | None,
    ) -> bool:
        """An answer's text (the final write also settles the conversation and the run)."""
        return await self.transact(
            writes.update_message, values, only_streaming=only_streaming, settle=settle, run=run
        )

    async def retitle(self, conversation_uuid: str, title: str, *, replacing: str) -> bool:
        """``title`` while the title is still ``replacing``: whether it was stored."""
        return await self.transact(writes.retitle, conversation_uuid, title, replacing)


class InlineSQLiteWrites(TransactionWrites):
    """SQLite: the same transactions inline on the event loop's thread (a WAL commit
    without fsync takes less than the hand-off to aiosqlite's worker thread)."""

    name = "sqlite-inline"

    async def transact(self, body: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await self.db.transact_inline(body, *args, **kwargs)


class PostgresWrites(TransactionWrites):
    """PostgreSQL: a turn's phases as one statement each (data-modifying CTEs) where the
    call has their shape; one round trip where a transaction of three statements made five."""

    name = "postgresql"

    async def start_conversation(
        self, conversation: ConversationInfo, msgs: Sequence[Msg], run: RunRecord | None
    ) -> None:
        if run is None or not msgs:
            return await super().start_conversation(conversation, msgs, run)
        await self.db.one_statement(writes_pg.start_conversation(conversation, msgs, run))

    async def accept(
        self,
        conversation_pk: ConversationPk,
        msgs: Sequence[Msg],
        bump: dict[str, Any],
        run: RunRecord | None,
    ) -> None:
        if run is None or not writes_pg.one_statement_accept(msgs, bump, run):
            return await super().accept(conversation_pk, msgs, bump, run)
        await self.db.one_statement(writes_pg.accept(conversation_pk, msgs, bump, run))

    async def settle(
        self,
        values: dict[str, Any],
        *,
        only_streaming: bool,
        settle: dict[str, Any] | None,
        run: RunRecord | None,
    ) -> bool:
        if (
            only_streaming
            and settle is not None
            and run is not None
            and writes_pg.one_statement_final(values, settle, run)
        ):
            return await self.db.one_statement(writes_pg.final_write(values, settle, run))
        return await super().settle(values, only_streaming=only_streaming, settle=settle, run=run)

    async def retitle(self, conversation_uuid: str, title: str, *, replacing: str) -> bool:
        """A proposed title as one compare-and-set statement on the write connections."""
        return await self.db.one_statement(writes_pg.retitle(conversation_uuid, title, replacing))


def for_database(db: SQLDatabase) -> TransactionWrites:
    """The write strategy for ``db``'s backend."""
    if db.is_sqlite:
        return InlineSQLiteWrites(db)
    if db.dialect == "postgresql":
        return PostgresWrites(db)
    return TransactionWrites(db)
