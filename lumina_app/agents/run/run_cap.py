"""At most LUMINA_MAX_ACTIVE_RUNS_PER_OWNER runs going at once per owner (docs/SECURITY.md),
whichever way they start (REST, SSE, family B, the gateway, the UI): one owner cannot take
every model call and worker of the server.

Each run holds a slot (``storage/slots.py``) from its accept to its end. With Redis the
slots are shared by every instance, leased like the run's conversation lock (renewed by
the run's heartbeat), so a killed instance's runs give their slots back when the lease
runs out; without Redis they are counted in this process and held until the run ends.
"""

from __future__ import annotations

import math

from lumina_app.domain import TooManyRuns
from lumina_app.storage.slots import Slots


class RunCap:
    def __init__(self, slots: Slots, *, limit: int, lease_seconds: float) -> None:
        self.slots = slots
        self.limit = limit
        # Renewed every third of a lease by the heartbeat: three missed beats lose it.
        self.ttl = 3 * lease_seconds if slots.shared else math.inf

    async def take(self, owner: str, run_id: str) -> None:
        """The run's slot, or TooManyRuns (429) with nothing taken."""
        if await self.slots.take({_key(owner): self.limit}, run_id, self.ttl) > 0:
            raise TooManyRuns(self.limit)

    async def renew(self, owner: str, run_id: str) -> None:
        await self.slots.renew([_key(owner)], run_id, self.ttl)

    async def release(self, owner: str, run_id: str) -> None:
        await self.slots.release([_key(owner)], run_id)

    async def forget(self, owner: str) -> None:
        """The owner's slots gone (a deleted account leaves no key behind)."""
        await self.slots.clear(_key(owner))


def _key(owner: str) -> str:
    return f"runs:{owner}"
