"""An agent's ``embeddings`` block: a good one gives the agent its own embedder; a bad one
makes the agent unavailable with the reason, as a bad ``mcpServers`` does."""

from __future__ import annotations

import pytest

from lumina_app.agents.definitions.agent_embedders import AgentEmbedders
from lumina_app.agents.definitions.registry import AgentRegistry
from lumina_app.recall.embedders import LocalEmbedder, OpenAIEmbedder
from tests.conftest import write_agent

GOOD = {"provider": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "nomic-embed"}


@pytest.mark.parametrize(
    ("block", "reason"),
    [
        ("openai", "'embeddings' must be an object"),
        ({**GOOD, "apiKey": "sk-1"}, "unknown 'embeddings' keys: apiKey"),
        ({"provider": "cohere"}, "'embeddings.provider' must be one of openai, local, off"),
        ({"provider": "local", "model": "x"}, "'embeddings' 'local' takes no model"),
        ({**GOOD, "baseUrl": "ftp://host/v1"}, "'embeddings.baseUrl' must be an http(s) URL"),
        ({**GOOD, "baseUrl": None}, "'embeddings.baseUrl' must be an http(s) URL"),
        ({**GOOD, "model": " "}, "'embeddings.model' must be a name"),
        ({**GOOD, "model": 7}, "'embeddings.model' must be a name"),
        ({**GOOD, "apiKeyEnv": "not a name"}, "apiKeyEnv' must be an environment variable"),
        ({**GOOD, "apiKeyEnv": "LUMINA_TEST_UNSET_KEY"}, "names LUMINA_TEST_UNSET_KEY, which is"),
    ],
)
def test_a_bad_block_makes_the_agent_unavailable_with_the_reason(
    tmp_path, monkeypatch, block, reason
) -> None:
    monkeypatch.delenv("LUMINA_TEST_UNSET_KEY", raising=False)
    write_agent(tmp_path, "odd", {"name": "Odd", "embeddings": block})
    agent = AgentRegistry(tmp_path, recheck_seconds=0).get("odd")
    assert agent is not None and not agent.available
    assert reason in agent.error


async def test_each_agent_gets_its_embedder_and_shares_one_per_server(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("LUMINA_TEST_EMBED_KEY", "sk-secret")
    keyed = {**GOOD, "apiKeyEnv": "LUMINA_TEST_EMBED_KEY"}
    write_agent(tmp_path, "plain", {"name": "Plain"})
    write_agent(tmp_path, "own", {"name": "Own", "embeddings": keyed})
    write_agent(tmp_path, "twin", {"name": "Twin", "embeddings": keyed})
    write_agent(tmp_path, "quiet", {"name": "Quiet", "embeddings": {"provider": "off"}})
    write_agent(tmp_path, "same", {"name": "Same", "embeddings": {"provider": "local"}})
    write_agent(tmp_path, "bad", {"name": "Bad", "embeddings": {"provider": "cohere"}})
    registry = AgentRegistry(tmp_path, recheck_seconds=0)
    own = registry.get("own")
    assert own.available and own.embeddings.api_key == "sk-secret"
    assert "sk-secret" not in repr(own.embeddings)  # the key is not logged with the agent

    default = LocalEmbedder()
    choice = AgentEmbedders(registry, default)
    try:
        mine = choice.for_agent("own")
        assert isinstance(mine, OpenAIEmbedder) and mine.name == "openai:nomic-embed"
        assert choice.for_agent("twin") is mine  # one client per server, model and key
        assert choice.for_agent("plain") is default and choice.for_agent("same") is default
        assert choice.for_agent("bad") is default  # unavailable: it never runs anyway
        assert choice.for_agent("quiet") is None
        assert choice.own() == {"own": mine, "twin": mine, "quiet": None}
    finally:
        await choice.close()
