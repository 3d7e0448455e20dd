"""One ACP agent process: started in its own process group with only the environment its
config names, stderr to a log file (an undrained pipe would hang a chatty agent), driven
through the SDK's client connection, and ended as a whole group (an agent's wrapper may
leave its real binary behind when stdin closes)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from lumina_app.agents.definitions.acp_config import AcpConfig
from lumina_app.agents.providers.acp.client import LuminaClient
from lumina_app.agents.providers.acp.files import FileRefused, open_log

log = logging.getLogger(__name__)

STDIO_LIMIT = 16 * 1024 * 1024  # one JSON-RPC line from the agent
_STDERR_TAIL = 2000


class AgentStartError(RuntimeError):
    """The agent process could not be started or did not complete ``initialize``."""


@dataclass(eq=False)
class AgentProcess:
    """A live agent process and its connection; ``session_id`` once a session is open."""

    process: asyncio.subprocess.Process
    conn: Any  # acp.ClientSideConnection
    client: LuminaClient
    stderr_path: Path
    stderr_fd: int = -1  # kept open: the tail is read from it, never through the path
    last_tail: str = ""  # the tail when the process was ended and the fd closed
    capabilities: Any = None  # acp.schema.AgentCapabilities
    agent_info: str = ""
    session_id: str | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Running: not exited, nor (where ``/proc`` tells) killed a moment ago and not yet
        reaped by the event loop — such a process is never handed the next prompt."""
        return self.process.returncode is None and not _exited(self.process.pid)

    @property
    def can_load(self) -> bool:
        return bool(self.capabilities and self.capabilities.load_session)

    @property
    def can_resume(self) -> bool:
        caps = self.capabilities and self.capabilities.session_capabilities
        return bool(caps and caps.resume is not None)

    @property
    def takes_images(self) -> bool:
        """Its ``initialize`` said prompts may carry image blocks."""
        caps = self.capabilities and self.capabilities.prompt_capabilities
        return bool(caps and caps.image)

    @property
    def can_close(self) -> bool:
        caps = self.capabilities and self.capabilities.session_capabilities
        return bool(caps and caps.close is not None)

    def stderr_tail(self) -> str:
        """The end of what the agent wrote to stderr (for a failed run's message), read
        from the descriptor Lumina opened (a regular file), whatever the path holds now."""
        if self.stderr_fd < 0:
            return self.last_tail
        try:
            size = os.fstat(self.stderr_fd).st_size
            data = os.pread(self.stderr_fd, _STDERR_TAIL, max(0, size - _STDERR_TAIL))
        except OSError:
            return ""
        return data.decode("utf-8", "replace").strip()

    def exit_reason(self) -> str:
        code = self.process.returncode
        how = (
            "is still running"
            if code is None
            else (f"was killed by signal {-code}" if code < 0 else f"exited with code {code}")
        )
        tail = self.stderr_tail()
        return f"the agent process {how}" + (f"; its stderr ends: {tail[-500:]}" if tail else "")

    async def close(self, grace: float = 2.0) -> None:
        """``session/close`` where advertised, end of stdin, then the whole group: TERM,
        and KILL after ``grace``; always reaped."""
        if self.alive and self.session_id and self.can_close:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(min(grace, 1.0)):
                    await self.conn.close_session(session_id=self.session_id)
        with contextlib.suppress(Exception):
            await self.conn.close()
        with contextlib.suppress(Exception):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(grace, 0.5)):
                await self.process.wait()
        _signal_group(self.pid, signal.SIGTERM)
        try:
            async with asyncio.timeout(grace):
                await self.process.wait()
        except TimeoutError:
            log.warning("agent process %d ignored SIGTERM; killing its group", self.pid)
        _signal_group(self.pid, signal.SIGKILL)  # whatever of the group is left, leader or not
        await self.process.wait()
        if self.stderr_fd >= 0:
            self.last_tail = self.stderr_tail()  # what a failed start's message quotes
            os.close(self.stderr_fd)
            self.stderr_fd = -1


def _exited(pid: int) -> bool:
    """The process is a zombie or gone, as ``/proc`` shows it (False where there is none)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return _HAS_PROC
    except OSError:
        return False
    return stat.rsplit(b")", 1)[-1].split()[:1] in ([b"Z"], [b"X"])


_HAS_PROC = Path("/proc/self/stat").exists()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _make_folders(*folders: Path) -> None:
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)


def agent_environment(config: AcpConfig) -> dict[str, str]:
    """What the agent gets: PATH, HOME and the like (the SDK's list) plus the config's
    ``env`` — never Lumina's own settings or keys."""
    env = acp.default_environment()
    env.update(dict(config.env))
    return env


async def start_agent(
    config: AcpConfig,
    folder: Path,
    client: LuminaClient,
    *,
    stderr_path: Path,
    start_timeout: float,
) -> AgentProcess:
    """Spawn the agent in ``folder`` and complete ``initialize``; AgentStartError if it
    cannot start, dies, or does not answer within ``start_timeout``."""
    _make_folders(stderr_path.parent, folder)
    try:
        stderr = open_log(stderr_path)  # a regular file: a FIFO left there would block
    except (FileRefused, OSError) as exc:
        raise AgentStartError(f"cannot open the agent's log {stderr_path}: {exc}") from exc
    try:
        process = await asyncio.create_subprocess_exec(
            config.command,
            *config.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=agent_environment(config),
            cwd=str(folder),
            start_new_session=True,  # its own process group, ended as one
            limit=STDIO_LIMIT,
        )
    except OSError as exc:
        os.close(stderr)
        raise AgentStartError(f"cannot start {config.command!r}: {exc}") from exc
    assert process.stdin is not None and process.stdout is not None
    conn = acp.connect_to_agent(client, process.stdin, process.stdout, use_unstable_protocol=True)
    agent = AgentProcess(process, conn, client, stderr_path, stderr)
    try:
        async with asyncio.timeout(start_timeout):
            reply = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                    terminal=False,
                ),
                client_info=Implementation(name="lumina", title="Lumina", version="1"),
            )
    except (TimeoutError, ConnectionError, acp.RequestError, OSError) as exc:
        why = "did not answer initialize in time" if isinstance(exc, TimeoutError) else str(exc)
        await agent.close(grace=0.5)
        raise AgentStartError(f"{config.command!r} {why}; {agent.exit_reason()}") from exc
    agent.capabilities = reply.agent_capabilities
    info = reply.agent_info
    agent.agent_info = f"{info.name} {info.version}" if info else ""
    return agent
