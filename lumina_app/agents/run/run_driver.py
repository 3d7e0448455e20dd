"""Driving one accepted run to its end: generation, the growing answer's flushes, the
lease heartbeat, the final (fenced, retried) write, and the run's events."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.providers.factory import Provider
from lumina_app.agents.run import client_tools
from lumina_app.agents.run.context import BuiltContext, carried, chat_message
from lumina_app.agents.run.flusher import AnswerFlusher
from lumina_app.agents.run.run_cap import RunCap
from lumina_app.agents.run.sessions import Session, SessionPool
from lumina_app.agents.run.step import Step, finished_event, tool_rows
from lumina_app.agents.tools.catalog import ToolCatalog
from lumina_app.agents.tools.runner import CallResult, ToolRunner, cancelled
from lumina_app.agents.tools.spec import ToolContext
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
    ToolCallFinished,
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
    # Rows of this turn already final (earlier tool steps: answers and TOOL results).
    settled: list[Msg] = field(default_factory=list)
    step: Step | None = None
    tool_names: frozenset[str] = frozenset()  # what the model was offered (metrics)
    next_event_id: int = 1
    stop_reason: RunStatus | None = None
    generating: bool = True
    task: asyncio.Task | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    result: RunFinished | None = None

    @property
    def scenario(self) -> Scenario:
        return self.record.scenario


@dataclass(eq=False, repr=False, kw_only=True)
class RunDriver:
    """Runs the generation task of each accepted run; ``on_end`` lets the engine forget it."""

    settings: Settings
    memory: MemoryManager
    sessions: SessionPool
    events: RunEventLog
    locks: RunLocks
    tools: ToolCatalog
    cap: RunCap
    on_end: Callable[[ActiveRun], None]
    # Called with each event's run and payload as it is published (metrics).
    observers: list[Callable[[ActiveRun, RunPayload], None]] = field(
        default_factory=list, init=False
    )

    async def publish(self, run: ActiveRun, payload: RunPayload) -> None:
        event = RunEvent(run.next_event_id, payload)
        run.next_event_id += 1
        for observe in self.observers:  # metrics: quick, synchronous, never raising
            observe(run, payload)
        await self.events.publish(run.run_id, event)

    def request_stop(self, run: ActiveRun, reason: RunStatus) -> None:
        # Only generation is cancellable: a step's commit and the final write must never be
        # cut short. A stop during a step's commit is acted on once it is stored.
        if run.stop_reason is not None or run.task is None or run.done.is_set():
            return
        run.stop_reason = reason
        if run.generating:
            run.task.cancel()

    async def generate(self, run: ActiveRun) -> None:
        """Steps until the model answers without tools (or the step limit, a stop, a
        failure); each tool step is committed as it ends, the last answer by the final
        write."""
        heartbeat = None  # a lease only means something when other instances share the locks
        if self.locks.shared:
            heartbeat = asyncio.create_task(self._heartbeat(run), name=f"{run.run_id}-lease")
        base_meta = dict(run.assistant.meta) | client_tools.answer_meta()
        step = self._step(run)
        results: dict[str, CallResult] = {}
        try:
            status, error = await self._steps(run, step, results, base_meta)
        except asyncio.CancelledError:
            if run.stop_reason is None:
                raise
            status, error = run.stop_reason, _stopped(run.stop_reason)
        except Exception as exc:  # a provider bug must still end the run cleanly
            log.exception("provider %s raised", run.provider.name)
            status, error = RunStatus.FAILED, f"provider crashed: {exc}"
        finally:
            run.generating = False
            if heartbeat is not None:
                heartbeat.cancel()
            step = run.step or step
            await step.flusher.close()
        if step.calling:  # stopped during the calls: those still going get a result too
            elapsed = round((time.monotonic() - step.calls_started) * 1000)
            for call in step.calls:
                if call.call_id not in results and call not in step.client_calls:
                    results[call.call_id] = cancelled(call, error or "cancelled", elapsed)
                    await self.publish(run, finished_event(results[call.call_id]))
        meta = step.meta(base_meta, results if step.calling else None)
        if error and status is not RunStatus.COMPLETE:
            meta["error"] = error
        rows = tool_rows(step.calls, results, run.assistant.turn_id) if step.calling else []
        await self._finish(run, step.flusher.text, status, error, meta, rows)

    async def _steps(
        self,
        run: ActiveRun,
        step: Step,
        results: dict[str, CallResult],
        base_meta: dict[str, Any],
    ) -> tuple[RunStatus, str | None]:
        # May start the agent's MCP servers; a temporary conversation gets no memory tools.
        toolbox = await self.tools.toolbox(run.agent, temporary=run.conversation.temporary)
        theirs, client_names = client_tools.current(frozenset(toolbox.tools))
        specs = toolbox.specs() + theirs
        run.tool_names = frozenset(toolbox.tools)
        limits = run.agent.tools
        context = ToolContext(
            run.agent.id, run.conversation.uuid, run.owner, run.run_id, turn_seq=run.user.seq
        )
        runner = ToolRunner(toolbox, context, timeout=limits.timeout)
        for number in itertools.count(1):
            status, error = await self._stream(run, step, specs)
            await step.flusher.close()
            if status is not RunStatus.COMPLETE or not step.calls:
                return status, error
            await self._announce_calls(run, step, client_names)
            step.calling, step.calls_started = True, time.monotonic()
            if number > limits.max_steps:  # the model keeps asking: it gets no more calls
                error = f"maxToolSteps ({limits.max_steps}) reached: the model kept calling tools"
                for call in step.calls:
                    results[call.call_id] = cancelled(call, f"not run: {error}", 0)
                    await self.publish(run, finished_event(results[call.call_id]))
                return RunStatus.FAILED, error
            step.client_calls = [call for call in step.calls if call.name in client_names]
            ours = [call for call in step.calls if call.name not in client_names]
            await runner.run(ours, results, lambda r: self.publish(run, finished_event(r)))
            if step.client_calls:  # the client runs those: the run ends, the calls pending
                return RunStatus.COMPLETE, None
            run.generating = False  # a step's commit, like the final write, is not cut short
            stored = await self._store_step(run, step, results, base_meta)
            run.generating = True
            if stored is not True:
                return stored
            step = self._step(run)
            results.clear()
            if run.stop_reason is not None:  # asked while the step was being stored
                return run.stop_reason, _stopped(run.stop_reason)
        raise AssertionError("unreachable")

    def _step(self, run: ActiveRun) -> Step:
        answer_id = run.assistant.id
        run.step = Step(
            AnswerFlusher(
                lambda text: self.memory.flush_answer(answer_id, text),
                interval=self.settings.flush_interval_ms / 1000,
                chars=self.settings.flush_chars,
                withdraw=lambda: self.memory.withdraw_flush(answer_id),
            )
        )
        return run.step

    async def _stream(
        self, run: ActiveRun, step: Step, specs: list[dict[str, Any]]
    ) -> tuple[RunStatus, str | None]:
        """One provider call streamed into the step's answer row."""
        async for item in run.provider.stream(run.context.messages, specs):
            if isinstance(item, TextDelta):
                step.flusher.add(item.text)
                await self.publish(run, AnswerChunk(item.text))
            elif isinstance(item, ThinkingDelta):
                step.thinking.append(item.text)
                await self.publish(run, ThinkingChunk(item.text))
            elif isinstance(item, ToolCall):
                step.add_call(item)
            elif isinstance(item, Usage):
                step.usage = {
                    "promptTokens": item.prompt_tokens,
                    "completionTokens": item.completion_tokens,
                }
            elif isinstance(item, Finish):
                step.finish_reason = item.reason
            elif isinstance(item, ToolCallRequested | ToolCallFinished):  # an acp agent's own
                await self._agent_tool(run, step, item)
            elif isinstance(item, ProviderError):
                step.calls.clear()  # a call from a failed answer is not made
                return RunStatus.FAILED, item.message
        return RunStatus.COMPLETE, None

    async def _agent_tool(
        self, run: ActiveRun, step: Step, item: ToolCallRequested | ToolCallFinished
    ) -> None:
        """A tool the agent ran itself (acp): shown and kept in the answer's meta."""
        if isinstance(item, ToolCallRequested):
            item = dataclasses.replace(
                item, message_id=run.assistant.id or 0, seq=run.assistant.seq, by_agent=True
            )
        step.agent_tools.append({"event": item.kind.value, **item.wire()})
        await self.publish(run, item)

    async def _announce_calls(
        self, run: ActiveRun, step: Step, client_names: frozenset[str]
    ) -> None:
        answer = run.assistant
        for call in step.calls:
            await self.publish(
                run,
                ToolCallRequested(
                    call.call_id,
                    call.name,
                    call.arguments,
                    answer.id or 0,
                    answer.seq,
                    by_client=call.name in client_names,
                ),
            )

    async def _store_step(
        self,
        run: ActiveRun,
        step: Step,
        results: dict[str, CallResult],
        base_meta: dict[str, Any],
    ) -> Literal[True] | tuple[RunStatus, str]:
        """Commit a tool step: the answer that asked, its results, the next answer row."""
        answer = run.assistant
        answer.content, answer.status = step.flusher.text, MessageStatus.COMPLETE
        answer.meta = step.meta(base_meta, results)
        rows = tool_rows(step.calls, results, answer.turn_id)
        next_answer = Msg.assistant("", turn_id=answer.turn_id, meta=dict(base_meta))
        written = await self._retrying(
            run,
            lambda: self.memory.finish_step(
                run.conversation, answer, rows, next_answer, run=run.record
            ),
        )
        if written is None:
            answer.status = MessageStatus.STREAMING  # the final write tries again
            return RunStatus.FAILED, "the database is unavailable: the tool results were not stored"
        if not written:
            return RunStatus.INTERRUPTED, _stopped(RunStatus.INTERRUPTED)
        run.settled += [answer, *rows]
        run.context.messages += [chat_message(answer), *(chat_message(row) for row in rows)]
        run.assistant = next_answer
        return True

    async def _finish(
        self,
        run: ActiveRun,
        text: str,
        status: RunStatus,
        error: str | None,
        meta: dict[str, Any],
        results: list[Msg],
    ) -> None:
        assistant = run.assistant
        assistant.content = text
        assistant.status = MessageStatus(status.value)
        assistant.meta = meta
        run.record.status = status
        run.record.error = error if status is not RunStatus.COMPLETE else None
        stored = await self._store_final(run, results)
        if stored:
            turn = [*run.window_history, run.user, *run.settled, assistant, *results]
            history = carried(
                turn,
                window=self.settings.context_window,
                summary=run.summary,
                earlier=run.agent.memory.summary,
            )
            last_seq = results[-1].seq if results else assistant.seq
            self.sessions.put(
                Session(run.agent.id, run.conversation.uuid, history, last_seq, run.summary)
            )
        else:
            self.sessions.drop(run.agent.id, run.conversation.uuid)
        status = run.record.status
        run.result = RunFinished(
            run_id=run.run_id,
            conversation_uuid=run.conversation.uuid,
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
        await self.cap.release(run.owner, run.run_id)
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
            await self.cap.renew(run.owner, run.run_id)
            if not await self.locks.renew(run.conversation.uuid, run.run_id):
                log.warning("run %s lost its lease; stopping it", run.run_id)
                self.request_stop(run, RunStatus.INTERRUPTED)
                return

    async def _store_final(self, run: ActiveRun, results: list[Msg]) -> bool:
        """The final write matters most: retried briefly; if SQL stays away, the start-up
        sweep marks the row interrupted (its last flushed text is kept)."""
        written = await self._retrying(
            run,
            lambda: self.memory.finish_answer(
                run.conversation,
                run.assistant,
                conversation_status=_CONVERSATION_STATUS[run.record.status],
                results=results,
                run=run.record,
            ),
        )
        if written is False:  # a survivor closed this run already: it stays interrupted
            run.assistant.status = MessageStatus.INTERRUPTED
            run.record.status = RunStatus.INTERRUPTED
        return bool(written)

    async def _retrying(self, run: ActiveRun, write: Callable[[], Awaitable[bool]]) -> bool | None:
        """A write of the run, retried while SQL is unavailable; None if it stays so."""
        for attempt in range(4):
            try:
                return await write()
            except StoreUnavailable as exc:
                if attempt == 3:
                    log.warning("a write of %s failed: %s", run.run_id, exc)
                    return None
                await asyncio.sleep(0.2 * (attempt + 1))
        return None


def _stopped(status: RunStatus) -> str:
    return "stopped by the user" if status is RunStatus.STOPPED else "run interrupted"
