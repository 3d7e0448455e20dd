"""What a deleted conversation leaves of an ``acp`` agent: its process, working folder,
session record and stderr log — removed by the ``on_delete`` hook registered here by the
composition root, so an agent's state dies with its conversation."""

from __future__ import annotations

from lumina_app.agents.definitions.registry import AgentRegistry
from lumina_app.agents.providers.acp.pool import AcpPool
from lumina_app.domain import ConversationInfo


class AcpCleanup:
    def __init__(self, pool: AcpPool, registry: AgentRegistry) -> None:
        self.pool = pool
        self.registry = registry

    async def deleted(self, conversation: ConversationInfo) -> None:
        """``on_delete`` hook: the conversation's agent files go with it (an agent that is
        no longer an ``acp`` one has none Lumina could find)."""
        agent = self.registry.get(conversation.agent_id)
        if agent is None or agent.acp is None or agent.folder is None:
            return
        await self.pool.remove(
            agent.id, agent.folder, agent.acp, conversation.owner, conversation.uuid
        )
