"""The chat engine: one service path for the UI and the REST/SSE API.

Starting a run (``start_run``, ``regenerate``) reads top to bottom in :meth:`ChatEngine._begin`:
take the conversation's run slot, prepare the context (scenario new / continue / resume),
accept the turn in one transaction (the question with a ``streaming`` answer row, before
any generation), launch. Generation then runs in its own task and publishes events to the
run's event log, so it finishes and is stored even when nobody is listening; consumers
(``events``) replay from any event id and follow live.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from redis.exceptions import RedisError

from lumina_app.agents.definitions.prompts import PromptVersions
from lumina_app.agents.definitions.registry import AgentDefinition, AgentRegistry
from lumina_app.agents.providers.factory import ProviderFactory
from lumina_app.agents.run.attachments import FileSource
from lumina_app.agents.run.run_cap import RunCap
from lumina_app.agents.run.run_driver import ActiveRun, RunDriver
from lumina_app.agents.run.sessions import SessionPool
from lumina_app.agents.run.turns import RunRequest, TurnPreparer, session_started
from lumina_app.agents.tools.catalog import ToolCatalog
from lumina_app.domain import (
    LOCAL,
    AgentNotFound,
    AgentUnavailable,
    ConversationBusy,
    ConversationInfo,
    InputTooLarge,
    InvalidInput,
    MessageNotFound,
    Msg,
    MsgRole,
    Principal,
    RunEvent,
    RunNotFound,
    RunStatus,
    log_context,
    utcnow,
)
from lumina_app.domain.tasks import keep
from lumina_app.domain.text import check_storable_text
from lumina_app.memory import MemoryManager
from lumina_app.memory.context_reads import ContextReads
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.settings import Settings
from lumina_app.storage.message_files import MessageFiles
from lumina_app.storage.run_events import RunEventLog
from lumina_app.storage.run_locks import RunLocks
from lumina_app.storage.run_records import RunRecords

if TYPE_CHECKING:  # what follows a run is above the engine: held here, never called
    from lumina_app.agents.after_run.memory_extractor import MemoryExtractor
    from lumina_app.agents.after_run.summaries import SummaryKeeper

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunSlot:
    """A conversation's run slot, taken: here, in the locks (every instance, when shared)
    and under the owner's cap of runs going at once."""

    run_id: str
    conversation_uuid: str
    owner: str


