"""The one place bench/ reaches into the app. When the app's names move, fix them here.

What the benchmarks use: the memory tier as the app builds it, a chat turn's writes made
exactly as a run makes them, the running services (chat engine, providers, run events),
bulk seeding of stored conversations, and the tool machinery (built-ins, an MCP server as
a run reaches it, the runner). bench/api.py, ui.py and cluster.py otherwise drive a real
server over HTTP or a browser.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.definitions.tool_config import McpServerConfig as McpServerConfig
from lumina_app.agents.run.context import BuiltContext as BuiltContext
from lumina_app.agents.run.context import build_context as build_context
from lumina_app.agents.tools.builtin import builtin_tool as builtin_tool
from lumina_app.agents.tools.mcp import McpServer as McpServer
from lumina_app.agents.tools.runner import ToolRunner as ToolRunner
from lumina_app.agents.tools.spec import Tool as Tool
from lumina_app.agents.tools.spec import Toolbox as Toolbox
from lumina_app.agents.tools.spec import ToolContext as ToolContext
from lumina_app.archive import format as archive_files
from lumina_app.archive import writer as archive_writer
from lumina_app.archive.service import ArchiveService
from lumina_app.composition import Services, open_services
from lumina_app.domain import (
    LOCAL,
    ConversationInfo,
    ConversationStatus,
    MessageStatus,
    Msg,
    MsgRole,
    RunEvent,
    RunRecord,
    RunStatus,
    new_turn_id,
)

# What a provider yields and a run publishes, for bench/engine.py's instant provider and
# its reference loop (re-exported: the bench imports the app from this module only).
from lumina_app.domain import EventType as EventType
from lumina_app.domain import Finish as Finish
from lumina_app.domain import TextDelta as TextDelta
from lumina_app.domain import ToolCall as ToolCall
from lumina_app.domain import Usage as Usage
from lumina_app.memory import MemoryManager, MemoryReads
from lumina_app.recall import retriever as retriever
from lumina_app.recall.embedders import LocalEmbedder as LocalEmbedder
from lumina_app.recall.file_passages import FilePassages as FilePassages
from lumina_app.recall.retriever import Retriever as Retriever
from lumina_app.recall.retriever import UnitIndex as UnitIndex
from lumina_app.recall.retriever import Units as Units
from lumina_app.recall.worker import EmbedWorker
from lumina_app.recall.worker import unit_vectors as unit_vectors
from lumina_app.services.recall import RecallService as RecallService
from lumina_app.settings import load_settings
from lumina_app.storage.local.hot_window import LocalHotWindow
from lumina_app.storage.local.run_events import LocalRunEventLog as LocalRunEventLog
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import create_redis_client
from lumina_app.storage.redis.hot_window import RedisHotWindow
from lumina_app.storage.sql import recall_rows as recall_rows
from lumina_app.storage.sql import search as search
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from lumina_app.storage.sql.recall_rows import RecallRow as RecallRow

AGENT = "bench"

# -- the memory tier -----------------------------------------------------------------------


class Memory:
    """``MemoryManager`` over the cold store and a Redis (or, without a URL, in-process)
    hot window, built as lumina_app.composition builds them; on SQLite the write-ahead
    log is checkpointed every second off the loop's thread, as the app's services do."""

    def __init__(self, sync_url: str, redis_url: str | None, *, window: int = 20) -> None:
        settings = load_settings(database_url=sync_url)
        self.db = SQLDatabase(create_engine(settings.async_database_url))
        if redis_url:
            client = create_redis_client(redis_url, socket_timeout=settings.redis_socket_timeout)
            hot = RedisHotWindow(
                client,
                prefix="lumina-bench",
                window=window,
                ttl_seconds=settings.hot_ttl_seconds,
                breaker=CircuitBreaker(cooldown=settings.redis_breaker_cooldown),
            )
        else:
            hot = LocalHotWindow(window=window, max_conversations=100)
        cold = SQLColdStore(self.db)
        self.memory = MemoryManager(cold, hot, window=window, queries=ConversationQueries(self.db))
        self.reads = MemoryReads.over(cold, self.db, window=window)
        self._checkpoints = asyncio.create_task(self._checkpoint_forever())

    async def _checkpoint_forever(self) -> None:
        while self.db.is_sqlite:
            await asyncio.sleep(1.0)
            await self.db.checkpoint()

    @property
    def engines(self) -> list[sa.Engine]:
        """Every engine statements run on (for the probe)."""
        return self.db.engines

    async def close(self) -> None:
        self._checkpoints.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._checkpoints
        await self.memory.close()
        await self.db.close()


async def seed(
    memory: MemoryManager,
    texts: Sequence[str],
    *,
    title: str = "bench",
    agent_id: str = AGENT,
    stamps: Sequence[datetime] | None = None,
) -> ConversationInfo:
    """A stored conversation of ``len(texts)`` final messages (question first, then
    alternating; a turn id per pair), inserted 1,000 per transaction. Returned fresh."""
    cold = memory.cold
    created = stamps[0] if stamps else None
    conv = await cold.create_conversation(agent_id=agent_id, title=title, created_at=created)
    for start in range(0, len(texts), 1000):
        chunk = []
        for i in range(start, min(len(texts), start + 1000)):
            make = Msg.user if i % 2 == 0 else Msg.assistant
            stamp = {"created_at": stamps[i]} if stamps else {}
            chunk.append(make(texts[i], turn_id=f"msg-seed-{i // 2:06d}", **stamp))
        await cold.append_messages(conv.id, chunk, status=ConversationStatus.COMPLETED)
    return await ConversationQueries(cold.db).get_conversation(conv.uuid)


def seed_sync(
    database_url: str, agent_id: str, conversations: dict[str, tuple[str, Sequence[str]]]
) -> dict[str, str]:
    """``seed`` for a server's database before it starts: name -> (title, texts) gives
    name -> conversation uuid. Runs its own event loop in a thread (Playwright's sync API
    keeps one running in this one)."""

    async def run() -> dict[str, str]:
        store = Memory(database_url, None)
        try:
            out = {}
            for name, (title, texts) in conversations.items():
                conv = await seed(store.memory, texts, title=title, agent_id=agent_id)
                out[name] = conv.uuid
            return out
        finally:
            await store.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


# -- the archive (bench/archive.py) ---------------------------------------------------------


class Archive:
    """What ``python -m lumina_app export / import`` run: the archive service over the
    memory tier (in-process hot window)."""

    def __init__(self, sync_url: str, data_dir: Path) -> None:
        """Inside the running event loop."""
        self.store = Memory(sync_url, None)
        self.memory = self.store.memory
        self.lookup = self.store.reads.lookup
        self.service = ArchiveService(self.memory, self.lookup, self.store.reads.archive, data_dir)

    async def export(self, conversation: ConversationInfo, root: Path) -> Path:
        """The CLI's ``export --conversation ID --out ROOT``; returns the folder written."""
        await self.service.export_all(root, conversation_uuid=conversation.uuid)
        return archive_files.conversation_dir(root, conversation.agent_id, conversation.uuid)

    async def import_folder(self, folder: Path) -> tuple[int, list[str]]:
        """The CLI's ``import FOLDER``: (messages added, errors)."""
        report = await self.service.import_path(folder)
        return report.messages_added, report.errors

    async def rendered(self, conversation: ConversationInfo) -> tuple[list, dict[Path, bytes]]:
        """history.json's list and every file of the conversation's folder, in memory."""
        msgs = await self.store.reads.archive.final_messages(conversation)
        files = archive_files.conversation_files(conversation, msgs)
        return archive_files.archive_history(msgs), {Path(k): v for k, v in files.items()}

    async def delete(self, conversation: ConversationInfo) -> None:
        await self.memory.cold.delete_conversation(conversation.id)

    async def close(self) -> None:
        await self.store.close()


