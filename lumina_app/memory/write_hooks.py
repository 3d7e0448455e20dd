"""Who else must hear of a memory write: the tiers beside SQL and the hot window (the
archive mirror, recall's embedder, run buffers) register here, and ``MemoryManager`` calls
them once its own writes are done — so the write order stays in one place and the
observers in another."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from lumina_app.domain import ConversationInfo, Msg

log = logging.getLogger(__name__)

DeleteHook = Callable[[ConversationInfo], Awaitable[None]]
FinalHook = Callable[[ConversationInfo, Sequence[Msg]], Awaitable[None]]
RunsDeletedHook = Callable[[list[str]], Awaitable[None]]
RemovedHook = Callable[[ConversationInfo, Sequence[str]], Awaitable[None]]


class WriteHooks:
    def __init__(self) -> None:
        self._delete: list[DeleteHook] = []
        self._final: list[FinalHook] = []
        self._runs_deleted: list[RunsDeletedHook] = []
        self._removed: list[RemovedHook] = []

    def on_delete(self, hook: DeleteHook) -> None:
        """Other tiers (archive, run buffers) register what a delete must also clear."""
        self._delete.append(hook)

    def on_rows_removed(self, hook: RemovedHook) -> None:
        """Whoever holds a conversation's rows outside SQL (warm sessions, an acp agent's
        process, the archive mirror) hears which turns lost rows to a delete."""
        self._removed.append(hook)

    def on_runs_deleted(self, hook: RunsDeletedHook) -> None:
        """Whoever keeps per-run data (event buffers) drops it when its runs are deleted."""
        self._runs_deleted.append(hook)

    def on_final(self, hook: FinalHook) -> None:
        """Observers (the archive mirror) of messages committed final; called after SQL and
        the hot window, so they must be quick. A failing observer is logged, never raised."""
        self._final.append(hook)

    async def deleted(self, conversation: ConversationInfo, run_ids: list[str]) -> None:
        for hook in self._delete:
            await hook(conversation)
        for runs_hook in self._runs_deleted:
            await runs_hook(run_ids)

    async def removed(self, conversation: ConversationInfo, turn_ids: Sequence[str]) -> None:
        for hook in self._removed:
            await hook(conversation, turn_ids)

    async def finalised(self, conversation: ConversationInfo, msgs: Sequence[Msg]) -> None:
        for hook in self._final:
            try:
                await hook(conversation, msgs)
            except Exception:
                log.warning("on_final hook %r failed", hook, exc_info=True)
