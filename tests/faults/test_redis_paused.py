"""A Redis that stops answering (SIGSTOP: connections stay open, nothing comes back) costs
a turn one short socket timeout, after which everything that talks to it on the turn's
path — hot window, run lock, the per-owner run slot, run events, live notices — skips it at once
through the hot window's circuit breaker; once Redis answers again, they use it again."""

from __future__ import annotations

import time

import redis.asyncio as aioredis

from lumina_app.composition import open_services
from lumina_app.services.live import Notice
from tests.waits import wait_until


async def timed_turn(services, conversation: str | None) -> tuple[float, str]:
    started = time.monotonic()
    run = await services.chat.start(
        agent_id="demo", message="hello there", conversation_uuid=conversation
    )
    await run.done.wait()
    return time.monotonic() - started, run.conversation.uuid


async def test_turns_and_notices_skip_a_frozen_redis_after_one_timeout(
    settings_factory, redis_server
) -> None:
    services = await open_services(
        settings_factory(redis_url=redis_server.url, redis_breaker_cooldown=30.0)
    )
    watcher = aioredis.Redis(port=redis_server.port)
    try:
        _, conversation = await timed_turn(services, None)
        redis_server.pause()
        # The first turn waits out one 0.2 s socket timeout; the sign-in slots' 2 s timeout
        # is not on a turn's path (it was: 2.3 s per turn in flight).
        first, _ = await timed_turn(services, conversation)
        assert first < 1.0, f"the first turn on a frozen Redis took {first:.2f} s"
        later = [(await timed_turn(services, conversation))[0] for _ in range(3)]
        assert max(later) < 0.15, f"turns with the breaker open took {later}"
        started = time.monotonic()
        await services.events.flush()  # the last turn's events: dropped, not waited on
        took = time.monotonic() - started
        assert took < 0.1, f"run events waited {took:.3f} s on a Redis known to be away"

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
        await pubsub.aclose()
    finally:
        redis_server.resume()
        await watcher.aclose()
        await services.close()
