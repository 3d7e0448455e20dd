"""Shared by the ACP tests: an agent folder for the echo agent, sending, process checks."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

from lumina_app.agents.definitions.acp_config import AcpConfig
from lumina_app.agents.providers.acp.pool import conversation_folder
from lumina_app.domain import LOCAL, EventType, RunEvent
from tests.conftest import write_agent

ECHO_AGENT = Path(__file__).with_name("echo_agent.py")
PROMPT = "You are Echo."


def echo_agent(
    data_dir: Path,
    agent_id: str = "echo",
    *,
    permissions: str = "allow-all",
    config: dict | None = None,
    **acp: object,
) -> Path:
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), **acp.pop("env", {})}  # type: ignore[arg-type]
    block = {
        "command": sys.executable,
        "args": [str(ECHO_AGENT)],
        "env": env,
        "permissions": permissions,
        **acp,
    }
    write_agent(
        data_dir / "agents",
        agent_id,
        {"name": "Echo", "provider": "acp", "acp": block, **(config or {})},
        {"agent.md": PROMPT},
    )
    return data_dir / "agents" / agent_id


async def send(
    services, text: str, conversation: str | None = None, agent: str = "echo"
) -> list[RunEvent]:
    return [
        e
        async for e in services.runs.stream(
            LOCAL, agent_id=agent, message=text, conversation_uuid=conversation
        )
    ]


def answer_of(events: list[RunEvent]) -> str:
    return "".join(e.data["text"] for e in events if e.type is EventType.DELTA)


def result_of(events: list[RunEvent]) -> dict:
    assert events[-1].type is EventType.RESULT
    return events[-1].data


def pid_of(events: list[RunEvent]) -> int:
    found = re.search(r"pid=(\d+)", answer_of(events))
    assert found, answer_of(events)
    return int(found.group(1))


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):  # reaped while read
        return False
    return state not in ("Z", "X")


def kill_group(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)


def workdir(folder: Path, conversation: str, owner: str = "") -> Path:
    """The conversation's working folder, as the pool lays it out (keyed by owner)."""
    return conversation_folder(folder, AcpConfig(command="x"), owner, conversation)
