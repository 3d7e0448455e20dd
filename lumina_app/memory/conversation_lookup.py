"""Finding a conversation by its public id, and the one visibility rule: a caller acting
for someone sees only that principal's own conversations. Every service that resolves a
conversation id is handed this (``MemoryReads.lookup``)."""

from __future__ import annotations

from lumina_app.domain import ConversationInfo, Principal
from lumina_app.domain.ids import ConversationUuid
from lumina_app.storage.sql.conversation_queries import ConversationQueries


class ConversationLookup:
    def __init__(self, queries: ConversationQueries) -> None:
        self.queries = queries

    async def get_conversation(
        self, conversation_uuid: str, *, owner: str | None = None, agent_id: str | None = None
    ) -> ConversationInfo:
        """A conversation by id; ``owner``/``agent_id`` narrow it (else not found). Callers
        acting for someone use :meth:`find_visible`; this unscoped form is for the run
        machinery and operator tools."""
        return await self.queries.get_conversation(
            conversation_uuid, owner=owner, agent_id=agent_id
        )

    async def find_visible(
        self,
        principal: Principal,
        conversation_uuid: ConversationUuid,
        *,
        agent_id: str | None = None,
    ) -> ConversationInfo:
        """The one visibility rule: the principal's own conversation (of that agent, if
        given). Someone else's or another agent's: ConversationNotFound. The id's shape was
        checked where it came in (``parse_conversation_uuid``)."""
        return await self.queries.get_conversation(
            conversation_uuid, owner=principal.owner, agent_id=agent_id
        )
