"""The built-in ``recall`` tool: the model searches its own conversation's whole history.

The window holds the last N messages and the summary only their gist; ``recall`` lets the
model look up the exact words said earlier, through the same full-text index as the search
routes. An agent gets it with ``"memory": {"recall": true}``.

All the query's words must match; if none does and the query has several, the tool falls
back to the messages matching most of its longest words, because a model's query is often a
phrase ("the user's favourite colour") whose every word is unlikely to appear together. The
current turn is left out: its own question would always be the best hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lumina_app.agents.tools.spec import Tool, ToolContext, ToolError, ToolOutput, ToolSpec
from lumina_app.domain import ConversationInfo
from lumina_app.domain.search import MessageHit, terms
from lumina_app.memory import MemoryManager

NAME = "recall"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 200
# How much of each message the model reads back, and how many words the fallback tries.
HIT_CHARS = 600
FALLBACK_WORDS = 4

SPEC = ToolSpec(
    NAME,
    "Searches everything said earlier in this conversation, including messages that are no "
    "longer in your context, and returns the matching messages word for word (oldest first, "
    "with their position and time). Use it when the user refers to something said before "
    "that you cannot see.",
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "the words to look for, e.g. 'favourite colour' or 'invoice 1234'",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"how many messages at most (default {DEFAULT_LIMIT})",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)


class Recall:
    """Makes the ``recall`` tool over one memory manager."""

    def __init__(self, memory: MemoryManager) -> None:
        self.memory = memory

    def tool(self) -> Tool:
        return Tool(SPEC, self._invoke)

    async def _invoke(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = str(args["query"])
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"the query is limited to {MAX_QUERY_CHARS} characters")
        words = terms(query)
        if not words:
            raise ToolError("the query has no words to search for")
        limit = int(args.get("limit") or DEFAULT_LIMIT)
        hits = await self.search(ctx, words, limit)
        if not hits:
            return ToolOutput(f"Nothing earlier in this conversation matches {query!r}.")
        return ToolOutput(render(hits))

    async def search(self, ctx: ToolContext, words: Sequence[str], limit: int) -> list[MessageHit]:
        """The best ``limit`` earlier messages for ``words``: all of them, else most."""
        conversation = await self.memory.get_conversation(ctx.conversation_id, owner=ctx.owner)
        found = await self._search(conversation, ctx, words, limit)
        if found or len(words) == 1:
            return found
        longest = sorted(words, key=len, reverse=True)[:FALLBACK_WORDS]
        matched: dict[int, tuple[int, float, MessageHit]] = {}
        for word in longest:
            for hit in await self._search(conversation, ctx, [word], limit):
                count, score, _ = matched.get(hit.message_id, (0, 0.0, hit))
                matched[hit.message_id] = (count + 1, score + hit.score, hit)
        ranked = sorted(matched.values(), key=lambda m: (m[0], m[1]), reverse=True)
        return [hit for _count, _score, hit in ranked[:limit]]

    async def _search(
        self, conversation: ConversationInfo, ctx: ToolContext, words: Sequence[str], limit: int
    ) -> list[MessageHit]:
        # A few more than asked for: the current turn's own rows are dropped after.
        hits = await self.memory.search(
            words, owner=ctx.owner, conversation=conversation, limit=limit + 4
        )
        earlier = [h for h in hits if ctx.turn_seq is None or h.seq < ctx.turn_seq]
        return earlier[:limit]


def render(hits: Sequence[MessageHit]) -> str:
    """Hits as the model reads them: oldest first, each with its seq, role and time."""
    lines = []
    for hit in sorted(hits, key=lambda h: h.seq):
        text = " ".join(hit.content.split())
        if len(text) > HIT_CHARS:
            text = text[:HIT_CHARS] + "…"
        when = hit.created_at.strftime("%Y-%m-%d %H:%M")
        lines.append(f"[#{hit.seq} {hit.role.chat_role} {when}] {text}")
    return "\n".join(lines)
