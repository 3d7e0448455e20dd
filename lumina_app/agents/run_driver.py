"""Driving one accepted run to its end: generation, the growing answer's flushes, the
lease heartbeat, the final (fenced, retried) write, and the run's events."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lumina_app.agents.context import BuiltContext
from lumina_app.agents.flusher import AnswerFlusher
from lumina_app.agents.providers import Provider
from lumina_app.agents.registry import AgentDefinition
from lumina_app.agents.sessions import Session, SessionPool
from lumina_app.domain import (
    AnswerChunk,
    ConversationInfo,
    ConversationStatus,
    Finish,
    MessageStatus,
    Msg,
    ProviderError,
    RunEvent,
    RunFailed,
    RunFinished,
    RunPayload,
    RunRecord,
    RunStatus,
    Scenario,
    StoreUnavailable,
    Summary,
    TextDelta,
    ThinkingChunk,
    ThinkingDelta,
    ToolCall,
    ToolCallRequested,
    Usage,
)
from lumina_app.memory import MemoryManager
from lumina_app.settings import Settings
from lumina_app.storage.run_events import RunEventLog
from lumina_app.storage.run_locks import RunLocks

log = logging.getLogger(__name__)

_CONVERSATION_STATUS = {
    RunStatus.COMPLETE: ConversationStatus.COMPLETED,
    RunStatus.STOPPED: ConversationStatus.COMPLETED,
    RunStatus.INTERRUPTED: ConversationStatus.FAILED,
    RunStatus.FAILED: ConversationStatus.FAILED,
}


@dataclass(eq=False)
class ActiveRun:
    """A run in this process: what it answers, and how to stop or await it."""

    run_id: str
    conversation: ConversationInfo
    agent: AgentDefinition
    owner: str
    record: RunRecord
    user: Msg
    assistant: Msg
    context: BuiltContext
    provider: Provider
    window_history: list[Msg]
    summary: Summary | None = None  # the rolling summary the context was built with
    next_event_id: int = 1
    stop_reason: RunStatus | None = None
    generating: bool = True
    task: asyncio.Task | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    result: RunFinished | None = None

    @property
    def scenario(self) -> Scenario:
        return self.record.scenario


class RunDriver:
    """Runs the generation task of each accepted run; ``on_end`` lets the engine forget it."""

    def __init__(
        self,
        *,
        settings: Settings,
        memory: MemoryManager,
        sessions: SessionPool,
        events: RunEventLog,
        locks: RunLocks,
        on_end: Callable[[ActiveRun], None],
    ) -> None:
        self.settings = settings
        self.memory = memory
        self.sessions = sessions
        self.events = events
        self.locks = locks
        self.on_end = on_end

    async def publish(self, run: ActiveRun, payload: RunPayload) -> None:
        event = RunEvent(run.next_event_id, payload)
        run.next_event_id += 1
        await self.events.publish(run.run_id, event)

    def request_stop(self, run: ActiveRun, reason: RunStatus) -> None:
        # Only generation is cancellable: the final write must never be cut short.
        if run.stop_reason is None and run.generating and run.task is not None:
            run.stop_reason = reason
            run.task.cancel()

    async def generate(self, run: ActiveRun) -> None:
        flusher = AnswerFlusher(
            lambda text: self.memory.flush_answer(run.assistant.id, text),
            interval=self.settings.flush_interval_ms / 1000,
            chars=self.settings.flush_chars,
        )
        heartbeat = None  # a lease only means something when other instances share the locks
        if self.locks.shared:
            heartbeat = asyncio.create_task(self._heartbeat(run), name=f"{run.run_id}-lease")
        status, error = RunStatus.COMPLETE, None
        usage: dict[str, int] = {}
        thinking: list[str] = []
        tool_calls: list[dict[str, str]] = []
        finish_reason = None
        try:
            async for item in run.provider.stream(run.context.messages):
                if isinstance(item, TextDelta):
                    flusher.add(item.text)
                    await self.publish(run, AnswerChunk(item.text))
                elif isinstance(item, ThinkingDelta):
                    thinking.append(item.text)
                    await self.publish(run, ThinkingChunk(item.text))
                elif isinstance(item, ToolCall):
                    call = {"id": item.call_id, "name": item.name, "arguments": item.arguments}
                    tool_calls.append(call)
                    await self.publish(
                        run, ToolCallRequested(item.call_id, item.name, item.arguments)
                    )
                elif isinstance(item, Usage):
                    usage = {
                        "promptTokens": item.prompt_tokens,
                        "completionTokens": item.completion_tokens,
                    }
                elif isinstance(item, Finish):
                    finish_reason = item.reason
                elif isinstance(item, ProviderError):
                    status, error = RunStatus.FAILED, item.message
                    break
        except asyncio.CancelledError:
            if run.stop_reason is None:
                raise
            status = run.stop_reason
            error = "stopped by the user" if status is RunStatus.STOPPED else "run interrupted"
        except Exception as exc:  # a provider bug must still end the run cleanly
            log.exception("provider %s raised", run.provider.name)
            status, error = RunStatus.FAILED, f"provider crashed: {exc}"
        finally:
            run.generating = False
            if heartbeat is not None:
                heartbeat.cancel()
            await flusher.close()
        meta = dict(run.assistant.meta)
        meta.update(usage=usage, finishReason=finish_reason)
        if thinking:
            meta["thinking"] = "".join(thinking)
        if tool_calls:
            meta["toolCalls"] = tool_calls
        if error and status is not RunStatus.COMPLETE:
            meta["error"] = error
        await self._finish(run, flusher.text, status, error, meta, len(tool_calls))

    async def _finish(
        self,
        run: ActiveRun,
        text: str,
        status: RunStatus,
        error: str | None,
        meta: dict[str, Any],
        tool_calls: int,
    ) -> None:
        assistant = run.assistant
        assistant.content = text
        assistant.status = MessageStatus(status.value)
        assistant.meta = meta
        run.record.status = status
        run.record.error = error if status is not RunStatus.COMPLETE else None
        stored = await self._store_final(run, tool_calls)
        if stored:
            history = ([*run.window_history, run.user, assistant])[-self.settings.context_window :]
            self.sessions.put(
                Session(run.agent.id, run.conversation.uuid, history, assistant.seq, run.summary)
            )
        else:
            self.sessions.drop(run.agent.id, run.conversation.uuid)
        status = run.record.status
        run.result = RunFinished(
            run_id=run.run_id,
            conversation_id=run.conversation.uuid,
            message_id=assistant.id,
            turn_id=assistant.turn_id,
            status=status,
            content=text,
            scenario=run.scenario,
            usage=meta.get("usage") or {},
            error=error if status is not RunStatus.COMPLETE else None,
        )
        # The conversation is free before anyone hears the run ended: a client that sends
        # its next message the moment it reads the result must not find it still busy.
        self.on_end(run)
        await self.locks.release(run.conversation.uuid, run.run_id)
        try:
            if status is RunStatus.FAILED:
                await self.publish(run, RunFailed(error or "failed", assistant.id))
            await self.publish(run, run.result)
            await self.events.finish(run.run_id)
        finally:
            run.done.set()

    async def _heartbeat(self, run: ActiveRun) -> None:
        """Keep the run's lease; if it was lost (this instance stalled past the lease and
        a survivor closed the run), stop generating: the store is fenced against us."""
        interval = self.settings.run_lease_seconds / 3
        while True:
            await asyncio.sleep(interval)
            if not await self.locks.renew(run.conversation.uuid, run.run_id):
                log.warning("run %s lost its lease; stopping it", run.run_id)
                self.request_stop(run, RunStatus.INTERRUPTED)
                return

    async def _store_final(self, run: ActiveRun, tool_calls: int) -> bool:
        """The final write matters most: retry it briefly; if SQL stays away, the start-up
        sweep marks the row interrupted (its last flushed text is kept)."""
        for attempt in range(4):
            try:
                written = await self.memory.finish_answer(
                    run.conversation,
                    run.assistant,
                    conversation_status=_CONVERSATION_STATUS[run.record.status],
                    tool_calls=tool_calls,
                    run=run.record,
                )
                if not written:  # a survivor closed this run already: it stays interrupted
                    run.assistant.status = MessageStatus.INTERRUPTED
                    run.record.status = RunStatus.INTERRUPTED
                return written
            except StoreUnavailable as exc:
                if attempt == 3:
                    log.warning("final write of %s failed: %s", run.run_id, exc)
                    return False
                await asyncio.sleep(0.2 * (attempt + 1))
        return False