class ChatEngine:
    def __init__(
        self,
        *,
        settings: Settings,
        memory: MemoryManager,
        lookup: ConversationLookup,
        context: ContextReads,
        runs: RunRecords,
        registry: AgentRegistry,
        providers: ProviderFactory,
        sessions: SessionPool,
        events: RunEventLog,
        locks: RunLocks,
        prompts: PromptVersions,
        summaries: SummaryKeeper,
        tools: ToolCatalog,
        cap: RunCap,
        extractor: MemoryExtractor | None = None,
        links: MessageFiles | None = None,
        files: FileSource | None = None,
    ) -> None:
        self.settings = settings
        self.cap = cap
        self.locks = locks
        self.tools = tools
        self.memory = memory
        self.lookup = lookup
        self.runs = runs
        self.registry = registry
        self.sessions = sessions
        self.events = events
        self.turns = TurnPreparer(
            settings=settings,
            memory=memory,
            context=context,
            sessions=sessions,
            providers=providers,
            prompts=prompts,
            retriever=tools.recall.retriever if tools.recall else None,
            long_term=extractor.store if extractor else None,
            links=links,
            files=files,
        )
        self.files = files  # the context inspector reads the files a run sent again
        self.extractor = extractor  # long-term memories, written after runs
        self.long_term: LongTermMemory | None = extractor.store if extractor else None
        self.prompts = prompts
        self.summaries = summaries
        # What follows a run, subscribed by the composition root (composition.py, "after a
        # turn"): once it is accepted (live notices, titles), once it has ended (summaries,
        # memory extraction; ``last_seq``, the run's last row, None if none was stored).
        self.on_run_started: list[Callable[[RunRequest, ActiveRun], None]] = []
        self.on_run_ended: list[Callable[[ActiveRun, int | None], None]] = []
        self._runs: dict[str, ActiveRun] = {}
        self._by_conversation: dict[str, str] = {}
        self.driver = RunDriver(
            settings=settings,
            memory=memory,
            sessions=sessions,
            events=events,
            locks=self.locks,
            tools=tools,
            cap=cap,
            on_end=self._forget_run,
        )

    # -- public API ----------------------------------------------------------------

    async def recover(self, *, min_age: float | None = None) -> int:
        """At start-up: close what a crash left ``streaming``/``running`` as interrupted.

        With locks shared between instances only orphans are closed (runs whose lease has
        run out); a lone process closes everything left open.
        """
        if self.locks.shared:
            closed = await self.sweep_orphans(min_age=min_age)
        else:
            closed = await self.runs.close_streaming()
        if closed:
            log.warning("closed %d answer(s) left streaming by a lost process", closed)
        return closed

    async def sweep_orphans(self, *, min_age: float | None = None) -> int:
        """Interrupt runs recorded as running whose owner no longer holds their lease.

        Runs younger than a lease are left alone: their lock may have been taken while
        Redis was unreachable (in-process fallback) and is re-established by the heartbeat.
        """
        closed = 0
        age = self.settings.run_lease_seconds if min_age is None else min_age
        oldest = utcnow() - timedelta(seconds=age)
        for run_id, conversation_uuid, started_at in await self.runs.running_runs():
            if run_id in self._runs or self._by_conversation.get(conversation_uuid) == run_id:
                continue  # ours: running, or still being accepted
            if started_at > oldest:
                continue
            try:
                if await self.locks.holder(conversation_uuid) == run_id:
                    continue
            except (RedisError, OSError) as exc:
                log.warning("orphan sweep cannot read locks now: %s", exc)
                return closed
            if await self.runs.interrupt_run(run_id, "the instance running it was lost"):
                closed += 1
        return closed

    def on_stop_request(self, run_id: str) -> None:
        """A stop published by another instance: act on it if the run is ours."""
        run = self._runs.get(run_id)
        if run is not None:
            self.driver.request_stop(run, RunStatus.STOPPED)

    async def start_run(
        self,
        *,
        agent_id: str,
        message: str,
        conversation_uuid: str | None = None,
        principal: Principal = LOCAL,
        title: str | None = None,
        system_prompt: str | None = None,
        files: Sequence[dict[str, Any]] = (),
    ) -> ActiveRun:
        """Accept a message: when this returns, the question is committed and the run is on.

        Shielded, so a caller that goes away mid-accept cannot leave half a turn behind.
        ``system_prompt`` replaces the agent's (a gateway client's, where the agent allows).
        ``files``: the question's files, checked already (``{id, name, type, size}`` each);
        a question with files may have no text.
        """
        agent = self._agent(agent_id)
        text = self._check_message(message, empty_ok=bool(files))
        new = None
        if conversation_uuid is None:  # stored together with the first turn, at the accept
            new = ConversationInfo.new(
                agent_id=agent.id,
                title=title or title_from(text) or title_from(files[0]["name"]),
                owner=principal.owner,
            )
            conversation_uuid = new.uuid
        request = RunRequest(
            agent, principal, conversation_uuid, text, new, system_prompt, files=tuple(files)
        )
        return await _shielded(self._begin(request))

    async def regenerate(
        self, *, conversation_uuid: str, principal: Principal = LOCAL
    ) -> ActiveRun:
        """Answer the conversation's last user message again, under the same run slot as
        a send (busy: ConversationBusy), the old answer kept as ``superseded``. When this
        returns the new answer row is committed and the run is on; shielded like
        :meth:`start_run`."""
        conversation = await self.lookup.find_visible(principal, conversation_uuid)
        agent = self._agent(conversation.agent_id)
        return await _shielded(self._begin(RunRequest(agent, principal, conversation.uuid)))

    async def edit(
        self,
        *,
        conversation_uuid: str,
        seq: int,
        message: str,
        principal: Principal = LOCAL,
    ) -> ActiveRun:
        """Ask the question at ``seq`` again as ``message``: a new branch of the
        conversation from there (the old one parked, ``storage.sql.branches``), answered
        under the same run slot as a send (busy: ConversationBusy). Shielded like
        :meth:`start_run`."""
        conversation = await self.lookup.find_visible(principal, conversation_uuid)
        agent = self._agent(conversation.agent_id)
        text = self._check_message(message)
        request = RunRequest(agent, principal, conversation.uuid, text, edit_seq=seq)
        return await _shielded(self._begin(request))

    async def switch_branch(
        self, *, conversation_uuid: str, seq: int, branch: int, principal: Principal = LOCAL
    ) -> int:
        """Show branch ``branch`` of the question at ``seq`` (any version of it on the
        active branch): everything after it switches. Holds the run slot while it does
        (busy: ConversationBusy). The first seq that changed (0: it was shown already)."""
        conversation = await self.lookup.find_visible(principal, conversation_uuid)
        agent = self._agent(conversation.agent_id)
        slot = await self._take_slot(agent, conversation.uuid, principal)
        try:
            conversation = await self._visible(slot.conversation_uuid, principal, agent)
            question = await self.turns.context.message_at(conversation, seq)
            if question is None or question.role is not MsgRole.USER:
                raise MessageNotFound(f"no question at seq {seq} on this conversation's branch")
            group = int(question.meta.get("branchOf", question.seq))
            changed = await self.memory.switch_branch(conversation, group, branch)
            if changed:
                self.sessions.drop(agent.id, conversation.uuid)
            return changed
        finally:
            await self._give_back(slot)

    async def continue_turn(
        self,
        *,
        conversation_uuid: str,
        outputs: list[Msg],
        principal: Principal = LOCAL,
        system_prompt: str | None = None,
    ) -> ActiveRun:
        """Go on with the last turn after a client ran the calls it was asked for
        (``outputs``, TOOL rows): same run slot, events and durability as :meth:`start_run`."""
        conversation = await self.lookup.find_visible(principal, conversation_uuid)
        agent = self._agent(conversation.agent_id)
        request = RunRequest(
            agent, principal, conversation.uuid, system_prompt=system_prompt, outputs=outputs
        )
        return await _shielded(self._begin(request))

    def follow(self, run: ActiveRun, after: int = 0) -> AsyncIterator[RunEvent | None]:
        """Follow a run this caller started; if the caller leaves and the settings say
        so, the run is interrupted, otherwise it carries on to the end (and the
        subscription is all there is: no generator of its own per open stream)."""
        events = self.events.subscribe(run.run_id, after)
        if not self.settings.cancel_on_disconnect:
            return events
        return self._interrupt_on_leave(run, events)

    async def _interrupt_on_leave(
        self, run: ActiveRun, events: AsyncIterator[RunEvent | None]
    ) -> AsyncIterator[RunEvent | None]:
        try:
            async for event in events:
                yield event
        finally:
            if not run.done.is_set():
                self.driver.request_stop(run, RunStatus.INTERRUPTED)

    def active_run(self, run_id: str, *, owner: str | None = None) -> ActiveRun | None:
        run = self._runs.get(run_id)
        if run is None or (owner is not None and run.owner != owner):
            return None
        return run

    def active_run_for(self, conversation_uuid: str) -> ActiveRun | None:
        run_id = self._by_conversation.get(conversation_uuid)
        return self._runs.get(run_id) if run_id else None

    async def running_run_id(self, conversation_uuid: str) -> str | None:
        """The conversation's live run, in this process or (with shared locks) any other."""
        run = self.active_run_for(conversation_uuid)
        if run is not None:
            return run.run_id
        if not self.locks.shared:
            return None
        try:
            holder = await self.locks.holder(conversation_uuid)
        except (RedisError, OSError):
            return None  # Redis away: only this process's runs can be known
        if holder is None:
            return None
        record = await self.runs.get_run(holder)
        return holder if record is not None and record.status is RunStatus.RUNNING else None

    async def stop(self, run_id: str, *, owner: str | None = None, wait: float = 10.0) -> None:
        """User stop: the answer ends ``stopped`` with the text it had. A run of another
        instance is asked to stop through the shared locks; this waits (bounded) until
        the store shows it ended."""
        run = self.active_run(run_id, owner=owner)
        if run is not None:
            self.driver.request_stop(run, RunStatus.STOPPED)
            await run.done.wait()
            return
        record = await self.runs.get_run(run_id, owner=owner)
        if record is None:
            raise RunNotFound(run_id)
        if record.status is not RunStatus.RUNNING:
            return
        await self.locks.request_stop(run_id)
        deadline = asyncio.get_running_loop().time() + wait
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
            record = await self.runs.get_run(run_id, owner=owner)
            if record is None or record.status is not RunStatus.RUNNING:
                return

    async def open_stream(
        self, run_id: str, *, after: int = 0, owner: str | None = None
    ) -> AsyncIterator[RunEvent]:
        """The events of a run after ``after`` (a reconnect's Last-Event-ID), then live.

        Checked before returning, so an unknown or someone else's run is a plain
        RunNotFound rather than an empty stream.
        """
        run = self.active_run(run_id, owner=owner)
        if run is not None:
            return self.follow(run, after)
        record = await self.runs.get_run(run_id, owner=owner)
        if owner is not None and record is None:
            raise RunNotFound(run_id)
        # Running on another instance whose first events are not shared yet (the page
        # heard of the run first): the subscription waits for them.
        running = record is not None and record.status is RunStatus.RUNNING
        if not (running and self.events.shared) and not await self.events.known(run_id):
            raise RunNotFound(run_id)
        return self.events.subscribe(run_id, after)

    async def shutdown(self, grace: float = 5.0) -> None:
        """Process ending: interrupt live runs and let them record that."""
        runs = list(self._runs.values())
        for run in runs:
            self.driver.request_stop(run, RunStatus.INTERRUPTED)
        if runs:
            await asyncio.wait([asyncio.ensure_future(r.done.wait()) for r in runs], timeout=grace)

    # -- accepting -----------------------------------------------------------------

    def _agent(self, agent_id: str) -> AgentDefinition:
        agent = self.registry.get(agent_id)
        if agent is None:
            raise AgentNotFound(agent_id)
        if not agent.available:
            raise AgentUnavailable(f"agent {agent_id!r} is unavailable: {agent.error}")
        return agent

    def _check_message(self, message: str, *, empty_ok: bool = False) -> str:
        """``empty_ok``: the message carries files, which say enough on their own."""
        if not isinstance(message, str) or not (message.strip() or empty_ok):
            raise InvalidInput("message must be a non-empty string")
        check_storable_text(message, "message")
        if len(message) > self.settings.max_task_chars:
            raise InputTooLarge(
                f"message is {len(message)} characters; the limit is {self.settings.max_task_chars}"
            )
        return message

    async def _begin(self, request: RunRequest) -> ActiveRun:
        """Take the slot, prepare the context, accept the turn (one transaction), launch.
        Until the accept has committed, a failure gives the slot back and stores nothing."""
        agent, principal = request.agent, request.principal
        slot = await self._take_slot(agent, request.conversation_uuid, principal)
        try:
            conversation = request.new
            if conversation is None:  # read under the lock: no other instance moves it
                conversation = await self._visible(slot.conversation_uuid, principal, agent)
            prepared = await self.turns.prepare(slot.run_id, request, conversation)
            run = await self.turns.accept(prepared)
        except BaseException:
            await self._give_back(slot)
            raise
        run = await self._launch(run)
        for listener in self.on_run_started:
            listener(request, run)
        return run

    async def _take_slot(
        self, agent: AgentDefinition, conversation_uuid: str, principal: Principal
    ) -> RunSlot:
        """The conversation's run slot (here and, with shared locks, everywhere) and a place
        under the owner's cap. Busy: ConversationBusy; someone else's: not found; the owner
        at its cap of runs going at once: TooManyRuns."""
        run_id = "run-" + secrets.token_hex(8)
        log_context.bind(run=run_id, conversation=conversation_uuid)  # the run's task inherits
        busy = self._by_conversation.get(conversation_uuid)
        if busy is not None:
            await self._visible(conversation_uuid, principal, agent)  # others' ids: 404, not 409
            raise ConversationBusy(conversation_uuid, busy)
        self._by_conversation[conversation_uuid] = run_id  # the slot is ours from here on
        try:
            await self.cap.take(principal.owner, run_id)
        except BaseException:
            self._by_conversation.pop(conversation_uuid, None)
            raise
        try:
            holder = await self.locks.acquire(conversation_uuid, run_id)
            if holder is not None and not await self._take_stale_lock(
                conversation_uuid, holder, run_id
            ):
                await self._visible(conversation_uuid, principal, agent)
                raise ConversationBusy(conversation_uuid, holder)
        except BaseException:
            self._by_conversation.pop(conversation_uuid, None)
            await self.cap.release(principal.owner, run_id)
            raise
        return RunSlot(run_id, conversation_uuid, principal.owner)

    async def _give_back(self, slot: RunSlot) -> None:
        """A run that was not accepted: its lock, its slot here, its place under the cap."""
        try:
            await self.locks.release(slot.conversation_uuid, slot.run_id)
        finally:
            self._by_conversation.pop(slot.conversation_uuid, None)
            await self.cap.release(slot.owner, slot.run_id)

    async def _launch(self, run: ActiveRun) -> ActiveRun:
        """An accepted run: its ``session`` event, then generation in a task of its own."""
        self._runs[run.run_id] = run
        await self.driver.publish(run, session_started(run))
        run.task = asyncio.create_task(self.driver.generate(run), name=run.run_id)
        return run

    async def _visible(
        self, conversation_uuid: str, principal: Principal, agent: AgentDefinition
    ) -> ConversationInfo:
        return await self.lookup.find_visible(principal, conversation_uuid, agent_id=agent.id)

    async def _take_stale_lock(self, conversation_uuid: str, holder: str, run_id: str) -> bool:
        """A lock whose run the store shows as ended was not released (Redis was away at
        the time): take it over rather than refuse the conversation for a whole lease."""
        if holder in self._runs:
            return False
        record = await self.runs.get_run(holder)
        if record is not None and record.status is RunStatus.RUNNING:
            return False
        return await self.locks.take_over(conversation_uuid, holder, run_id)

    # -- generating ----------------------------------------------------------------

    def _forget_run(self, run: ActiveRun) -> None:
        self._runs.pop(run.run_id, None)
        self._by_conversation.pop(run.conversation.uuid, None)
        # The session this run just left holds its last row's seq (none if not stored).
        session = self.sessions.get(run.agent.id, run.conversation.uuid)
        last_seq = session.last_seq if session is not None else None
        for listener in self.on_run_ended:
            listener(run, last_seq)

    async def drop_run_buffers(self, run_ids: list[str]) -> None:
        """Runs were deleted with their conversation: their event buffers go too."""
        for run_id in run_ids:
            run = self._runs.get(run_id)
            if run is not None:  # interrupted by the delete: let it finish, then drop it
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5):
                        await run.done.wait()
            await self.events.delete(run_id)

    async def drop_session(self, conversation: ConversationInfo, _turns: Sequence[str]) -> None:
        """Messages were deleted: the warm session (an acp agent's process) held them."""
        self.sessions.drop(conversation.agent_id, conversation.uuid)

    async def forget_conversation(self, conversation: ConversationInfo) -> None:
        """A conversation was deleted: its warm session goes, a run on it is interrupted."""
        self.sessions.drop(conversation.agent_id, conversation.uuid)
        run = self.active_run_for(conversation.uuid)
        if run is not None:
            self.driver.request_stop(run, RunStatus.INTERRUPTED)