# -- a chat turn's writes --------------------------------------------------------------------


@dataclass
class Turn:
    conversation: ConversationInfo
    user: Msg
    assistant: Msg
    record: RunRecord


async def accept(memory: MemoryManager, conversation: ConversationInfo, question: str) -> Turn:
    """The accept transaction as ``TurnPreparer.accept`` makes it: the question, a
    ``streaming`` answer row and the run record (``begin_conversation`` for a conversation
    not stored yet, from ``new_conversation``; else ``begin_turn``)."""
    new = conversation.id is None
    record = RunRecord(
        run_id="run-" + secrets.token_hex(8),
        conversation_pk=conversation.id,
        agent_id=conversation.agent_id,
        owner=conversation.owner,
        scenario="new" if new else "continue",
        provider="bench",
        model="bench",
        context_first_seq=None if new else max(1, conversation.last_seq - 19),
        context_last_seq=None if new else conversation.last_seq,
        context_messages=0 if new else min(20, conversation.last_seq),
    )
    turn_id = new_turn_id()
    meta = {"provider": "bench", "model": "bench", "runId": record.run_id}
    begin = memory.begin_conversation if new else memory.begin_turn
    user, assistant = await begin(
        conversation,
        Msg.user(question, turn_id=turn_id),
        Msg.assistant("", turn_id=turn_id, meta=meta),
        record,
    )
    return Turn(conversation, user, assistant, record)


