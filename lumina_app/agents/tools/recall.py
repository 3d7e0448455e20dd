"""The built-in ``recall`` tool: the model searches its own conversation's whole history.

The window holds the last N messages and the summary only their gist; ``recall`` lets the
model look up what was said earlier, ranked by relevance through the same retrieval path as
the recall routes and auto-recall (lumina_app/recall): not every word has to match. An
agent gets it with ``"memory": {"recall": true}``. The current turn is left out: its own
question would always be the best hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lumina_app.agents.tools.spec import Tool, ToolContext, ToolError, ToolOutput, ToolSpec
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.recall import text
from lumina_app.recall.retriever import Recalled, Retriever

NAME = "recall"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 200
HIT_CHARS = 600  # how much of each message the model reads back

SPEC = ToolSpec(
    NAME,
    "Searches everything said earlier in this conversation, including messages that are no "
    "longer in your context, and returns the most relevant messages word for word (shown "
    "oldest first, with their position and time). Use it when the user refers to something "
    "said before that you cannot see.",
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
    """Makes the ``recall`` tool over the conversation lookup and the retriever."""

    def __init__(self, lookup: ConversationLookup, retriever: Retriever) -> None:
        self.lookup = lookup
        self.retriever = retriever

    def tool(self) -> Tool:
        return Tool(SPEC, self._invoke)

    async def _invoke(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = str(args["query"])
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"the query is limited to {MAX_QUERY_CHARS} characters")
        if not text.words(query):
            raise ToolError("the query has no words to search for")
        limit = int(args.get("limit") or DEFAULT_LIMIT)
        hits = await self.search(ctx, query, limit)
        if not hits:
            return ToolOutput(f"Nothing earlier in this conversation matches {query!r}.")
        return ToolOutput(render(hits))

    async def search(self, ctx: ToolContext, query: str, limit: int) -> list[Recalled]:
        """The ``limit`` earlier messages most relevant to ``query``."""
        conversation = await self.lookup.get_conversation(ctx.conversation_uuid, owner=ctx.owner)
        return await self.retriever.in_conversation(
            conversation.id, query, limit=limit, before_seq=ctx.turn_seq
        )


def render(hits: Sequence[Recalled]) -> str:
    """Hits as the model reads them: oldest first, each with its seq, role and time."""
    lines = []
    for hit in sorted(hits, key=lambda h: h.seq):
        text_ = " ".join(hit.content.split())
        if len(text_) > HIT_CHARS:
            text_ = text_[:HIT_CHARS] + "…"
        when = hit.created_at.strftime("%Y-%m-%d %H:%M")
        lines.append(f"[#{hit.seq} {hit.role.chat_role} {when}] {text_}")
    return "\n".join(lines)
