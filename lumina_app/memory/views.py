"""What the memory layer hands out besides messages: the view a context is built from,
and the hot window's read counters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lumina_app.domain import Msg, Summary


@dataclass(frozen=True, slots=True)
class MemoryView:
    """What a context is built from: the last N final messages and the rolling summary
    of what left them (None when there is none yet)."""

    messages: list[Msg]
    summary: Summary | None = None


@dataclass(slots=True)
class WindowStats:
    """Hot-window reads by result; ``listeners`` (metrics) hear each one as it happens."""

    hits: int = 0
    rebuilds: int = 0
    fallbacks: int = 0
    listeners: list[Callable[[str], None]] = field(default_factory=list)

    def count(self, result: str) -> None:
        """``hit``, ``rebuild`` or ``fallback``."""
        if result == "hit":
            self.hits += 1
        elif result == "rebuild":
            self.rebuilds += 1
        else:
            self.fallbacks += 1
        for listener in self.listeners:
            listener(result)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.rebuilds + self.fallbacks
        return self.hits / total if total else 0.0
