"""The one-active-run rule inside one process: a dict of holders."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class LocalRunLocks:
    shared = False

    def __init__(self) -> None:
        self._holders: dict[str, str] = {}

    async def acquire(self, conversation_uuid: str, run_id: str) -> str | None:
        holder = self._holders.get(conversation_uuid)
        if holder is not None and holder != run_id:
            return holder
        self._holders[conversation_uuid] = run_id
        return None

    async def renew(self, conversation_uuid: str, run_id: str) -> bool:
        return self._holders.get(conversation_uuid) == run_id

    async def release(self, conversation_uuid: str, run_id: str) -> None:
        if self._holders.get(conversation_uuid) == run_id:
            del self._holders[conversation_uuid]

    async def holder(self, conversation_uuid: str) -> str | None:
        return self._holders.get(conversation_uuid)

    async def take_over(self, conversation_uuid: str, stale_run_id: str, run_id: str) -> bool:
        if self._holders.get(conversation_uuid) != stale_run_id:
            return False
        self._holders[conversation_uuid] = run_id
        return True

    async def request_stop(self, run_id: str) -> None:
        """Nothing to do: a run of this process is stopped directly."""

    async def listen_for_stops(self, on_stop: Callable[[str], None]) -> None:
        await asyncio.Event().wait()

    async def close(self) -> None:
        self._holders.clear()
