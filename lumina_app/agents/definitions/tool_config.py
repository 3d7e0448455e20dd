"""An agent's tool settings from its config.json: ``tools`` (built-in names),
``mcpServers`` (Claude Desktop's / Cursor's shape: stdio ``{command, args, env, cwd}`` or
streamable HTTP ``{url, headers}``), ``maxToolSteps`` and ``toolTimeoutSeconds``.

``parse_tool_config`` returns the settings or a reason the agent is unavailable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lumina_app.agents.tools.builtin import BUILTINS
from lumina_app.agents.tools.recall import NAME as RECALL

DEFAULT_MAX_STEPS = 8
DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_STEPS_LIMIT = 100
TIMEOUT_LIMIT_SECONDS = 3600
SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_STDIO_KEYS = {"command", "args", "env", "cwd"}
_HTTP_KEYS = {"url", "headers"}
# Keys other clients put in the same entries; accepted so a pasted config works.
_IGNORED_KEYS = {"type", "transport", "disabled", "autoApprove", "alwaysAllow", "timeout"}


class ToolConfigError(ValueError):
    """What is wrong with an agent's tool settings (the agent is then unavailable)."""


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One MCP server: a command to start (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def source(self) -> str:
        return f"mcp:{self.name}"


@dataclass(frozen=True, slots=True)
class ToolConfig:
    builtins: tuple[str, ...] = ()
    mcp_servers: tuple[McpServerConfig, ...] = ()
    max_steps: int = DEFAULT_MAX_STEPS
    timeout: float = DEFAULT_TIMEOUT_SECONDS


NO_TOOLS = ToolConfig()


def parse_tool_config(config: dict[str, Any]) -> ToolConfig:
    """The tool settings of a config.json object; ToolConfigError says what is wrong."""
    return ToolConfig(
        builtins=_builtins(config.get("tools")),
        mcp_servers=_servers(config.get("mcpServers")),
        max_steps=_max_steps(config),
        timeout=_timeout(config),
    )


def _builtins(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolConfigError("'tools' must be a list of built-in tool names")
    for name in value:
        if name not in BUILTINS and name != RECALL:
            known = ", ".join(sorted([*BUILTINS, RECALL]))
            raise ToolConfigError(f"unknown built-in tool {name!r} (built-ins: {known})")
    if len(set(value)) != len(value):
        raise ToolConfigError("'tools' names a built-in twice")
    return tuple(value)


def _servers(value: Any) -> tuple[McpServerConfig, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ToolConfigError("'mcpServers' must be an object of server name → settings")
    servers = []
    for name, entry in value.items():
        if not SERVER_NAME.fullmatch(name):
            raise ToolConfigError(f"mcpServers: {name!r} is not a usable server name")
        if not isinstance(entry, dict):
            raise ToolConfigError(f"mcpServers.{name} must be an object")
        if entry.get("disabled") is True:
            continue
        servers.append(_server(name, entry))
    return tuple(servers)


def _server(name: str, entry: dict[str, Any]) -> McpServerConfig:
    where = f"mcpServers.{name}"
    unknown = set(entry) - _STDIO_KEYS - _HTTP_KEYS - _IGNORED_KEYS
    if unknown:
        raise ToolConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    if entry.get("type") == "sse" or entry.get("transport") == "sse":
        raise ToolConfigError(f"{where}: the SSE transport is not supported (use streamable HTTP)")
    has_command, has_url = "command" in entry, "url" in entry
    if has_command == has_url:
        raise ToolConfigError(f"{where} needs either 'command' (stdio) or 'url' (HTTP)")
    if has_url:
        url = entry["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ToolConfigError(f"{where}.url must be an http:// or https:// URL")
        if _STDIO_KEYS & set(entry):
            extra = sorted(_STDIO_KEYS & set(entry))[0]
            raise ToolConfigError(f"{where}: {extra!r} goes with 'command', not 'url'")
        return McpServerConfig(name, url=url, headers=_strings(entry, "headers", where))
    command = entry["command"]
    if not isinstance(command, str) or not command.strip():
        raise ToolConfigError(f"{where}.command must be a non-empty string")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ToolConfigError(f"{where}.args must be a list of strings")
    cwd = entry.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise ToolConfigError(f"{where}.cwd must be a non-empty string")
    if "headers" in entry:
        raise ToolConfigError(f"{where}: 'headers' goes with 'url', not 'command'")
    return McpServerConfig(
        name, command=command, args=tuple(args), env=_strings(entry, "env", where), cwd=cwd
    )


def _strings(entry: dict[str, Any], key: str, where: str) -> tuple[tuple[str, str], ...]:
    value = entry.get(key, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ToolConfigError(f"{where}.{key} must be an object of strings")
    return tuple(sorted(value.items()))


def _max_steps(config: dict[str, Any]) -> int:
    value = config.get("maxToolSteps", DEFAULT_MAX_STEPS)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS_LIMIT:
        raise ToolConfigError(f"'maxToolSteps' must be a whole number from 1 to {MAX_STEPS_LIMIT}")
    return value


def _timeout(config: dict[str, Any]) -> float:
    value = config.get("toolTimeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not 0 < value <= TIMEOUT_LIMIT_SECONDS:  # NaN fails this too
        raise ToolConfigError(
            f"'toolTimeoutSeconds' must be a number of seconds above 0, at most "
            f"{TIMEOUT_LIMIT_SECONDS}"
        )
    return float(value)
