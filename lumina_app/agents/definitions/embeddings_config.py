"""An agent's ``embeddings`` block in config.json: its own embedder for recall, instead of
the server's ``LUMINA_EMBEDDINGS_*`` one.

    "embeddings": {"provider": "openai", "baseUrl": "http://127.0.0.1:11434/v1",
                   "model": "nomic-embed-text", "apiKeyEnv": "OLLAMA_KEY"}

``provider`` is ``openai`` (any ``/v1/embeddings`` server), ``local`` (the embedded model)
or ``off`` (lexical ranking only). The key is named, never written: ``apiKeyEnv`` is an
environment variable, which must be set. A bad block makes the agent unavailable, with
the reason, as a bad ``mcpServers`` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lumina_app.settings import secret_from_environment

PROVIDERS = ("openai", "local", "off")
_KEYS = {"provider", "baseUrl", "model", "apiKeyEnv"}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?")
MAX_MODEL_CHARS = 200


@dataclass(frozen=True, slots=True)
class EmbeddingsConfig:
    provider: str
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)


def parse_embeddings(config: dict[str, Any]) -> EmbeddingsConfig | str | None:
    """The agent's embedder (None: the server's), or the reason the block cannot be used."""
    block = config.get("embeddings")
    if block is None:
        return None
    if not isinstance(block, dict):
        return "config.json: 'embeddings' must be an object"
    unknown = set(block) - _KEYS
    if unknown:
        return f"config.json: unknown 'embeddings' keys: {', '.join(sorted(unknown))}"
    provider = block.get("provider")
    if provider not in PROVIDERS:
        return f"config.json: 'embeddings.provider' must be one of {', '.join(PROVIDERS)}"
    if provider != "openai":
        extra = sorted(set(block) - {"provider"})
        if extra:
            return f"config.json: 'embeddings' {provider!r} takes no {', '.join(extra)}"
        return EmbeddingsConfig(provider)
    base_url, model, env = block.get("baseUrl"), block.get("model"), block.get("apiKeyEnv")
    if not isinstance(base_url, str) or not _URL.fullmatch(base_url):
        return "config.json: 'embeddings.baseUrl' must be an http(s) URL"
    if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL_CHARS:
        return (
            f"config.json: 'embeddings.model' must be a name of 1 to {MAX_MODEL_CHARS} characters"
        )
    key = None
    if env is not None:
        if not isinstance(env, str) or not _ENV_NAME.fullmatch(env):
            return "config.json: 'embeddings.apiKeyEnv' must be an environment variable's name"
        key = secret_from_environment(env)
        if key is None:
            return f"config.json: 'embeddings.apiKeyEnv' names {env}, which is not set"
    return EmbeddingsConfig(provider, base_url, model.strip(), key)
