"""The live bus contract (``storage.live_bus``) on each implementation: a notice published
reaches the listener with its owner, as it was sent."""

from __future__ import annotations

import asyncio
from typing import Any

from lumina_app.storage.live_bus import LiveBus
from tests.waits import wait_until


async def test_a_notice_reaches_the_listener_with_its_owner(live_bus: LiveBus) -> None:
    got: list[tuple[str, dict[str, Any]]] = []
    listening = asyncio.create_task(
        live_bus.listen(lambda owner, notice: got.append((owner, notice)))
    )
    notice = {"kind": "renamed", "conversation": "c-1", "title": "Été", "n": 3}

    async def delivered() -> bool:  # Pub/Sub: a notice before the subscription is lost
        await live_bus.publish("ann", notice)
        return bool(got)

    try:
        await wait_until(delivered, "the notice to arrive", interval=0.05)
        await live_bus.publish("bob", {"kind": "run", "run": "r-2"})
        await wait_until(lambda: got[-1][0] == "bob", "the second notice")
        assert {owner for owner, _ in got} == {"ann", "bob"}  # probes in flight: ann's
        assert all(n == notice for owner, n in got if owner == "ann")
        assert [n for owner, n in got if owner == "bob"] == [{"kind": "run", "run": "r-2"}]
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
