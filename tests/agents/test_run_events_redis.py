"""Run events copied to Redis Streams: a run started in one process resumes in another."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from lumina_app.composition import open_services
from lumina_app.domain import EventType
from lumina_app.domain.heartbeat import HEARTBEAT, Heartbeat
from lumina_app.storage.local.run_events import LocalRunEventLog
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.run_events import RedisRunEventLog
from tests.conftest import SHARED_REDIS_URL
from tests.events import result, session
from tests.waits import wait_until


def event_log(
    client: aioredis.Redis, prefix: str, *, reader: aioredis.Redis | None = None, **options
) -> RedisRunEventLog:
    """One instance's event log writing through ``client``; ``reader``: its own
    connections for XREAD (another instance's), else the same client."""
    return RedisRunEventLog(
        local=LocalRunEventLog(retention=60),
        writer=client,
        reader=reader or client,
        prefix=prefix,
        retention=60,
        **options,
    )


async def test_stream_resumes_on_another_instance_from_last_event_id(
    settings_factory, fake_llm
) -> None:
    fake_llm.script.chunks = [f"part{i} " for i in range(12)]
    one = await open_services(settings_factory())
    two = await open_services(settings_factory(), recover=False)
    try:
        assert isinstance(one.events, RedisRunEventLog)
        run = await one.chat.start_run(agent_id="tester", message="hello")
        seen = [e async for e in one.chat.follow(run)]
        await one.events.flush()
        # The other instance has no local buffer: it reads Redis, from after event 4.
        resumed = [e async for e in await two.chat.open_stream(run.run_id, after=4, owner="")]
        assert [e.id for e in resumed] == [e.id for e in seen if e.id > 4]
        assert [(e.type, e.data) for e in resumed] == [(e.type, e.data) for e in seen if e.id > 4]
        assert resumed[-1].type is EventType.RESULT
    finally:
        await one.close()
        await two.close()


async def test_live_follow_across_instances(settings_factory, fake_llm) -> None:
    fake_llm.script.chunks = [f"p{i} " for i in range(10)]
    fake_llm.script.delay = 0.03
    one = await open_services(settings_factory())
    two = await open_services(settings_factory(), recover=False)
    try:
        run = await one.chat.start_run(agent_id="tester", message="hello")
        await wait_until(lambda: run.next_event_id > 2, "the run's first events")
        await one.events.flush()
        remote = [e async for e in await two.chat.open_stream(run.run_id, owner="")]
        local = [e async for e in one.chat.follow(run)]
        assert [e.id for e in remote] == [e.id for e in local]
        assert "".join(e.data["text"] for e in remote if e.type is EventType.DELTA) == "".join(
            f"p{i} " for i in range(10)
        )
    finally:
        await one.close()
        await two.close()


async def test_a_stream_read_from_redis_gets_keepalive_markers(redis_prefix) -> None:
    """Another instance's quiet run, read through XREAD: the heartbeat bounds each block,
    so a keepalive is due on time even though Redis blocks up to ``block_ms``."""
    client = aioredis.Redis.from_url(SHARED_REDIS_URL)
    one = event_log(client, redis_prefix)
    two = event_log(
        client, redis_prefix, reader=aioredis.Redis.from_url(SHARED_REDIS_URL), block_ms=5000
    )
    heartbeat = Heartbeat(0.1)
    heartbeat.reset()
    token = HEARTBEAT.set(heartbeat)
    try:
        await one.publish("run-1", session(1, run="run-1"))
        await one.flush()
        events = two.subscribe("run-1")
        assert (await anext(events)).id == 1
        started = asyncio.get_running_loop().time()
        assert await anext(events) is None
        assert asyncio.get_running_loop().time() - started < 1.0  # not the 5 s block
        heartbeat.reset()
        await one.publish("run-1", result(2))
        await one.flush()
        assert [e.id async for e in events if e is not None] == [2]
    finally:
        heartbeat.stop()
        HEARTBEAT.reset(token)
        await one.close()
        await two.close()


async def test_another_instance_follows_a_run_whose_events_are_not_in_redis_yet(
    settings_factory, fake_llm
) -> None:
    """The page on instance B hears of the run (Pub/Sub) before A's first batch of its
    events is in Redis: B waits for the stream of a run the store shows running, instead
    of calling it unknown (the page then dropped the question and showed nothing)."""
    fake_llm.script.chunks = [f"q{i} " for i in range(6)]
    fake_llm.script.delay = 0.02
    one = await open_services(settings_factory())
    two = await open_services(settings_factory(), recover=False)
    try:
        assert isinstance(one.events, RedisRunEventLog)
        held = asyncio.Event()
        copy = one.events._drain

        async def late_copy() -> None:  # A's copy held back: the first batch lands late
            await held.wait()
            await copy()

        one.events._drain = late_copy  # type: ignore[method-assign]
        run = await one.chat.start_run(agent_id="tester", message="hello")
        assert not await two.events.known(run.run_id)
        remote = await two.chat.open_stream(run.run_id, owner="")
        asyncio.get_running_loop().call_later(0.3, held.set)
        followed = [e async for e in remote]
        assert [e.id for e in followed] == list(range(1, followed[-1].id + 1))
        assert followed[0].type is EventType.SESSION and followed[-1].type is EventType.RESULT
        assert "".join(e.data["text"] for e in followed if e.type is EventType.DELTA) == "".join(
            f"q{i} " for i in range(6)
        )
    finally:
        held.set()
        await one.close()
        await two.close()


async def test_a_batch_redis_refused_is_copied_once_it_is_back(redis_prefix) -> None:
    """Redis known to be away for a moment (the breaker open) delays the copy of a run's
    events; it does not lose them: another instance still reads every event, in order."""
    client = aioredis.Redis.from_url(SHARED_REDIS_URL)
    breaker = CircuitBreaker(cooldown=0.3)
    one = event_log(client, redis_prefix, breaker=breaker)
    two = event_log(client, redis_prefix, reader=aioredis.Redis.from_url(SHARED_REDIS_URL))
    try:
        breaker.record_failure()  # a timeout elsewhere on the turn's path just now
        await one.publish("run-2", session(1, run="run-2"))
        await one.publish("run-2", result(2))
        await one.finish("run-2")
        await one.flush()
        assert [e.id async for e in two.subscribe("run-2")] == [1, 2]
        assert not breaker.is_open
    finally:
        await one.close()
        await two.close()


async def test_a_reader_with_keepalives_waits_for_a_stream_not_there_yet(redis_prefix) -> None:
    """An SSE reader's blocks are short (its keepalives), so "no stream" is only believed
    after ``block_ms``: the run's events, copied half a second late, still reach it."""
    client = aioredis.Redis.from_url(SHARED_REDIS_URL)
    one = event_log(client, redis_prefix)
    two = event_log(
        client, redis_prefix, reader=aioredis.Redis.from_url(SHARED_REDIS_URL), block_ms=3000
    )
    heartbeat = Heartbeat(0.1)
    heartbeat.reset()
    token = HEARTBEAT.set(heartbeat)

    async def late() -> None:
        await asyncio.sleep(0.5)
        await one.publish("run-3", session(1, run="run-3"))
        await one.publish("run-3", result(2))
        await one.flush()

    try:
        writing = asyncio.create_task(late())
        seen = []
        async for event in two.subscribe("run-3"):
            if event is None:
                heartbeat.reset()
            else:
                seen.append(event.id)
        await writing
        assert seen == [1, 2]
    finally:
        heartbeat.stop()
        HEARTBEAT.reset(token)
        await one.close()
        await two.close()


async def test_deleting_a_run_whose_copy_waits_for_redis_does_not_wait_it_out(
    redis_prefix,
) -> None:
    """A conversation deleted while Redis is away: its runs' events are let go at once
    (not after the copy's retries), and a later copy does not bring their stream back."""
    client = aioredis.Redis.from_url(SHARED_REDIS_URL)
    breaker = CircuitBreaker(cooldown=0.5)
    log = event_log(client, redis_prefix, breaker=breaker)
    try:
        breaker.record_failure()
        await log.publish("run-4", session(1, run="run-4"))
        await log.publish("run-5", session(1, run="run-5"))
        await asyncio.sleep(0.05)  # the copy has been refused once and waits to try again
        started = asyncio.get_running_loop().time()
        await log.delete("run-4")
        assert asyncio.get_running_loop().time() - started < 1.5
        await log.flush()  # Redis is "back" after the cool-down: run-5 is copied
        assert not await client.exists(log.key("run-4"))
        assert await client.xlen(log.key("run-5")) == 1
    finally:
        await log.close()
