"""What the archive reads and stores of the cold store (``archive/service.py``): the
conversations to export, each one's final messages and summaries, and an archived
conversation stored back. The queries are ``storage/sql/archive_rows.py``."""

from __future__ import annotations

from collections.abc import Sequence

from lumina_app.domain import ConversationInfo, ImportOutcome, Msg, Summary
from lumina_app.storage.sql import archive_rows, summaries
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase


class ArchiveRows:
    def __init__(self, queries: ConversationQueries, db: SQLDatabase) -> None:
        self.queries = queries
        self.db = db

    async def list_conversations(
        self, *, agent_id: str | None = None, limit: int = 500, cursor: str | None = None
    ) -> tuple[list[ConversationInfo], str | None]:
        """Every owner's conversations (of one agent), a page at a time."""
        return await self.queries.list_conversations(agent_id=agent_id, limit=limit, cursor=cursor)

    async def final_messages(self, conversation: ConversationInfo) -> list[Msg]:
        """Every final message in seq order: one query, from SQL."""
        return await archive_rows.final_messages(self.db, conversation.id)

    async def parked_messages(self, conversation: ConversationInfo) -> list[Msg]:
        """The rows of the branches not shown (edited questions), in seq order."""
        return await self.queries.parked_messages(conversation.id)

    async def summaries_of(self, conversation: ConversationInfo) -> list[Summary]:
        """Every summary, oldest first."""
        return await summaries.all_of(self.db, conversation.id)

    async def import_conversation(
        self,
        conversation: ConversationInfo,
        msgs: Sequence[Msg],
        summaries: Sequence[Summary] = (),
    ) -> tuple[ImportOutcome, int]:
        """Store an archived conversation (one transaction). A hot window it had falls
        behind ``last_seq`` and is rebuilt by the next read."""
        return await archive_rows.import_conversation(self.db, conversation, msgs, summaries)
