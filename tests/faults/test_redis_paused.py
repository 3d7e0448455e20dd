"""A Redis that stops answering (SIGSTOP: connections stay open, nothing comes back) costs
a turn one short socket timeout, after which everything that talks to it on the turn's
path — hot window, run lock, the per-owner run slot, run events, live notices — skips it at once
through the hot window's circuit breaker; once Redis answers again, they use it again (run
events held meanwhile are copied then)."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as aioredis

from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.composition import open_services
from lumina_app.services.live import Notice
from tests.waits import wait_until


async def timed_turn(services, conversation: str | None) -> tuple[float, ActiveRun]:
    started = time.monotonic()
    run = await services.chat.start_run(
        agent_id="demo", message="hello there", conversation_uuid=conversation
    )
    await run.done.wait()
    return time.monotonic() - started, run


async def test_turns_and_notices_skip_a_frozen_redis_after_one_timeout(
    settings_factory, redis_server
) -> None:
    services = await open_services(
        settings_factory(redis_url=redis_server.url, redis_breaker_cooldown=30.0)
    )
    watcher = aioredis.Redis(port=redis_server.port)
    try:
        _, run = await timed_turn(services, None)
        conversation = run.conversation.uuid
        redis_server.pause()
        # The first turn waits out one 0.2 s socket timeout; the sign-in slots' 2 s timeout
        # is not on a turn's path (it was: 2.3 s per turn in flight).
        first, _ = await timed_turn(services, conversation)
        assert first < 1.0, f"the first turn on a frozen Redis took {first:.2f} s"
        later = [await timed_turn(services, conversation) for _ in range(3)]
        took = [seconds for seconds, _ in later]
        assert max(took) < 0.15, f"turns with the breaker open took {took}"
        frozen = later[-1][1]  # its events wait in the process for Redis to come back
        await asyncio.sleep(0.2)  # long enough for the copy to have been refused (5 ms)

        started = time.monotonic()
        await services.live.announce("ann", Notice("closed"))
        took = time.monotonic() - started
        assert took < 0.05, f"a live notice waited {took:.3f} s on a Redis known to be away"

        redis_server.resume()
        services.memory.hot.breaker.cooldown = 0.0  # probe again at once
        pubsub = watcher.pubsub()
        await pubsub.subscribe(f"{services.settings.redis_prefix}:live")

        async def delivered() -> bool:
            await services.live.announce("ann", Notice("closed"))
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.2)
            return message is not None and b'"owner": "ann"' in message["data"]

        await wait_until(delivered, "a live notice through Redis again")
        await services.events.flush()
        copied = await watcher.xlen(services.events.key(frozen.run_id))
        assert copied == frozen.next_event_id - 1, "a run's events copied once Redis is back"
        await pubsub.aclose()
    finally:
        redis_server.resume()
        await watcher.aclose()
        await services.close()
