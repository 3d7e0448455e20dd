"""Run events copied to Redis Streams: a run started in one process resumes in another."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis

from lumina_app.composition import open_services
from lumina_app.domain import EventType
from lumina_app.domain.heartbeat import HEARTBEAT, Heartbeat
from lumina_app.storage.local.run_events import LocalRunEventLog
from lumina_app.storage.redis.run_events import RedisRunEventLog
from tests.conftest import SHARED_REDIS_URL
from tests.events import result, session
from tests.waits import wait_until


async def test_stream_resumes_on_another_instance_from_last_event_id(
    settings_factory, fake_llm
) -> None:
    fake_llm.script.chunks = [f"part{i} " for i in range(12)]
    one = await open_services(settings_factory())
    two = await open_services(settings_factory(), recover=False)
    try:
        assert isinstance(one.events, RedisRunEventLog)
        run = await one.chat.start(agent_id="tester", message="hello")
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
        run = await one.chat.start(agent_id="tester", message="hello")
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
    one = RedisRunEventLog(
        local=LocalRunEventLog(retention=60),
        writer=client,
        reader=client,
        prefix=redis_prefix,
        retention=60,
    )
    two = RedisRunEventLog(
        local=LocalRunEventLog(retention=60),
        writer=client,
        reader=aioredis.Redis.from_url(SHARED_REDIS_URL),
        prefix=redis_prefix,
        retention=60,
        block_ms=5000,
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
