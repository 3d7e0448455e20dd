"""The run lock contract (``storage.run_locks``) on each implementation: one run holds a
conversation at a time; only the holder renews or releases it; a stop request reaches the
listener."""

from __future__ import annotations

import asyncio

import pytest

from lumina_app.storage.run_locks import RunLocks
from tests.waits import wait_until


async def test_one_run_holds_a_conversation_at_a_time(run_locks: RunLocks) -> None:
    assert await run_locks.holder("c") is None
    assert await run_locks.acquire("c", "run-1") is None
    assert await run_locks.holder("c") == "run-1"
    assert await run_locks.acquire("c", "run-2") == "run-1"  # busy: who holds it
    assert await run_locks.acquire("d", "run-2") is None  # another conversation is free
    assert await run_locks.holder("c") == "run-1"


async def test_another_instance_sees_the_lock_exactly_when_shared(
    run_locks: RunLocks, run_locks_elsewhere: RunLocks
) -> None:
    await run_locks.acquire("c", "run-1")
    if run_locks.shared:
        assert await run_locks_elsewhere.holder("c") == "run-1"
        assert await run_locks_elsewhere.acquire("c", "run-2") == "run-1"
        assert not await run_locks_elsewhere.renew("c", "run-2")
    else:  # each process its own: only as strong as one instance
        assert await run_locks_elsewhere.holder("c") is None
        assert await run_locks_elsewhere.acquire("c", "run-2") is None
    assert await run_locks.holder("c") == "run-1"


async def test_only_the_holder_renews_or_releases(run_locks) -> None:
    await run_locks.acquire("c", "run-1")
    assert await run_locks.renew("c", "run-1")
    assert not await run_locks.renew("c", "run-2")  # fenced off
    await run_locks.release("c", "run-2")  # not its lock: nothing happens
    assert await run_locks.holder("c") == "run-1"
    await run_locks.release("c", "run-1")
    assert await run_locks.holder("c") is None
    # (Renewing a free lock differs: Redis takes a key lost with a restart again.)
    assert await run_locks.acquire("c", "run-2") is None


async def test_take_over_replaces_only_the_named_stale_run(run_locks) -> None:
    await run_locks.acquire("c", "stale")
    assert not await run_locks.take_over("c", "someone-else", "run-2")
    assert await run_locks.holder("c") == "stale"
    assert await run_locks.take_over("c", "stale", "run-2")
    assert await run_locks.holder("c") == "run-2"
    assert await run_locks.renew("c", "run-2") and not await run_locks.renew("c", "stale")


async def test_a_stop_request_reaches_the_listener(run_locks) -> None:
    if not run_locks.shared:
        pytest.skip("one process: its runs are stopped directly, no request travels")
    stopped: list[str] = []
    listening = asyncio.create_task(run_locks.listen_for_stops(stopped.append))

    async def asked() -> bool:  # Pub/Sub: a request before the subscription is lost
        await run_locks.request_stop("run-1")
        return "run-1" in stopped

    try:
        await wait_until(asked, "the stop request to arrive", interval=0.05)
        assert set(stopped) == {"run-1"}
    finally:
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)
