"""Each agent's embedder for recall: its config.json ``embeddings`` block, else the
server's (``LUMINA_EMBEDDINGS_*``). One client per distinct server, model and key, kept
while the process runs, so an agent's vectors are made and read by the same model."""

from __future__ import annotations

from lumina_app.agents.definitions.embeddings_config import EmbeddingsConfig
from lumina_app.agents.definitions.registry import AgentRegistry
from lumina_app.recall.embedders import Embedder, LocalEmbedder, OpenAIEmbedder


class AgentEmbedders:
    """:class:`lumina_app.recall.embedders.EmbedderChoice` over the agent folders."""

    def __init__(
        self, registry: AgentRegistry, default: Embedder | None, *, timeout: float = 30.0
    ) -> None:
        self.registry = registry
        self.default = default
        self.timeout = timeout
        self._made: dict[EmbeddingsConfig, Embedder] = {}

    def for_agent(self, agent_id: str) -> Embedder | None:
        agent = self.registry.get(agent_id)
        config = agent.embeddings if agent is not None and agent.available else None
        return self.default if config is None else self._embedder(config)

    def own(self) -> dict[str, Embedder | None]:
        found = {}
        for agent in self.registry.list():
            if agent.available and agent.embeddings is not None:
                embedder = self._embedder(agent.embeddings)
                if embedder is not self.default:
                    found[agent.id] = embedder
        return found

    def _embedder(self, config: EmbeddingsConfig) -> Embedder | None:
        if config.provider == "off":
            return None
        if config.provider == "local" and isinstance(self.default, LocalEmbedder):
            return self.default
        made = self._made.get(config)
        if made is None:
            if config.provider == "local":
                made = LocalEmbedder()
            else:
                assert config.base_url and config.model  # embeddings_config checks it
                made = OpenAIEmbedder(
                    config.base_url, config.model, api_key=config.api_key, timeout=self.timeout
                )
            self._made[config] = made
        return made

    async def close(self) -> None:
        for embedder in self._made.values():
            await embedder.close()
        self._made.clear()