async def finish(memory: MemoryManager, turn: Turn, answer: str) -> None:
    """The final write as ``RunDriver._finish`` / ``_store_final`` make it for a complete
    run: the fenced answer UPDATE, the conversation and the run, then the hot window."""
    turn.assistant.content = answer
    turn.assistant.status = MessageStatus.COMPLETE
    turn.assistant.meta = dict(
        turn.assistant.meta,
        usage={"promptTokens": 60, "completionTokens": 50},
        finishReason="stop",
    )
    turn.record.status = RunStatus.COMPLETE.value
    written = await memory.finish_answer(
        turn.conversation,
        turn.assistant,
        conversation_status=ConversationStatus.COMPLETED,
        run=turn.record,
    )
    assert written, "the final write was fenced off"


def new_conversation(title: str = "bench") -> ConversationInfo:
    """A conversation not stored yet: its first turn's accept inserts it."""
    return ConversationInfo.new(agent_id=AGENT, title=title)


# -- the running services (bench/engine.py) -------------------------------------------------


class App:
    """``open_services`` on a temp database and data folder holding the agent ``bench``."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.memory = services.memory
        self.settings = services.settings
        self._chat = services.chat
        self._real = {
            name: getattr(self.memory, name)
            for name in ("begin_turn", "begin_conversation", "finish_answer", "flush_answer")
        }
        self._for_agent = services.providers.for_agent
        self._flush = (self.settings.flush_chars, self.settings.flush_interval_ms)

    @classmethod
    async def open(
        cls,
        sync_url: str,
        data_dir: Path,
        redis_url: str | None,
        agents: dict[str, dict[str, Any]] | None = None,
    ) -> App:
        """With the agent ``bench`` and any ``agents`` (id: config.json) besides."""
        for agent_id, config in {AGENT: {"name": "Bench"}, **(agents or {})}.items():
            folder = data_dir / "agents" / agent_id
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
        settings = load_settings(
            database_url=sync_url,
            data_dir=data_dir,
            redis_url=redis_url,
            redis_prefix="lumina-bench",
            demo_delay_ms=0,
        )
        return cls(await open_services(settings))

    def describe(self) -> str:
        return (
            f"hot window: {self.memory.hot_backend}; run events: "
            f"{type(self.services.events).__name__}; flush every "
            f"{self.settings.flush_interval_ms:.0f} ms or {self.settings.flush_chars} chars; "
            f"context window {self.settings.context_window}"
        )

    @property
    def engines(self) -> list[sa.Engine]:
        return self.services.db.engines

    def stream(
        self, message: str, conversation: str | None, agent: str = AGENT
    ) -> AsyncIterator[RunEvent]:
        """``execute_stream``: accept a message, then follow its run's events."""
        return self.services.runs.stream(
            LOCAL, agent_id=agent, message=message, conversation_uuid=conversation
        )

    async def tool_calls(self, conversation: str) -> int:
        return (await self.services.reads.lookup.get_conversation(conversation)).tool_call_count

    async def settle(self, conversation: str | None) -> None:
        """Wait until the conversation's run (if any) has fully finished."""
        run = self._chat.active_run_for(conversation) if conversation else None
        if run is not None:
            await run.done.wait()

    async def forget(self, conversation: str, *, window: bool) -> None:
        """Drop the warm session (next run: *resume*) and with ``window`` the hot window
        too (the window is then rebuilt from SQL)."""
        self._chat.sessions.drop(AGENT, conversation)
        if window:
            await self.memory.hot.delete(conversation)

    async def message_count(self, conversation: str) -> int:
        return (await self.services.reads.lookup.get_conversation(conversation)).message_count

    def use_provider(self, provider: Any | None) -> None:
        """Every run gets ``provider`` (None: the configured one again)."""
        providers = self.services.providers
        providers.for_agent = (lambda agent: provider) if provider else self._for_agent

    def wrap_writes(self, wrap: Callable[[str, Callable], Callable] | None) -> None:
        """Route the run's store writes through ``wrap(phase, fn)``: phase ``accept``
        (begin_turn / begin_conversation), ``flush`` (a growing answer) or ``final``.
        None puts the real ones back."""
        for name, phase in (
            ("begin_turn", "accept"),
            ("begin_conversation", "accept"),
            ("flush_answer", "flush"),
            ("finish_answer", "final"),
        ):
            real = self._real[name]
            setattr(self.memory, name, wrap(phase, real) if wrap else real)

    def persistence(self, on: bool) -> None:
        """Off: answer flushes and the final write are no-ops and the flusher's triggers
        are out of reach (it only collects the text); the accept still commits."""
        settings = self.settings
        if on:
            settings.flush_chars, settings.flush_interval_ms = self._flush
            self.wrap_writes(None)
        else:
            settings.flush_chars, settings.flush_interval_ms = 10**12, 10**9
            self.wrap_writes(lambda phase, fn: fn if phase == "accept" else _written)

    def agent(self, agent_id: str) -> AgentDefinition:
        agent = self.services.registry.get(agent_id)
        assert agent is not None, agent_id
        return agent

    def time_summaries(self) -> Any:
        """Time every ``SummaryKeeper.catch_up`` from now on; returns the Samples it fills
        (bench/_common.Samples: nanoseconds)."""
        from _common import Samples

        keeper = self.services.chat.summaries
        real, out = keeper.catch_up, Samples()

        async def timed(agent: AgentDefinition, conversation_uuid: str) -> Any:
            t0 = time.perf_counter_ns()
            try:
                return await real(agent, conversation_uuid)
            finally:
                out.ns.append(time.perf_counter_ns() - t0)

        keeper.catch_up = timed
        return out

    async def summaries_idle(self) -> None:
        """Until the summaries being written after the last runs are written."""
        await self.services.chat.summaries.wait()

    async def summaries_of(self, conversation: str) -> int:
        conv = await self.services.reads.lookup.get_conversation(conversation)
        return len(await self.services.reads.archive.summaries_of(conv))

    async def drop_runs(self, run_ids: Sequence[str]) -> None:
        """Finished runs' event buffers (kept for resuming), so they do not pile up."""
        events = self.services.events
        flush: Callable[[], Awaitable[None]] | None = getattr(events, "flush", None)
        if flush is not None:  # the Redis copy: written in batches
            await flush()
        for run_id in run_ids:
            await events.delete(run_id)

    async def close(self) -> None:
        self.use_provider(None)
        self.persistence(True)
        await self.services.close()


