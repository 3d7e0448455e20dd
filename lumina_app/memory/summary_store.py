"""What the summary keeper reads (``agents/after_run/summaries.py``): the final messages that left
the window since the last summary. A summary is written through ``MemoryManager`` (SQL,
then the copy beside the hot window)."""

from __future__ import annotations

from lumina_app.domain import ConversationInfo, MessageStatus, Msg
from lumina_app.storage.sql.conversation_queries import ConversationQueries


class SummaryStore:
    def __init__(self, queries: ConversationQueries) -> None:
        self.queries = queries

    async def unsummarized(
        self, conversation: ConversationInfo, *, after_seq: int, before_seq: int
    ) -> list[Msg]:
        """Final messages with ``after_seq < seq < before_seq``: what left the window
        since the last summary. Superseded answers are never summarized."""
        if before_seq - after_seq <= 1:
            return []
        msgs = await self.queries.page_messages(
            conversation.id, limit=before_seq - after_seq - 1, after_seq=after_seq
        )
        return [
            m
            for m in msgs
            if m.seq < before_seq and m.status.is_final and m.status is not MessageStatus.SUPERSEDED
        ]
