"""How the process is doing: the database and the hot tier, for /healthz and the UI banner."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum

from lumina_app.memory import MemoryManager

log = logging.getLogger(__name__)


class Level(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"  # answering from SQL (slower, nothing lost), or nearly full
    DOWN = "down"  # nothing can be saved


@dataclass(frozen=True, slots=True)
class Health:
    database: str
    hot_window: str
    hot_window_backend: str
    connections: str = Level.OK  # degraded: the server is nearly at its connection cap

    @property
    def overall(self) -> Level:
        if self.database != Level.OK:
            return Level.DOWN
        if self.hot_window == Level.OK and self.connections == Level.OK:
            return Level.OK
        return Level.DEGRADED


class HealthService:
    def __init__(self, memory: MemoryManager) -> None:
        self.memory = memory

    async def check(self, *, database: bool = True, nearly_full: bool = False) -> Health:
        """Both tiers. ``database=False`` leaves SQL unpinged (said as ``unchecked``: the
        operator's check of a database not migrated yet); ``nearly_full``: what the HTTP
        server knows of its own connection cap."""
        if not database:
            status = "unchecked"
        else:
            try:
                await self.memory.ping()
                status = Level.OK.value
            except Exception as exc:
                log.warning("health: database down: %s", exc)
                status = Level.DOWN.value
        hot = await self.memory.hot_status()
        connections = Level.DEGRADED if nearly_full else Level.OK
        return Health(status, hot, self.memory.hot_backend, connections.value)
