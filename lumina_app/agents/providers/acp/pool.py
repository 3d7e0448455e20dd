"""The ACP session pool (seed 004 §16.3): one agent process and ACP session per active
``agentId:conversationId``. Capped (least recently used idle process ended first), ended
after an idle timeout, a bounded number starting at once, and shared fairly: one owner
holds at most ``max_per_owner`` busy processes and ``max_asks_per_owner`` waiting
permission prompts. A process that died is dropped and the next message starts a new one,
which resumes or loads its session, or is given the stored history.

A conversation's working folder and its session record are keyed by owner and
conversation (``workspace/.owners/<owner>/<conversation>``, ``logs/acp/owners/<digest>``)
and removed when the conversation is deleted; folders of the layout before that
(``workspace/<conversation>``, keyed by the uuid alone) are never used again, and are
removed with their conversation."""

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

from lumina_app.agents.definitions.acp_config import AcpConfig
from lumina_app.agents.providers.acp import files
from lumina_app.agents.providers.acp.client import LuminaClient
from lumina_app.agents.providers.acp.files import AgentFiles, FileRefused
from lumina_app.agents.providers.acp.process import AgentProcess, AgentStartError, start_agent
from lumina_app.domain import LuminaError, TooManyRuns
from lumina_app.domain.access import SAFE_NAME
from lumina_app.domain.tasks import keep

log = logging.getLogger(__name__)

# How a run got its session: a live process (B), a new conversation (A), or a new process
# for a conversation with history (C) that resumed, loaded, or was given the history.
Mode = Literal["live", "new", "resume", "load", "inject"]


OWNERS = ".owners"  # not a conversation id (those start with a letter or digit)
_STATE_BYTES = 64 * 1024


class PoolFull(RuntimeError):
    """Every agent process allowed is busy with a prompt: none can be ended for a new one."""


class AcpShareFull(TooManyRuns):
    """The owner already holds their share of the agent processes (429); nothing started."""

    code = "acp_share_full"

    def __init__(self, limit: int) -> None:
        LuminaError.__init__(
            self,
            f"at most {limit} agent processes may be busy at once per owner "
            "(LUMINA_ACP_MAX_PER_OWNER); wait for one of your runs to end and retry",
        )


@dataclass(eq=False)
class AcpSession:
    key: str
    agent_id: str
    conversation_uuid: str
    owner: str
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


def _name(value: str, prefix: str) -> str:
    """A folder name for ``value``: itself when it is a safe name, else a digest."""
    return value if SAFE_NAME.fullmatch(value) else prefix + _digest(value)[:16]


def _digest(*values: str) -> str:
    return hashlib.sha256("\0".join(values).encode()).hexdigest()


def conversation_folder(
    agent_folder: Path, config: AcpConfig, owner: str, conversation_uuid: str
) -> Path:
    """The conversation's own working folder under the agent's ``cwd`` (``workspace/``),
    below its owner's: an import that reuses a uuid for someone else never lands in it."""
    return agent_folder / config.cwd / _below_cwd(owner, conversation_uuid)


def _below_cwd(owner: str, conversation_uuid: str) -> Path:
    owner_name = "u-" + owner if SAFE_NAME.fullmatch(owner) else "h-" + _digest(owner)[:24]
    return Path(OWNERS, owner_name, _name(conversation_uuid, "c-"))


def legacy_folder(agent_folder: Path, config: AcpConfig, conversation_uuid: str) -> Path:
    """Where the folder was kept before it was keyed by owner (never used again)."""
    return agent_folder / config.cwd / _name(conversation_uuid, "c-")


