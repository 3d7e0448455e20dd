"""Where an owner's live notices travel between instances (a run started, a conversation
renamed): small JSON objects, fire and forget. Not durable — a run's own events are
(``run_events``); a notice only tells an open page that there is something to follow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Deliver = Callable[[str, dict[str, Any]], None]


class LiveBus(Protocol):
    async def publish(self, owner: str, notice: dict[str, Any]) -> None:
        """Send to every instance (a lost notice is logged, never raised)."""

    async def listen(self, deliver: Deliver) -> None:
        """Call ``deliver(owner, notice)`` for every notice published anywhere; runs
        until cancelled."""
