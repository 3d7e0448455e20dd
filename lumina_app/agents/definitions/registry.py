"""Agents defined as folders: ``<data>/agents/<id>/config.json`` plus optional prompt files."""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import time
from dataclasses import dataclass, field
from math import inf
from pathlib import Path
from typing import Any

from lumina_app.agents.definitions.acp_config import AcpConfig, AcpConfigError, parse_acp_config
from lumina_app.agents.definitions.embeddings_config import EmbeddingsConfig, parse_embeddings
from lumina_app.agents.definitions.memory_config import (
    MEMORY_FILE,
    SUMMARY_FILE,
    MemoryConfig,
    parse_memory,
)
from lumina_app.agents.definitions.titling import DEFAULT_TITLE_PROMPT, TITLE_FILE
from lumina_app.agents.definitions.tool_config import (
    NO_TOOLS,
    ToolConfig,
    ToolConfigError,
    parse_tool_config,
)

log = logging.getLogger(__name__)

PROMPT_FILES = ("agent.md", "soul.md", "identity.md", "user.md", "tools.md")
MAX_DEFINITION_BYTES = 1_000_000  # one config.json or prompt file
AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_OVERRIDES = ("provider", "base_url", "model", "temperature", "api_key")
_TOOL_KEYS = ("tools", "mcpServers", "maxToolSteps", "toolTimeoutSeconds")
_CLIENT_SYSTEM = "allowClientSystemPrompt"
_RETENTION = "retentionDays"


@dataclass(slots=True)
class AgentDefinition:
    """An agent as read from disk; ``error`` set means it is listed but unavailable."""

    id: str
    name: str
    description: str = ""
    system_prompt: str = ""
    provider: str | None = None
    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    temperature: float | None = None
    tools: ToolConfig = NO_TOOLS
    folder: Path | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    # The OpenAI-compatible gateway: may a client's ``system`` message replace the prompt?
    allow_client_system_prompt: bool = False
    acp: AcpConfig | None = None  # "provider": "acp": the agent process to start
    embeddings: EmbeddingsConfig | None = None  # its own embedder for recall (else the server's)
    # ``"vision": true``: the agent's model takes images, so a question's images are sent
    # as image parts (an acp agent's as image blocks, when its process says it takes them)
    # and the Responses API passes ``input_image`` parts on; else they are refused.
    vision: bool = False

    def takes_images(self, default_provider: str) -> bool:
        """Whether a question may carry images: a vision agent on an OpenAI-compatible
        provider or an acp one (the demo model reads text only)."""
        return self.vision and (self.provider or default_provider) in ("openai", "acp")

    titles: bool = True  # "titles": false keeps a new conversation's cut first message
    # "retentionDays": conversations untouched that long are deleted (0: kept forever;
    # None: LUMINA_RETENTION_DAYS decides)
    retention_days: int | None = None
    title_prompt: str = DEFAULT_TITLE_PROMPT  # the agent's title.md, or the default

    @property
    def available(self) -> bool:
        return self.error is None


def is_valid_agent_id(agent_id: str) -> bool:
    return AGENT_ID.fullmatch(agent_id) is not None


