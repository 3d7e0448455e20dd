"""An ``acp`` agent's settings from its config.json: ``"provider": "acp"`` and an ``acp``
block ``{command, args, env, cwd, permissions}`` (the same validated shape as an MCP
server's stdio entry). ``parse_acp_config`` returns the settings or raises AcpConfigError,
which makes the agent unavailable with that reason."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal

Permissions = Literal["ask", "allow-reads", "allow-all", "deny"]
PERMISSIONS: tuple[str, ...] = ("ask", "allow-reads", "allow-all", "deny")
DEFAULT_CWD = "workspace"
_KEYS = {"command", "args", "env", "cwd", "permissions"}


class AcpConfigError(ValueError):
    """What is wrong with an agent's ``acp`` block (the agent is then unavailable)."""


@dataclass(frozen=True, slots=True)
class AcpConfig:
    """How to start the agent process; ``cwd`` is a folder inside the agent's folder under
    which each conversation gets its own working folder."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = DEFAULT_CWD
    permissions: Permissions = "ask"


def parse_acp_config(config: dict[str, Any]) -> AcpConfig | None:
    """The ``acp`` block of a config.json object (None unless the provider is ``acp``)."""
    block = config.get("acp")
    if config.get("provider") != "acp":
        if block is not None:
            raise AcpConfigError('\'acp\' is only read with "provider": "acp"')
        return None
    if not isinstance(block, dict):
        raise AcpConfigError("\"provider\": \"acp\" needs an 'acp' object with a 'command'")
    unknown = set(block) - _KEYS
    if unknown:
        raise AcpConfigError(f"acp: unknown key {sorted(unknown)[0]!r}")
    command = block.get("command")
    if not isinstance(command, str) or not command.strip():
        raise AcpConfigError("acp.command must be a non-empty string")
    args = block.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise AcpConfigError("acp.args must be a list of strings")
    env = block.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise AcpConfigError("acp.env must be an object of strings")
    permissions = block.get("permissions", "ask")
    if permissions not in PERMISSIONS:
        raise AcpConfigError(f"acp.permissions must be one of {', '.join(PERMISSIONS)}")
    return AcpConfig(
        command=command,
        args=tuple(args),
        env=tuple(sorted(env.items())),
        cwd=_cwd(block.get("cwd", DEFAULT_CWD)),
        permissions=permissions,
    )


def _cwd(value: Any) -> str:
    """A relative folder inside the agent's folder: no absolute path, no ``..``."""
    if not isinstance(value, str) or not value.strip():
        raise AcpConfigError("acp.cwd must be a non-empty string")
    path = PurePosixPath(value)
    if path.is_absolute() or ".." in path.parts or "\\" in value:
        raise AcpConfigError("acp.cwd must be a folder inside the agent's folder (no '..')")
    return str(path)
