"""What full-text search reads (``services/search.py``): an owner's final messages
matching every word, through the full-text index (``storage/sql/search.py``'s
``search_messages``), and the messages whose files' text holds them
(``storage/sql/file_search.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from lumina_app.domain import ConversationInfo
from lumina_app.domain.search import FileTextMatch, MessageHit
from lumina_app.storage.sql import file_search, search
from lumina_app.storage.sql.database import SQLDatabase


class SearchReads:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def search(
        self,
        words: Sequence[str],
        *,
        owner: str,
        conversation: ConversationInfo | None = None,
        agent_id: str | None = None,
        limit: int = 20,
    ) -> tuple[list[MessageHit], list[FileTextMatch]]:
        """(Most relevant first; messages carrying a file whose text contains every word,
        newest first), in one conversation, or in the owner's (of one agent)."""
        pk = conversation.id if conversation else None
        return await search.search_messages(
            self.db,
            words,
            owner=owner,
            conversation_pk=pk,
            agent_id=agent_id,
            limit=limit,
            files=file_search.reader(words, owner, True, pk, agent_id, limit),
        )