class AgentRegistry:
    """Reads agent folders, re-reading one whenever a file in it changes (no restart).

    Files are looked at (7 stat calls) at most every ``recheck_seconds`` per agent, not on
    every request: an edit shows within that time.
    """

    def __init__(
        self, agents_dir: Path, *, recheck_seconds: float = 1.0, clock=time.monotonic
    ) -> None:
        self.agents_dir = agents_dir
        self.recheck_seconds = recheck_seconds
        self._clock = clock
        self._cache: dict[str, tuple[tuple, AgentDefinition]] = {}
        self._checked: dict[str, float] = {}

    def list(self) -> list[AgentDefinition]:
        if not self.agents_dir.is_dir():
            return []
        ids = sorted(
            p.name for p in self.agents_dir.iterdir() if p.is_dir() and is_valid_agent_id(p.name)
        )
        return [agent for agent in (self.get(i) for i in ids) if agent is not None]

    def get(self, agent_id: str) -> AgentDefinition | None:
        """The agent, or None if there is no such folder (a broken one comes with ``error``)."""
        if not is_valid_agent_id(agent_id):
            return None
        now = self._clock()
        cached = self._cache.get(agent_id)
        if cached and now - self._checked.get(agent_id, -inf) < self.recheck_seconds:
            return cached[1]
        self._checked[agent_id] = now
        folder = self.agents_dir / agent_id
        if not (folder / "config.json").is_file():
            self._cache.pop(agent_id, None)
            return None
        stamp = self._stamp(folder)
        if cached and cached[0] == stamp:
            return cached[1]
        agent = self._load(agent_id, folder)
        self._cache[agent_id] = (stamp, agent)
        return agent

    @staticmethod
    def _stamp(folder: Path) -> tuple:
        parts = []
        for name in ("config.json", *PROMPT_FILES, SUMMARY_FILE, MEMORY_FILE, TITLE_FILE):
            try:
                info = (folder / name).stat()
                parts.append((name, info.st_mtime_ns, info.st_size))
            except FileNotFoundError:
                parts.append((name, None, None))
        return tuple(parts)

    @staticmethod
    def _load(agent_id: str, folder: Path) -> AgentDefinition:
        try:
            config = json.loads(_read_text(folder / "config.json"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            return AgentDefinition(
                id=agent_id, name=agent_id, error=f"config.json unreadable: {exc}"
            )
        if not isinstance(config, dict):
            return AgentDefinition(
                id=agent_id, name=agent_id, error="config.json must be an object"
            )
        problem = _check_config(config)
        name = config.get("name") if isinstance(config.get("name"), str) else agent_id
        try:
            tools = parse_tool_config(config)
        except ToolConfigError as exc:
            problem = problem or f"config.json: {exc}"
        try:
            acp = parse_acp_config(config)
        except AcpConfigError as exc:
            problem = problem or f"config.json: {exc}"
        embeddings = parse_embeddings(config)
        if isinstance(embeddings, str):
            problem = problem or embeddings
        if problem:
            return AgentDefinition(id=agent_id, name=name, error=problem)
        assert not isinstance(embeddings, str)
        prompts = []
        for filename in PROMPT_FILES:
            text = _prompt_file(folder / filename)
            if text:
                prompts.append(text)
        summary_prompt = _prompt_file(folder / SUMMARY_FILE)
        memory_prompt = _prompt_file(folder / MEMORY_FILE)
        memory = parse_memory(config, summary_prompt, memory_prompt)
        if isinstance(memory, str):
            return AgentDefinition(id=agent_id, name=name, error=memory)
        known = {
            "name", "description", "memory", "acp", "embeddings", "vision", "titles",
            _RETENTION, _CLIENT_SYSTEM, *_OVERRIDES, *_TOOL_KEYS,
        }  # fmt: skip
        return AgentDefinition(
            id=agent_id,
            name=name,
            description=config.get("description", ""),
            system_prompt="\n\n".join(prompts),
            provider=config.get("provider"),
            base_url=config.get("base_url"),
            model=config.get("model"),
            api_key=config.get("api_key"),
            temperature=config.get("temperature"),
            tools=tools,
            folder=folder,
            extra={k: v for k, v in config.items() if k not in known},
            memory=memory,
            allow_client_system_prompt=config.get(_CLIENT_SYSTEM, False),
            acp=acp,
            embeddings=embeddings,
            vision=config.get("vision") is True,
            titles=config.get("titles", True),
            title_prompt=_prompt_file(folder / TITLE_FILE) or DEFAULT_TITLE_PROMPT,
            retention_days=config.get(_RETENTION),
        )


def _prompt_file(path: Path) -> str | None:
    """A prompt file's text, or None when it is missing, empty or not a regular file."""
    try:
        return _read_text(path).strip() or None
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("agent prompt %s left out: %s", path, exc)
        return None


def _read_text(path: Path) -> str:
    """A definition file's text, read only if it is a regular file (checked on the opened
    descriptor) of at most ``MAX_DEFINITION_BYTES``: an agent process with a shell can
    write its own folder, and a named pipe there would block the reading thread for ever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if info.st_size > MAX_DEFINITION_BYTES:
            raise OSError(f"{path.name} is over {MAX_DEFINITION_BYTES} bytes")
        with os.fdopen(fd, "rb", closefd=False) as file:
            data = file.read(MAX_DEFINITION_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_DEFINITION_BYTES:
        raise OSError(f"{path.name} is over {MAX_DEFINITION_BYTES} bytes")
    return data.decode("utf-8")


def _check_config(config: dict[str, Any]) -> str | None:
    for key in ("name", "description", "provider", "base_url", "model", "api_key"):
        if key in config and config[key] is not None and not isinstance(config[key], str):
            return f"config.json: {key!r} must be a string"
    if config.get("provider") not in (None, "demo", "openai", "acp"):
        return f"config.json: unknown provider {config['provider']!r} (use demo, openai or acp)"
    retention = config.get(_RETENTION)
    if retention is not None and (
        isinstance(retention, bool) or not isinstance(retention, int) or retention < 0
    ):
        return f"config.json: {_RETENTION!r} must be a whole number of days (0: keep forever)"
    temperature = config.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        return "config.json: 'temperature' must be a number from 0 to 2"
    for key in (_CLIENT_SYSTEM, "titles"):
        if not isinstance(config.get(key, False), bool):
            return f"config.json: {key!r} must be true or false"
    return None
