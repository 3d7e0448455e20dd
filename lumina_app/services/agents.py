"""The agents callers may use: the registry's folders, with the global LLM defaults
filled in where an agent names none, and (in an agent's info) the tools it has."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lumina_app.agents.definitions.registry import AgentDefinition, AgentRegistry, is_valid_agent_id
from lumina_app.agents.tools.catalog import ToolCatalog
from lumina_app.agents.tools.spec import ToolInfo
from lumina_app.domain import AgentNotFound
from lumina_app.settings import Settings

DEFAULT_AGENT = "assistant"


@dataclass(frozen=True, slots=True)
class AgentView:
    id: str
    name: str
    description: str
    available: bool
    error: str | None
    provider: str
    model: str | None
    tools: tuple[ToolInfo, ...] = ()


class AgentService:
    def __init__(self, registry: AgentRegistry, settings: Settings, tools: ToolCatalog) -> None:
        self.registry = registry
        self.settings = settings
        self.tools = tools

    def list(self) -> list[AgentView]:
        return [self._view(agent) for agent in self.registry.list()]

    def default_id(self) -> str:
        """The agent of a request that names none: the default one if it is available (or
        none is), else the first available."""
        available = [view.id for view in self.list() if view.available]
        return DEFAULT_AGENT if DEFAULT_AGENT in available or not available else available[0]

    def get(self, agent_id: str) -> AgentView:
        return self._view(self.definition(agent_id))

    async def info(self, agent_id: str) -> AgentView:
        """The agent with its tools: built-ins, and its MCP servers' tools (the servers are
        started if they are not running), each available or not, with why."""
        agent = self.definition(agent_id)
        view = self._view(agent)
        if not agent.available:
            return view
        toolbox = await self.tools.toolbox(agent)
        return dataclasses.replace(view, tools=tuple(toolbox.infos()))

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
