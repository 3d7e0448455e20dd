"""Ranked recall for the routes: one conversation's, or across a caller's conversations,
the most relevant messages first (the ``recall`` tool and auto-recall use the same path),
with the messages whose files' passages answer the question among them (such a hit names
the file; docs/FILES.md)."""

from __future__ import annotations

from collections.abc import Sequence

from lumina_app.domain import InvalidInput, Principal
from lumina_app.domain.ids import parse_conversation_uuid
from lumina_app.domain.search import MAX_RECALL_CHARS
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.recall import text
from lumina_app.recall.file_passages import FilePassages, Passage
from lumina_app.recall.ranking import reciprocal_ranks
from lumina_app.recall.retriever import Recalled, Retriever
from lumina_app.services.search import FileRef, SearchHit, snippet


class RecallService:
    def __init__(
        self, lookup: ConversationLookup, retriever: Retriever, passages: FilePassages
    ) -> None:
        self.lookup = lookup
        self.retriever = retriever
        self.passages = passages

    async def in_conversation(
        self, principal: Principal, conversation_uuid: str, query: str, *, limit: int = 10
    ) -> list[SearchHit]:
        conversation = await self.lookup.find_visible(
            principal, parse_conversation_uuid(conversation_uuid)
        )
        if not _has_words(query):
            return []
        found = await self.retriever.in_conversation(conversation.id, query, limit=limit)
        hits = [_hit(conversation.uuid, conversation.title, r, query) for r in found]
        passages = await self.passages.ranked(
            query, owner=principal.owner, conversation_pk=conversation.id, limit=limit
        )
        return fused(hits, [_passage_hit(p, query) for p in passages], limit)

    async def everywhere(
        self, principal: Principal, query: str, *, agent_id: str | None = None, limit: int = 10
    ) -> list[SearchHit]:
        if not _has_words(query):
            return []
        found = await self.retriever.across(principal.owner, query, agent_id=agent_id, limit=limit)
        hits = [_hit(uuid, title, r, query) for uuid, title, r in found]
        passages = await self.passages.ranked(
            query, owner=principal.owner, agent_id=agent_id, limit=limit
        )
        return fused(hits, [_passage_hit(p, query) for p in passages], limit)


def fused(
    messages: Sequence[SearchHit], passages: Sequence[SearchHit], limit: int
) -> list[SearchHit]:
    """Both rankings by reciprocal rank (a file's best passage and a message at the same
    rank alternate, the message first); a message found both ways once, as a message.
    Without passages, the messages' ranking as it is."""
    if not passages:
        return list(messages[:limit])
    shares = reciprocal_ranks(len(messages), 1.0), reciprocal_ranks(len(passages), 1.0)
    ranked = [(shares[0][r], 0, r, h) for r, h in enumerate(messages)]
    ranked += [(shares[1][r], 1, r, h) for r, h in enumerate(passages)]
    ranked.sort(key=lambda x: (-x[0], x[1], x[2]))
    out, seen = [], set()
    for *_, hit in ranked:
        key = (hit.conversation_uuid, hit.seq)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out[:limit]


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


def _passage_hit(passage: Passage, query: str) -> SearchHit:
    match = passage.match
    return SearchHit(
        conversation_uuid=match.conversation_uuid,
        title=match.conversation_title,
        seq=match.seq,
        role=match.role.value,
        snippet=snippet(passage.text, text.keywords(query)),
        score=passage.score,
        created_at=match.created_at,
        file=FileRef(match.file_id, match.file_name),
    )