_starting: set[asyncio.Task] = set()  # starts under way, referenced until they end


async def _shielded(begin: Coroutine[None, None, ActiveRun]) -> ActiveRun:
    """Run a start to its end even if the caller goes away mid-accept: half a turn is
    never left behind, and an accepted run goes on.

    As ``asyncio.shield`` over a task, one loop turn sooner: shield hands the task's end
    to its outer future through a done-callback, which wakes the caller a turn later;
    here the task's last step sets the future the caller awaits. Under load each turn is
    a wait behind every other ready task (the first SSE byte waits for it)."""
    outcome: asyncio.Future[ActiveRun] = asyncio.get_running_loop().create_future()

    async def run() -> None:
        try:
            started = await begin
        except asyncio.CancelledError:
            outcome.cancel()
            raise
        except BaseException as exc:  # the caller's to handle; gone, nobody's (as shield)
            if not outcome.done():
                outcome.set_exception(exc)
            return
        if not outcome.done():  # cancelled: the caller went away, the run goes on
            outcome.set_result(started)

    keep(_starting, run())
    return await outcome


def title_from(text: str, limit: int = 60) -> str:
    """A conversation's default title: its first question, on one line, cut to ``limit``,
    without a leading ``/command`` (unless that is all there is)."""
    words = text.split()
    while len(words) > 1 and words[0].startswith("/"):
        words.pop(0)
    flat = " ".join(words)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
