"""What a person sees and corrects of what agents know about them (the Memory page and
``/api/v1/memories``): list, search, add, edit, pin, delete, forget everything. Every
method takes the calling ``Principal``: another owner's memory is a MemoryNotFound (404).

History (#42): ``edit(..., supersede=True)`` keeps the old text as history (a fact that
changed); a plain edit corrects in place (a typo). Deleting a current memory deletes its
history too; deleting an earlier version removes only that one."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from lumina_app.domain import InvalidInput, Principal
from lumina_app.domain.memories import Memory, MemoryStatus
from lumina_app.memory.long_term import LongTermMemory, memory_id
from lumina_app.services.agents import AgentService

MAX_QUERY_CHARS = 200


def statuses_of(raw: str | None) -> tuple[MemoryStatus, ...]:
    """``status=`` as a filter: one status, a comma list, or ``all``; default active."""
    if not raw:
        return (MemoryStatus.ACTIVE,)
    if raw == "all":
        return tuple(MemoryStatus)
    try:
        return tuple(dict.fromkeys(MemoryStatus(part.strip()) for part in raw.split(",")))
    except ValueError:
        known = ", ".join(s.value for s in MemoryStatus)
        raise InvalidInput(f"status must be one of {known} or all") from None


class MemoryService:
    def __init__(self, store: LongTermMemory, agents: AgentService) -> None:
        self.store = store
        self.agents = agents

    async def list(
        self,
        principal: Principal,
        *,
        agent_id: str | None = None,
        query: str | None = None,
        statuses: Collection[MemoryStatus] = (MemoryStatus.ACTIVE,),
        limit: int = 200,
    ) -> list[Memory]:
        """The caller's memories, pinned then newest first; with ``query``, the active ones
        most relevant to it, best first."""
        if agent_id is not None:
            self.agents.definition(agent_id)  # an unknown agent is a 404
        if query and query.strip():
            if len(query) > MAX_QUERY_CHARS:
                raise InvalidInput(f"q is limited to {MAX_QUERY_CHARS} characters")
            found = await self.store.search(principal.owner, query, agent_id=agent_id, limit=limit)
            return [m for m, _ in found]
        return await self.store.listing(
            principal.owner, agent_id=agent_id, statuses=statuses, limit=limit
        )

    async def create(
        self,
        principal: Principal,
        *,
        agent_id: str,
        text: str,
        pinned: bool = False,
        origin: str | None = None,
    ) -> tuple[Memory, bool]:
        """(the memory, whether it is new): the same fact already known is returned.
        ``origin`` says who added it ("added over MCP by <client>")."""
        self.agents.definition(agent_id)
        return await self.store.add(
            principal.owner, agent_id, text, scope_agent=agent_id, pinned=pinned, origin=origin
        )

    async def get(self, principal: Principal, raw_id: object) -> Memory:
        return await self.store.get(principal.owner, memory_id(raw_id))

    async def edit(
        self,
        principal: Principal,
        raw_id: object,
        *,
        text: str | None = None,
        pinned: bool | None = None,
        supersede: bool = False,
        by_agent: bool = False,
    ) -> Memory:
        """The memory as edited: in place, or with ``supersede`` (and a new ``text``) the new
        current memory replacing it, the old one kept as its history (then pinned as asked).
        ``by_agent``: an agent asks (an MCP client), not the person: a pinned memory or one
        they added by hand is a MemoryProtected (403, a tool error) and stays as it is."""
        memory = memory_id(raw_id)
        owner = principal.owner
        if supersede and text is not None:
            newer = await self.store.supersede(owner, memory, text, by_agent=by_agent)
            if pinned is None or newer.pinned == pinned:
                return newer
            return await self.store.edit(owner, newer.id, pinned=pinned)
        return await self.store.edit(owner, memory, text=text, pinned=pinned, by_agent=by_agent)

    async def history(self, principal: Principal, raw_id: object) -> list[Memory]:
        """The chain a memory belongs to, newest first (the current version, then each it
        replaced)."""
        return await self.store.history(principal.owner, memory_id(raw_id))

    async def earlier(
        self, principal: Principal, found: Sequence[Memory]
    ) -> dict[int, list[Memory]]:
        """For each of ``found`` (the caller's): the versions it replaced, newest first."""
        return await self.store.earlier(principal.owner, [m.id for m in found])

    async def delete(self, principal: Principal, raw_id: object, *, by_agent: bool = False) -> None:
        """Forget one memory (``by_agent``: as :meth:`edit`)."""
        await self.store.forget(principal.owner, memory_id(raw_id), by_agent=by_agent)

    async def forget_all(self, principal: Principal, *, agent_id: str | None = None) -> int:
        if agent_id is not None:
            self.agents.definition(agent_id)
        return await self.store.forget_all(principal.owner, agent_id=agent_id)

    async def used_by(self, principal: Principal, ids: Collection[int]) -> list[Memory]:
        """The caller's memories among ``ids`` (those an answer used), in that order."""
        return await self.store.by_ids(principal.owner, list(ids))
