"""The hot window contract: the last N final messages of a conversation plus a high-water seq.

A window is a projection of SQL (its summary too: a window is only whole with its summary
slot, which says "none" explicitly when there is none). ``append`` only extends a window
by the next seqs: a gap drops the window (the next read rebuilds it), messages at or below
the high-water mark (finalised out of order: an answer ending after a later row was
windowed) make the caller rebuild it, and a missing window is left missing — a partial
window must never pass for a whole one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from lumina_app.domain import Msg, Summary


class HotWindowUnavailable(Exception):
    """The hot tier cannot answer now; callers fall back to SQL."""


@dataclass(slots=True)
class Window:
    messages: list[Msg]
    high_water: int
    # The conversation's rolling summary, kept beside the window (None: it has none).
    summary: Summary | None = None


class HotWindow(Protocol):
    """One round trip per call."""

    name: str

    async def read(self, conversation_uuid: str) -> Window | None:
        """The window, or None when there is none (never an empty stand-in)."""

    async def append(self, conversation_uuid: str, msgs: Sequence[Msg]) -> bool:
        """Add final messages with consecutive seqs to an existing window; False when they
        do not extend it (missing, dropped for a gap, or at or below its mark): rebuild."""

    async def replace(
        self,
        conversation_uuid: str,
        msgs: Sequence[Msg],
        high_water: int,
        summary: Summary | None = None,
    ) -> None:
        """Install a window rebuilt from SQL, with the conversation's summary (or none)."""

    async def set_summary(self, conversation_uuid: str, summary: Summary) -> None:
        """A newer summary for a window that exists (else nothing: the next rebuild reads
        it from SQL)."""

    async def delete(self, conversation_uuid: str) -> None: ...

    async def status(self) -> str:
        """``ok``, ``degraded`` (answering from SQL) or ``down``."""

    async def close(self) -> None: ...
