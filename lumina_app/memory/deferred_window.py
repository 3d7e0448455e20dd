"""A turn's question, committed at its accept, held back from the hot window until its
answer is final, so a turn touches the hot tier once instead of twice.

Nothing reads the question from the window in between: while the run goes on, SQL's
``last_seq`` counts the ``streaming`` answer row, which is past any window's high-water
mark, so every read of that conversation rebuilds from SQL anyway (``MemoryManager.
_is_current``). The question is pushed with the final answer in the same round trip; a
run that never reaches its final write (a crash) leaves a window behind SQL, which the
next read rebuilds, as before. Bounded: an entry is taken by its answer's settling write,
and past ``limit`` (runs that died without one) the oldest is forgotten, which costs only
a rebuild.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from lumina_app.domain import ConversationUuid, Msg


class DeferredWindow:
    """Committed rows waiting for the hot-window push of the answer row they precede,
    keyed by that answer's id (turns of one conversation may overlap)."""

    def __init__(self, *, limit: int = 4096) -> None:
        self.limit = limit
        self._held: OrderedDict[int, tuple[ConversationUuid, list[Msg], bool]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._held)

    def hold(
        self,
        answer_id: int,
        conversation_uuid: ConversationUuid,
        msgs: Sequence[Msg],
        *,
        fresh: bool,
    ) -> None:
        """Hold ``msgs`` until answer ``answer_id`` is pushed (``fresh``: the conversation
        has no window yet, it starts with them)."""
        self._held[answer_id] = (conversation_uuid, list(msgs), fresh)
        while len(self._held) > self.limit:
            self._held.popitem(last=False)

    def take(self, answer_id: int) -> tuple[list[Msg], bool]:
        """What is held for the answer (and whether it starts its conversation's window),
        now no longer held; ``([], False)`` if nothing is."""
        _uuid, msgs, fresh = self._held.pop(answer_id, (ConversationUuid(""), [], False))
        return msgs, fresh

    def drop_conversation(self, conversation_uuid: ConversationUuid) -> None:
        """Forget what is held for a deleted conversation."""
        for answer_id in [k for k, (uuid, *_) in self._held.items() if uuid == conversation_uuid]:
            del self._held[answer_id]
