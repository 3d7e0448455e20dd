"""What inspecting an ended run reads (``services/runs.py``, ``services/responses.py``):
its rows and its conversation's uuid by the ids its record keeps, the summary its context
used, the rows of its tool steps."""

from __future__ import annotations

from collections.abc import Sequence

from lumina_app.domain import Msg, Summary
from lumina_app.domain.ids import ConversationPk
from lumina_app.storage.sql import summaries
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase


class RunInspection:
    def __init__(self, queries: ConversationQueries, db: SQLDatabase) -> None:
        self.queries = queries
        self.db = db

    async def get_message(self, message_id: int) -> Msg | None:
        return await self.queries.get_message(message_id)

    async def messages_by_id(
        self, conversation_pk: ConversationPk, ids: Sequence[int]
    ) -> list[Msg]:
        """Stored messages of one conversation by id, in seq order."""
        return await self.queries.messages_by_id(conversation_pk, ids)

    async def conversation_uuid(self, conversation_pk: ConversationPk) -> str | None:
        return await self.queries.conversation_uuid(conversation_pk)

    async def summary_of(self, summary_id: int) -> Summary | None:
        return await summaries.get(self.db, summary_id)

    async def turn_rows(
        self, conversation_pk: ConversationPk, after_seq: int, before_seq: int
    ) -> list[Msg]:
        """Every stored row strictly between two seqs, in order (a run's tool steps)."""
        rows = await self.queries.page_messages(
            conversation_pk,
            after_seq=after_seq,
            limit=max(0, before_seq - after_seq - 1),
            parked=True,
        )
        return [m for m in rows if m.seq < before_seq]
