"""Keeping rolling summaries current, off every run's path.

After a run of an agent with ``memory.summary`` ends, the keeper looks at what has left
the conversation's window since the last summary; once ``every`` messages have (10 by
default), the agent's summarizer extends the summary with them, in a background task. A
run never waits for it; a failure is logged and retried (with backoff, and again after the
next run), never losing or blocking a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from lumina_app.agents.after_run.summary import ExtractiveSummarizer, ModelSummarizer, SummaryFailed
from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.providers.factory import ProviderFactory
from lumina_app.agents.run.context import usable_history
from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.domain import ConversationNotFound, StoreUnavailable, Summary
from lumina_app.memory import MemoryManager
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.summary_store import SummaryStore

log = logging.getLogger(__name__)
SummaryWritten = Callable[[str, str, Summary], None]


@dataclass(eq=False, repr=False)
class SummaryKeeper:
    memory: MemoryManager
    lookup: ConversationLookup
    store: SummaryStore
    providers: ProviderFactory
    _: KW_ONLY
    window: int
    every: int = 10
    retry_after: float = 30.0
    attempts: int = 3
    on_written: list[SummaryWritten] = field(default_factory=list, init=False)
    written: int = field(default=0, init=False)
    _busy: dict[str, asyncio.Task] = field(default_factory=dict, init=False)

    def after_run(self, run: ActiveRun, last_seq: int | None = None) -> None:
        """A run ended (the engine's ``on_run_ended``): catch its conversation's summary up,
        later. ``last_seq``, the run's last row: below ``every`` fewer messages than that
        exist at all, so nothing is due and the reads are skipped (most short ones)."""
        agent, conversation_uuid = run.agent, run.conversation.uuid
        if not agent.memory.summary or conversation_uuid in self._busy:
            return
        if last_seq is not None and last_seq < self.every:
            return
        task = asyncio.create_task(self._catch_up(agent, conversation_uuid), name="summary")
        self._busy[conversation_uuid] = task
        task.add_done_callback(lambda _t: self._busy.pop(conversation_uuid, None))

    async def wait(self) -> None:
        """Until every summary being written now is done (tests, shutdown)."""
        while self._busy:
            await asyncio.wait(list(self._busy.values()))

    async def close(self) -> None:
        for task in list(self._busy.values()):
            task.cancel()
        for task in list(self._busy.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _catch_up(self, agent: AgentDefinition, conversation_uuid: str) -> None:
        for attempt in range(1, self.attempts + 1):
            try:
                await self.catch_up(agent, conversation_uuid)
                return
            except ConversationNotFound:
                return  # deleted meanwhile
            except (SummaryFailed, StoreUnavailable) as exc:
                log.warning(
                    "summary of %s not written (attempt %d): %s", conversation_uuid, attempt, exc
                )
            if attempt < self.attempts:
                await asyncio.sleep(self.retry_after * attempt)

    async def catch_up(self, agent: AgentDefinition, conversation_uuid: str) -> Summary | None:
        """Summarize what left the window if ``every`` messages have; the new summary."""
        conversation = await self.lookup.get_conversation(conversation_uuid)
        view = await self.memory.load_view(conversation)
        used = usable_history(view.messages, self.window)
        boundary = used[0].seq - 1 if used else conversation.last_seq
        covered = view.summary.covered_to_seq if view.summary else 0
        if boundary - covered < self.every:
            return None
        left = await self.store.unsummarized(
            conversation, after_seq=covered, before_seq=boundary + 1
        )
        provider = self.providers.for_agent(agent)
        summarizer = (
            ExtractiveSummarizer()
            if provider.name in ("demo", "acp")
            else ModelSummarizer(provider)
        )
        previous = view.summary.text if view.summary else ""
        text = await summarizer.summarize(previous, left, agent.memory.summary_prompt)
        summary = await self.memory.write_summary(
            conversation, covered_to_seq=boundary, text=text, model=summarizer.model
        )
        self.written += 1
        for hook in self.on_written:
            hook(agent.id, conversation_uuid, summary)
        return summary
