"""The built-in ``recall`` tool: the model searches what was said earlier, in this
conversation or in all of the person's conversations with this agent.

The window holds the last N messages and the summary only their gist; ``recall`` lets the
model look up what was said earlier, ranked by relevance through the same retrieval path as
the recall routes and auto-recall (lumina_app/recall): not every word has to match. An
agent gets it with ``"memory": {"recall": true}``. ``scope`` ``"all"`` searches the
caller's conversations with this agent (owner-scoped like ``GET /api/v1/recall?agentId=``),
each hit named with its conversation. The current turn is left out: its own question would
always be the best hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lumina_app.agents.tools.auto_recall import quoted_title
from lumina_app.agents.tools.spec import Tool, ToolContext, ToolError, ToolOutput, ToolSpec
from lumina_app.domain.search import MAX_RECALL_CHARS
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.recall import text
from lumina_app.recall.retriever import Recalled, Retriever

NAME = "recall"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
HIT_CHARS = 600  # how much of each message the model reads back
THIS, ALL = "conversation", "all"
# Across conversations the current turn's rows are dropped after ranking: ask for a few more.
TURN_ROWS = 4

SPEC = ToolSpec(
    NAME,
    "Searches everything said earlier in this conversation (or, with scope 'all', in all "
    "of the user's conversations with you), including messages that are no longer in your "
    "context, and returns the most relevant messages word for word (shown oldest first, "
    "with their position and time, and for scope 'all' the conversation each is from). "
    "Use it when the user refers to something said before that you cannot see.",
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "the words or question to look for, e.g. 'favourite colour' "
                f"or 'invoice 1234' (at most {MAX_RECALL_CHARS} characters)",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "description": f"how many messages at most (default {DEFAULT_LIMIT})",
            },
            "scope": {
                "type": "string",
                "enum": [THIS, ALL],
                "description": f"'{THIS}' (default): this conversation; '{ALL}': all of "
                "the user's conversations with you",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class Found:
    """A recalled message and the conversation it was said in."""

    message: Recalled
    conversation_uuid: str
    title: str


class Recall:
    """Makes the ``recall`` tool over the conversation lookup and the retriever."""

    def __init__(self, lookup: ConversationLookup, retriever: Retriever) -> None:
        self.lookup = lookup
        self.retriever = retriever

    def tool(self) -> Tool:
        return Tool(SPEC, self._invoke)

    async def _invoke(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = str(args["query"])
        if len(query) > MAX_RECALL_CHARS:
            raise ToolError(
                f"the query is limited to {MAX_RECALL_CHARS} characters (it has {len(query)})"
            )
        if not text.words(query):
            raise ToolError("the query has no words to search for")
        limit = int(args.get("limit") or DEFAULT_LIMIT)
        if args.get("scope", THIS) == ALL:
            found = await self.search_all(ctx, query, limit)
            if not found:
                return ToolOutput(f"Nothing in your conversations with me matches {query!r}.")
            return ToolOutput(render_all(found, ctx.conversation_uuid))
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

    async def search_all(self, ctx: ToolContext, query: str, limit: int) -> list[Found]:
        """The ``limit`` messages most relevant to ``query`` in the owner's conversations
        with this agent, this conversation's current turn left out. A temporary
        conversation reads no memory of the others."""
        conversation = await self.lookup.get_conversation(ctx.conversation_uuid, owner=ctx.owner)
        if conversation.temporary:
            raise ToolError(
                "this is a temporary conversation: it does not look into other conversations"
            )
        found = await self.retriever.across(
            ctx.owner, query, agent_id=ctx.agent_id, limit=limit + TURN_ROWS
        )
        kept = [
            Found(hit, uuid, title)
            for uuid, title, hit in found
            if uuid != ctx.conversation_uuid or ctx.turn_seq is None or hit.seq < ctx.turn_seq
        ]
        return kept[:limit]


def render(hits: Sequence[Recalled]) -> str:
    """Hits as the model reads them: oldest first, each with its seq, role and time."""
    return "\n".join(_line(hit) for hit in sorted(hits, key=lambda h: h.seq))


def render_all(found: Sequence[Found], current: str) -> str:
    """Hits grouped by conversation (each named: title, id, first date), the conversations
    oldest first and this one last; within one, oldest first."""
    groups: dict[str, list[Found]] = {}
    for hit in found:
        groups.setdefault(hit.conversation_uuid, []).append(hit)
    order = sorted(
        groups,
        key=lambda uuid: (uuid == current, min(h.message.created_at for h in groups[uuid])),
    )
    lines = []
    for uuid in order:
        hits = sorted(groups[uuid], key=lambda h: h.message.seq)
        if uuid == current:
            lines.append("In this conversation:")
        else:
            day = hits[0].message.created_at.strftime("%Y-%m-%d")
            lines.append(f"In the conversation {quoted_title(hits[0].title)} ({day}, id {uuid}):")
        lines += [_line(h.message) for h in hits]
    return "\n".join(lines)


def _line(hit: Recalled) -> str:
    text_ = " ".join(hit.content.split())
    if len(text_) > HIT_CHARS:
        text_ = text_[:HIT_CHARS] + "…"
    when = hit.created_at.strftime("%Y-%m-%d %H:%M")
    return f"[#{hit.seq} {hit.role.chat_role} {when}] {text_}"
