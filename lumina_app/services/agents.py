"""The agents callers may use: the registry's folders, with the global LLM defaults
filled in where an agent names none."""

from __future__ import annotations

from dataclasses import dataclass

from lumina_app.agents.registry import AgentDefinition, AgentRegistry, is_valid_agent_id
from lumina_app.domain import AgentNotFound
from lumina_app.settings import Settings


@dataclass(frozen=True, slots=True)
class AgentView:
    id: str
    name: str
    description: str
    available: bool
    error: str | None
    provider: str
    model: str | None


class AgentService:
    def __init__(self, registry: AgentRegistry, settings: Settings) -> None:
        self.registry = registry
        self.settings = settings

    def list(self) -> list[AgentView]:
        return [self._view(agent) for agent in self.registry.list()]

    def get(self, agent_id: str) -> AgentView:
        return self._view(self.definition(agent_id))

    def definition(self, agent_id: str) -> AgentDefinition:
        """The agent's folder as read (a broken one comes with ``error``); unknown or
        malformed ids are AgentNotFound."""
        agent = self.registry.get(agent_id) if is_valid_agent_id(agent_id) else None
        if agent is None:
            raise AgentNotFound(agent_id)
        return agent

    def _view(self, agent: AgentDefinition) -> AgentView:
        return AgentView(
            id=agent.id,
            name=agent.name,
            description=agent.description,
            available=agent.available,
            error=agent.error,
            provider=agent.provider or self.settings.llm_provider,
            model=agent.model or self.settings.llm_model,
        )
