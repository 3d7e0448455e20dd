"""Run events copied to Redis Streams: a run started in one process resumes in another."""

from __future__ import annotations

import asyncio

from lumina_app.agents.services import open_services
from lumina_app.domain import EventType
from lumina_app.storage.redis_run_events import RedisRunEventLog


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
        await asyncio.sleep(0.05)
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
