"""Each agent's tools: the built-ins its config names (``recall`` among them, also turned
on by ``"memory": {"recall": true}``), and the tools of its MCP servers.

A server is started when its agent first needs it (a run, or the agent's info), shared by
the agent's runs, replaced when its config changes, and shut down by ``close()``. Servers
are only ever made from agent folders, never from request input.
"""

from __future__ import annotations

import asyncio
import time
from functools import partial

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.tools.builtin import builtin_tool
from lumina_app.agents.tools.mcp import McpServer, McpUnavailable
from lumina_app.agents.tools.memories import MemoryTools
from lumina_app.agents.tools.recall import NAME as RECALL
from lumina_app.agents.tools.recall import Recall
from lumina_app.agents.tools.sandbox import ComputePool
from lumina_app.agents.tools.schema import spec_problem
from lumina_app.agents.tools.spec import Tool, Toolbox, ToolInfo, ToolSpec
from lumina_app.domain.tasks import keep

# How a server whose tools are unknown (it could not start) is listed in an agent's info.
ALL_TOOLS = "*"


class ToolCatalog:
    def __init__(
        self,
        *,
        start_timeout: float,
        retry_seconds: float,
        compute: ComputePool,
        recall: Recall | None = None,
        memories: MemoryTools | None = None,
        clock=time.monotonic,
    ) -> None:
        self.start_timeout = start_timeout
        self.compute = compute
        self.recall = recall
        self.memories = memories  # long-term memory tools (agents with memory.longTerm)
        self.retry_seconds = retry_seconds
        self._clock = clock
        self._servers: dict[tuple[str, str], McpServer] = {}
        self._retired: set[asyncio.Task] = set()

    async def toolbox(self, agent: AgentDefinition, *, temporary: bool = False) -> Toolbox:
        """What a run of ``agent`` may call (its servers started, in parallel, if needed),
        and what it may not, with why; a ``temporary`` conversation's run has no memory tools."""
        toolbox = Toolbox()
        for name in agent.tools.builtins:
            if name != RECALL:
                tool = builtin_tool(name, self.compute)
                toolbox.tools[tool.name] = tool
        wants_recall = agent.memory.recall or RECALL in agent.tools.builtins
        if wants_recall and self.recall is not None:
            toolbox.tools[RECALL] = self.recall.tool()
        if agent.memory.long_term and self.memories is not None and not temporary:
            toolbox.tools |= {tool.name: tool for tool in self.memories.tools(agent)}
        servers = self._servers_of(agent)
        if not servers:
            return toolbox
        listed = await asyncio.gather(*(_tools_of(server) for server in servers))
        for server, specs in zip(servers, listed, strict=True):
            if isinstance(specs, McpUnavailable):
                toolbox.unavailable.append(
                    ToolInfo(ALL_TOOLS, server.config.source, "", False, str(specs))
                )
                continue
            for spec in specs:
                problem = spec_problem(spec)
                taken = toolbox.tools.get(spec.name)
                if taken is not None:
                    problem = f"the name is already taken by {taken.spec.source}"
                if problem:
                    toolbox.unavailable.append(_unavailable(spec, problem))
                else:
                    toolbox.tools[spec.name] = Tool(spec, partial(server.call, spec.name))
        return toolbox

    def servers(self, agent_id: str) -> list[McpServer]:
        """The agent's servers this process has made (for tests and operators)."""
        return [s for (owner, _), s in self._servers.items() if owner == agent_id]

    def _servers_of(self, agent: AgentDefinition) -> list[McpServer]:
        """The agent's servers as its config now says; a changed or removed entry's old
        server is shut down in the background."""
        wanted = {config.name: config for config in agent.tools.mcp_servers}
        for key in [k for k in self._servers if k[0] == agent.id and k[1] not in wanted]:
            self._retire(self._servers.pop(key))
        servers = []
        for name, config in wanted.items():
            key = (agent.id, name)
            server = self._servers.get(key)
            if server is not None and (server.config != config or server.folder != agent.folder):
                self._retire(self._servers.pop(key))
                server = None
            if server is None:
                assert agent.folder is not None
                server = self._servers[key] = McpServer(
                    config,
                    folder=agent.folder,
                    start_timeout=self.start_timeout,
                    retry_seconds=self.retry_seconds,
                    clock=self._clock,
                )
            servers.append(server)
        return servers

    def _retire(self, server: McpServer) -> None:
        keep(self._retired, server.close())

    async def close(self) -> None:
        """Shut every server and tool worker down (the app is stopping)."""
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(s.close() for s in servers), *self._retired, self.compute.close())


async def _tools_of(server: McpServer) -> list[ToolSpec] | McpUnavailable:
    try:
        return await server.ensure()
    except McpUnavailable as exc:
        return exc


def _unavailable(spec: ToolSpec, reason: str) -> ToolInfo:
    return ToolInfo(spec.name, spec.source, spec.description, False, reason)