class AcpPool:
    def __init__(
        self,
        *,
        max_processes: int = 16,
        idle_seconds: float = 600.0,
        max_starting: int = 2,
        start_timeout: float = 30.0,
        ask_timeout: float = 120.0,
        max_per_owner: int | None = None,
        max_asks_per_owner: int | None = None,
        file_timeout: float = 10.0,
        max_file_bytes: int = files.MAX_FILE_BYTES,
        clock=time.monotonic,
    ) -> None:
        self.max_processes = max_processes
        self.max_per_owner = max_per_owner or max(1, max_processes // 4)
        self.max_asks_per_owner = max_asks_per_owner or self.max_per_owner
        # File work an agent can influence, on threads of its own with a deadline.
        self.files = AgentFiles(workers=4, timeout=file_timeout, max_bytes=max_file_bytes)
        self.idle_seconds = idle_seconds
        self.start_timeout = start_timeout
        self.ask_timeout = ask_timeout
        self._clock = clock
        self._starting = asyncio.Semaphore(max_starting)
        self._sessions: OrderedDict[str, AcpSession] = OrderedDict()
        self._closing: set[asyncio.Task] = set()
        self._ending: dict[str, asyncio.Task] = {}  # key → its process being ended
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
        owner: str = "",
        has_history: bool,
    ) -> Opened:
        """The conversation's session, taken for one prompt (``release`` gives it back):
        the live one, else a new process with its session resumed, loaded or new. The
        owner at their share of busy processes: AcpShareFull."""
        self._ensure_reaper()
        key = self.key(agent_id, conversation_uuid)
        if self.busy_of(owner) >= self.max_per_owner:
            raise AcpShareFull(self.max_per_owner)
        session = self._sessions.get(key)
        if session is not None and session.owner != owner:  # the uuid changed hands
            self._stale.add(key)
        elif session is not None and session.process.alive and not session.busy:
            session.busy, session.last_used = True, self._clock()
            self._sessions.move_to_end(key)
            return Opened(session, "live")
        if session is not None:  # died (or, busy, a stop left it): a new process loads it
            del self._sessions[key]
            self._end_later(session)
        await self._make_room()
        folder = conversation_folder(agent_folder, config, owner, conversation_uuid)
        state = _state_path(agent_folder, owner, conversation_uuid)
        client = LuminaClient(
            folder,
            config.permissions,
            files=self.files,
            ask_timeout=self.ask_timeout,
            may_ask=lambda: self._ask_refusal(owner),
        )
        if client.folder != (agent_folder / config.cwd).resolve() / _below_cwd(
            owner, conversation_uuid
        ):  # a link planted below the agent's cwd would move its folder elsewhere
            raise AgentStartError("the conversation's folder is reached through a symbolic link")
        async with self._starting:
            process = await start_agent(
                config,
                folder,
                client,
                stderr_path=state.with_suffix(".stderr.log"),
                start_timeout=self.start_timeout,
            )
        try:
            mode, note = await self._session(process, folder, state, has_history, key)
        except BaseException:
            await process.close(grace=0.5)
            raise
        session = AcpSession(key, agent_id, conversation_uuid, owner, folder, process, busy=True)
        session.last_used = self._clock()
        self._sessions[key] = session
        return Opened(session, mode, note)

    def busy_of(self, owner: str) -> int:
        """How many processes the owner's runs hold now."""
        return sum(1 for s in self._sessions.values() if s.busy and s.owner == owner)

    def _ask_refusal(self, owner: str) -> str | None:
        """Why the owner's agents may not ask the person one more question now, if so."""
        waiting = sum(
            len(s.process.client.pending) for s in self._sessions.values() if s.owner == owner
        )
        if waiting < self.max_asks_per_owner:
            return None
        return (
            f"rejected: at most {self.max_asks_per_owner} permission requests may wait per "
            "owner (LUMINA_ACP_MAX_ASKS_PER_OWNER)"
        )

    async def _session(
        self, process: AgentProcess, folder: Path, state: Path, has_history: bool, key: str
    ) -> tuple[Mode, str]:
        cwd = str(process.client.folder)  # resolved
        stale = key in self._stale
        self._stale.discard(key)
        stored = await self._read_state(state) if has_history and not stale else None
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
        await self._write_state(state, reply.session_id)
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
        task = self._ending[session.key] = keep(self._closing, self._end(session))
        task.add_done_callback(lambda t, key=session.key: self._ended(key, t))

    def _ended(self, key: str, task: asyncio.Task) -> None:
        if self._ending.get(key) is task:
            del self._ending[key]

    async def remove(
        self, agent_id: str, agent_folder: Path, config: AcpConfig, owner: str, uuid: str
    ) -> None:
        """A deleted conversation: its process ended (awaited), then its folder, session
        record and stderr log removed — and the folder and record of the layout keyed by
        the uuid alone, if one was left from before."""
        key = self.key(agent_id, uuid)
        self.forget(agent_id, uuid)
        ending = self._ending.get(key)
        if ending is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(10):
                    await asyncio.shield(ending)
        self._stale.discard(key)  # nothing of it is left to be stale
        state = _state_path(agent_folder, owner, uuid)
        old_state = _legacy_state_path(agent_folder, uuid)
        for path in (
            conversation_folder(agent_folder, config, owner, uuid),
            state,
            state.with_suffix(".stderr.log"),
            legacy_folder(agent_folder, config, uuid),
            old_state,
            old_state.with_suffix(".stderr.log"),
        ):
            try:
                await self.files.remove_tree(path)
            except (FileRefused, OSError) as exc:
                log.warning("agent files of %s not removed (%s): %s", key, path, exc)

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
        self.files.close()

    async def _read_state(self, path: Path) -> str | None:
        try:
            raw = await self.files.run(lambda: files.read_small(path, _STATE_BYTES))
        except FileRefused as exc:
            log.warning("the agent's session record %s not read: %s", path, exc)
            return None
        try:
            data = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        value = data.get("sessionId") if isinstance(data, dict) else None
        return value if isinstance(value, str) and value else None

    async def _write_state(self, path: Path, session_id: str) -> None:
        data = json.dumps({"sessionId": session_id}).encode()
        try:
            await self.files.run(lambda: files.write_small(path, data))
        except (FileRefused, OSError) as exc:
            log.warning("cannot keep the agent's session id at %s: %s", path, exc)


def _state_path(agent_folder: Path, owner: str, conversation_uuid: str) -> Path:
    """Where the agent's session id for a conversation is kept: beside the agent's logs,
    outside the folder the agent works in, keyed by owner and conversation."""
    digest = _digest(owner, conversation_uuid)[:32]
    return agent_folder / "logs" / "acp" / "owners" / f"{digest}.json"


def _legacy_state_path(agent_folder: Path, conversation_uuid: str) -> Path:
    """The session record keyed by the uuid alone (before the owner was part of the key)."""
    digest = hashlib.sha256(conversation_uuid.encode()).hexdigest()[:24]
    return agent_folder / "logs" / "acp" / f"{digest}.json"
