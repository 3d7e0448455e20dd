"""Live notices within one process (no Redis: one instance only)."""

from __future__ import annotations

import asyncio
from typing import Any

from lumina_app.storage.live_bus import Deliver


class LocalLiveBus:
    def __init__(self) -> None:
        self._deliver: Deliver | None = None

    async def publish(self, owner: str, notice: dict[str, Any]) -> None:
        if self._deliver is not None:
            self._deliver(owner, notice)

    async def listen(self, deliver: Deliver) -> None:
        self._deliver = deliver
        try:
            await asyncio.Event().wait()
        finally:
            self._deliver = None
