"""Retention: conversations untouched for longer than their agent's ``retentionDays`` (or
else LUMINA_RETENTION_DAYS) are deleted with every part, by ``python -m lumina_app sweep``
and by the server's hourly sweep. 0 or unset keeps them forever (the default); an agent
whose config.json is broken keeps its conversations until it is fixed. Lumina has no
pinned conversations yet, so nothing is exempt."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from datetime import datetime, timedelta

from lumina_app.agents.definitions.registry import AgentRegistry, is_valid_agent_id
from lumina_app.domain import utcnow
from lumina_app.memory.conversation_reads import ConversationReads
from lumina_app.services.purge import ConversationPurge

log = logging.getLogger(__name__)


@dataclass(eq=False, repr=False)
class Retention:
    purge: ConversationPurge
    reads: ConversationReads
    registry: AgentRegistry
    _: KW_ONLY
    default_days: int
    clock: Callable[[], datetime] = utcnow

    def days(self, agent_id: str) -> int:
        """The agent's own ``retentionDays`` if it sets one, else the server's (0: forever)."""
        agent = self.registry.get(agent_id) if is_valid_agent_id(agent_id) else None
        if agent is None:  # a removed agent's conversations: the server's setting
            return self.default_days
        if agent.error is not None:  # a broken config.json may mean to keep longer: keep
            return 0
        return agent.retention_days if agent.retention_days is not None else self.default_days

    async def sweep(self) -> int:
        """Delete what is past its time; how many conversations went."""
        deleted = 0
        now = self.clock()
        for agent_id in await self.reads.agent_ids():
            days = self.days(agent_id)
            if days <= 0:
                continue
            purged = await self.purge.drain(
                agent_id=agent_id, updated_before=now - timedelta(days=days)
            )
            if purged.conversations:
                log.info(
                    "retention: %d conversation(s) of %s older than %d day(s) deleted",
                    purged.conversations,
                    agent_id,
                    days,
                )
            deleted += purged.conversations
        return deleted
