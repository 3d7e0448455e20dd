"""Ranked recall for the routes: one conversation's, or across a caller's conversations,
the most relevant messages first (the ``recall`` tool and auto-recall use the same path)."""

from __future__ import annotations

from lumina_app.domain import InvalidInput, Principal
from lumina_app.domain.ids import parse_conversation_uuid
from lumina_app.domain.search import MAX_RECALL_CHARS
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.recall import text
from lumina_app.recall.retriever import Recalled, Retriever
from lumina_app.services.search import SearchHit, snippet


class RecallService:
    def __init__(self, lookup: ConversationLookup, retriever: Retriever) -> None:
        self.lookup = lookup
        self.retriever = retriever

    async def in_conversation(
        self, principal: Principal, conversation_uuid: str, query: str, *, limit: int = 10
    ) -> list[SearchHit]:
        conversation = await self.lookup.find_visible(
            principal, parse_conversation_uuid(conversation_uuid)
        )
        if not _has_words(query):
            return []
        found = await self.retriever.in_conversation(conversation.id, query, limit=limit)
        return [_hit(conversation.uuid, conversation.title, r, query) for r in found]

    async def everywhere(
        self, principal: Principal, query: str, *, agent_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        if not _has_words(query):
            return []
        found = await self.retriever.across(principal.owner, query, agent_id=agent_id, limit=limit)
        return [_hit(uuid, title, r, query) for uuid, title, r in found]


def _has_words(query: str) -> bool:
    if len(query) > MAX_RECALL_CHARS:
        raise InvalidInput(f"recall text is limited to {MAX_RECALL_CHARS} characters")
    return bool(text.words(query))


def _hit(uuid: str, title: str, found: Recalled, query: str) -> SearchHit:
    return SearchHit(
        conversation_uuid=uuid,
        title=title,
        seq=found.seq,
        role=found.role.value,
        snippet=snippet(found.content, text.keywords(query)),
        score=found.score,
        created_at=found.created_at,
    )
