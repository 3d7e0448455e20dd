"""The ACP session pool (seed 004 §16.3): one agent process and ACP session per active
``agentId:conversationId``. Capped (least recently used idle process ended first), ended
after an idle timeout, a bounded number starting at once; a process that died is dropped
and the next message starts a new one, which resumes or loads its session, or is given the
stored history."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import acp

from lumina_app.agents.acp.client import LuminaClient
from lumina_app.agents.acp.config import AcpConfig
from lumina_app.agents.acp.process import AgentProcess, AgentStartError, start_agent
from lumina_app.domain.access import SAFE_NAME

log = logging.getLogger(__name__)

# How a run got its session: a live process (B), a new conversation (A), or a new process
# for a conversation with history (C) that resumed, loaded, or was given the history.
Mode = Literal["live", "new", "resume", "load", "inject"]


class PoolFull(RuntimeError):
    """Every agent process allowed is busy with a prompt: none can be ended for a new one."""


@dataclass(eq=False)
class AcpSession:
    key: str
    agent_id: str
    conversation_uuid: str
    folder: Path
    process: AgentProcess
    prompts: int = 0  # sent to this process
    busy: bool = False
    last_used: float = field(default_factory=time.monotonic)

    @property
    def session_id(self) -> str:
        assert self.process.session_id is not None
        return self.process.session_id


@dataclass(frozen=True, slots=True)
class Opened:
    session: AcpSession
    mode: Mode
    note: str = ""  # why a resume or load fell back to injecting the history


def conversation_folder(agent_folder: Path, config: AcpConfig, conversation_uuid: str) -> Path:
    """The conversation's own working folder under the agent's ``cwd`` (``workspace/``)."""
    name = (
        conversation_uuid
        if SAFE_NAME.fullmatch(conversation_uuid)
        else ("c-" + hashlib.sha256(conversation_uuid.encode()).hexdigest()[:16])
    )
    return agent_folder / config.cwd / name


class AcpPool:
    def __init__(
        self,
        *,
        max_processes: int = 16,
        idle_seconds: float = 600.0,
        max_starting: int = 2,
        start_timeout: float = 30.0,
        ask_timeout: float = 120.0,
        clock=time.monotonic,
    ) -> None:
        self.max_processes = max_processes
        self.idle_seconds = idle_seconds
        self.start_timeout = start_timeout
        self.ask_timeout = ask_timeout
        self._clock = clock
        self._starting = asyncio.Semaphore(max_starting)
        self._sessions: OrderedDict[str, AcpSession] = OrderedDict()
        self._closing: set[asyncio.Task] = set()
        self._reaper: asyncio.Task | None = None
        # Conversations whose stored agent session no longer matches Lumina's history
        # (regenerated, deleted, a turn not stored): their next process starts afresh.
        self._stale: set[str] = set()

    @staticmethod
    def key(agent_id: str, conversation_uuid: str) -> str:
        return f"{agent_id}:{conversation_uuid}"

    def __len__(self) -> int:
        return len(self._sessions)

    def sessions(self) -> list[AcpSession]:
        return list(self._sessions.values())

    def live(self, agent_id: str, conversation_uuid: str) -> AcpSession | None:
        session = self._sessions.get(self.key(agent_id, conversation_uuid))
        return session if session is not None and session.process.alive else None

    # -- opening -------------------------------------------------------------------------

    async def open(
        self,
        agent_id: str,
        agent_folder: Path,
        config: AcpConfig,
        conversation_uuid: str,
        *,
        has_history: bool,
    ) -> Opened:
        """The conversation's session, taken for one prompt (``release`` gives it back):
        the live one, else a new process with its session resumed, loaded or new."""
        self._ensure_reaper()
        key = self.key(agent_id, conversation_uuid)
        session = self._sessions.get(key)
        if session is not None and session.process.alive and not session.busy:
            session.busy, session.last_used = True, self._clock()
            self._sessions.move_to_end(key)
            return Opened(session, "live")
        if session is not None:  # died (or, busy, a stop left it): a new process loads it
            del self._sessions[key]
            self._end_later(session)
        await self._make_room()
        folder = conversation_folder(agent_folder, config, conversation_uuid)
        state = _state_path(agent_folder, conversation_uuid)
        client = LuminaClient(folder, config.permissions, ask_timeout=self.ask_timeout)
        async with self._starting:
            process = await start_agent(
                config,
                folder,
                client,
                stderr_path=state.with_suffix(".stderr.log"),
                start_timeout=self.start_timeout,
            )
        try:
            mode, note = await self._session(
                process, folder, state, has_history, self.key(agent_id, conversation_uuid)
            )
        except BaseException:
            await process.close(grace=0.5)
            raise
        session = AcpSession(key, agent_id, conversation_uuid, folder, process, busy=True)
        session.last_used = self._clock()
        self._sessions[key] = session
        return Opened(session, mode, note)

    async def _session(
        self, process: AgentProcess, folder: Path, state: Path, has_history: bool, key: str
    ) -> tuple[Mode, str]:
        cwd = str(process.client.folder)  # resolved
        stale = key in self._stale
        self._stale.discard(key)
        stored = _read_state(state) if has_history and not stale else None
        note = "the stored session no longer matches the conversation" if stale else ""
        try:
            async with asyncio.timeout(self.start_timeout):
                if stored and process.can_resume:
                    try:
                        await process.conn.resume_session(session_id=stored, cwd=cwd)
                        process.session_id = stored
                        return "resume", ""
                    except (acp.RequestError, ValueError) as exc:
                        note = f"session/resume failed: {exc}"
                if stored and process.can_load:
                    try:  # the client has no sink now: the replayed updates are dropped
                        await process.conn.load_session(session_id=stored, cwd=cwd)
                        process.session_id = stored
                        return "load", ""
                    except (acp.RequestError, ValueError) as exc:
                        note = f"session/load failed: {exc}"
                reply = await process.conn.new_session(cwd=cwd)
        except (TimeoutError, ConnectionError, acp.RequestError) as exc:
            raise AgentStartError(
                f"the agent opened no session: {exc or 'timed out'}; {process.exit_reason()}"
            ) from exc
        process.session_id = reply.session_id
        _write_state(state, reply.session_id)
        return ("inject" if has_history else "new"), note

    async def _make_room(self) -> None:
        """End idle processes over the cap, least recently used first."""
        while len(self._sessions) >= self.max_processes:
            idle = next((s for s in self._sessions.values() if not s.busy), None)
            if idle is None:
                raise PoolFull(
                    f"all {self.max_processes} agent processes are busy; try again shortly"
                )
            log.info("ending agent process of %s (pool full)", idle.key)
            await self._end(self._sessions.pop(idle.key))

    # -- giving back, ending -------------------------------------------------------------

    def release(self, session: AcpSession, *, healthy: bool) -> None:
        """After a prompt: back to the pool, or (dead, or its state unknown) ended."""
        session.busy, session.last_used = False, self._clock()
        if not healthy or not session.process.alive:
            if self._sessions.get(session.key) is session:
                del self._sessions[session.key]
            self._end_later(session)

    def forget(self, agent_id: str, conversation_uuid: str) -> None:
        """Drop the conversation's process (deleted, regenerated, or its answer not
        stored): the next message starts afresh. Synchronous; the process ends in the
        background."""
        session = self._sessions.pop(self.key(agent_id, conversation_uuid), None)
        self._stale.add(self.key(agent_id, conversation_uuid))
        if session is not None:
            self._end_later(session)

    def _end_later(self, session: AcpSession) -> None:
        task = asyncio.ensure_future(self._end(session))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _end(self, session: AcpSession) -> None:
        try:
            await session.process.close()
        except Exception:
            log.exception("ending agent process %d failed", session.process.pid)

    def _ensure_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap_forever(), name="acp-reaper")

    async def _reap_forever(self) -> None:
        interval = max(0.05, min(self.idle_seconds / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            self.reap()

    def reap(self) -> int:
        """End the processes idle longer than ``idle_seconds`` (and dead ones)."""
        now = self._clock()
        ended = 0
        for session in list(self._sessions.values()):
            idle = now - session.last_used > self.idle_seconds
            if not session.busy and (idle or not session.process.alive):
                del self._sessions[session.key]
                self._end_later(session)
                ended += 1
        return ended

    async def close(self) -> None:
        """Shutdown: every process group ended, none left behind."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        sessions = list(self._sessions.values())
        self._sessions.clear()
        await asyncio.gather(*(self._end(s) for s in sessions), *self._closing)


def _state_path(agent_folder: Path, conversation_uuid: str) -> Path:
    """Where the agent's session id for a conversation is kept: beside the agent's logs,
    outside the folder the agent works in."""
    digest = hashlib.sha256(conversation_uuid.encode()).hexdigest()[:24]
    return agent_folder / "logs" / "acp" / f"{digest}.json"


def _read_state(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("sessionId") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


def _write_state(path: Path, session_id: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"sessionId": session_id}), encoding="utf-8")
    except OSError as exc:
        log.warning("cannot keep the agent's session id at %s: %s", path, exc)