async def _written(*args: object, **kwargs: object) -> bool:
    return True


# -- recall (bench/locomo.py) ----------------------------------------------------------------


def write_archive(root: Path, title: str, turns: Sequence[tuple[bool, str, datetime]]) -> str:
    """One conversation in the archive layout under ``root``: (from user?, text, time) per
    message; returns its conversationId."""
    conversation = ConversationInfo.new(agent_id="assistant", title=title)
    msgs = [
        Msg(MsgRole.USER if user else MsgRole.ASSISTANT, content, seq=i, turn_id=new_turn_id(),
            created_at=when, updated_at=when)
        for i, (user, content, when) in enumerate(turns, start=1)
    ]  # fmt: skip
    conversation.created_at = conversation.updated_at = msgs[-1].created_at
    archive_writer.write_files(root, archive_files.conversation_files(conversation, msgs))
    return conversation.uuid


def import_and_embed(sync_url: str, root: Path, *, embed: bool = True) -> tuple[int, int, float]:
    """``python -m lumina_app import ROOT`` then ``embed``, as the CLI runs them: (messages
    imported, vectors written, embedding CPU seconds). ``embed=False``: the import alone
    (the server's worker embeds what a recall finds missing)."""

    async def run() -> tuple[int, int, float]:
        archive = Archive(sync_url, root)
        try:
            added, errors = await archive.import_folder(root)
            assert not errors, errors
            if not embed:
                return added, 0, 0.0
            worker = EmbedWorker(archive.memory.cold.db, LocalEmbedder())
            cpu = time.process_time()
            written = await worker.embed_pending()
            return added, written, time.process_time() - cpu
        finally:
            await archive.close()

    return asyncio.run(run())


# -- acp agents (bench/acp.py) -------------------------------------------------------------
from lumina_app.agents.definitions.acp_config import AcpConfig as AcpConfig  # noqa: E402
from lumina_app.agents.providers.acp.pool import AcpPool as AcpPool  # noqa: E402
from lumina_app.agents.providers.acp.provider import AcpProvider as AcpProvider  # noqa: E402
