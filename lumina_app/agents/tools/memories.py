"""The built-in memory tools of an agent with ``"memory": {"longTerm": ...}``: the model
keeps what it knows about the person with ``remember``, ``update_memory`` and ``forget``,
and looks it up with ``memories`` (current facts only). ``update_memory`` keeps the old
fact as history (#42): it is closed and a new current memory holds the new text. Every
call is the calling owner's: another owner's memory id (or another agent's, for an
agent-scoped memory) is "not found". A pinned memory, or one the person added by hand, is
theirs alone (#43): ``update_memory`` and ``forget`` answer that only they can change it,
and leave it as it is; past the owner's memory limit ``remember`` says so."""

from __future__ import annotations

from functools import partial
from typing import Any

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.tools.spec import Tool, ToolContext, ToolError, ToolOutput, ToolSpec
from lumina_app.domain import InvalidInput, QuotaExceeded
from lumina_app.domain.memories import MAX_MEMORY_CHARS, Memory, MemoryNotFound
from lumina_app.memory.long_term import LongTermMemory, memory_id
from lumina_app.memory.memory_rules import MemoryProtected

REMEMBER, FORGET, UPDATE, SEARCH = "remember", "forget", "update_memory", "memories"
_TEXT = {
    "type": "string",
    "maxLength": MAX_MEMORY_CHARS,
    "description": "one short fact about the user, e.g. 'The user lives in Lyon.'",
}
_ID = {"type": "integer", "minimum": 1, "description": "the memory's id (from `memories`)"}


def _spec(name: str, description: str, properties: dict[str, Any]) -> ToolSpec:
    return ToolSpec(
        name,
        description,
        {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        },
    )


SPECS = {
    REMEMBER: _spec(
        REMEMBER,
        "Keeps a durable fact about the user for later conversations "
        "(their name, where they live, what they work on, a preference).",
        {"text": _TEXT},
    ),
    FORGET: _spec(
        FORGET, "Forgets one memory about the user (it is never used again).", {"id": _ID}
    ),
    UPDATE: _spec(
        UPDATE,
        "Replaces one memory about the user with a newer statement of the same fact "
        "(the old one is kept as its history); returns the new memory's id.",
        {"id": _ID, "text": _TEXT},
    ),
    SEARCH: _spec(
        SEARCH,
        "Searches what you remember about the user; returns the most "
        "relevant memories with their ids.",
        {
            "query": {
                "type": "string",
                "maxLength": 200,
                "description": "what to look for, e.g. 'name' or 'job'",
            }
        },
    ),
}


def scope_of(agent: AgentDefinition) -> str | None:
    """Whose memories an agent reads: its own (its id), or all its owner's (None)."""
    config = agent.memory.long_term
    return None if config is not None and config.scope == "owner" else agent.id


class MemoryTools:
    """Makes the four tools of an agent over the long-term store."""

    def __init__(self, store: LongTermMemory) -> None:
        self.store = store

    def tools(self, agent: AgentDefinition) -> list[Tool]:
        calls = {
            REMEMBER: self._remember,
            FORGET: self._forget,
            UPDATE: self._update,
            SEARCH: self._search,
        }
        return [Tool(SPECS[name], partial(fn, scope_of(agent))) for name, fn in calls.items()]

    async def _visible(self, scope: str | None, ctx: ToolContext, raw: object) -> Memory:
        try:
            memory = await self.store.get(ctx.owner, memory_id(raw))
        except MemoryNotFound:
            memory = None
        if memory is None or (scope is not None and memory.agent_id != scope):
            raise ToolError(f"no memory with id {raw!r}")
        return memory

    async def _remember(self, scope: str | None, args: dict, ctx: ToolContext) -> ToolOutput:
        try:
            memory, new = await self.store.add(
                ctx.owner,
                ctx.agent_id,
                args["text"],
                scope_agent=scope,
                conversation_uuid=ctx.conversation_uuid,
                seq=ctx.turn_seq,
            )
        except (InvalidInput, QuotaExceeded) as exc:
            raise ToolError(str(exc)) from None
        said = "Remembered" if new else "Already known"
        return ToolOutput(f"{said} (memory #{memory.id}): {memory.text}")

    async def _forget(self, scope: str | None, args: dict, ctx: ToolContext) -> ToolOutput:
        memory = await self._visible(scope, ctx, args["id"])
        try:
            await self.store.forget(ctx.owner, memory.id, by_agent=True)
        except MemoryProtected as exc:
            raise ToolError(str(exc)) from None
        return ToolOutput(f"Forgot memory #{memory.id}.")

    async def _update(self, scope: str | None, args: dict, ctx: ToolContext) -> ToolOutput:
        memory = await self._visible(scope, ctx, args["id"])
        try:
            newer = await self.store.supersede(
                ctx.owner,
                memory.id,
                args["text"],
                agent_id=ctx.agent_id,
                conversation_uuid=ctx.conversation_uuid,
                seq=ctx.turn_seq,
                by_agent=True,
            )
        except (InvalidInput, QuotaExceeded, MemoryProtected) as exc:
            raise ToolError(str(exc)) from None
        if newer.id == memory.id:
            return ToolOutput(f"Already known (memory #{memory.id}): {memory.text}")
        return ToolOutput(
            f"Updated: memory #{newer.id} replaces #{memory.id} (kept as history): {newer.text}"
        )

    async def _search(self, scope: str | None, args: dict, ctx: ToolContext) -> ToolOutput:
        query = str(args["query"])
        found = await self.store.search(ctx.owner, query, agent_id=scope, limit=10)
        if not found:
            known = await self.store.listing(ctx.owner, agent_id=scope, limit=10)
            if not known:
                return ToolOutput("You remember nothing about the user yet.")
            found = [(m, 0.0) for m in known]
        return ToolOutput("\n".join(f"[#{m.id}] {m.text}" for m, _ in found))
