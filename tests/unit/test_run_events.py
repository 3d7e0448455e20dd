"""The in-process run event log as an SSE sender follows it: missed events, then live,
and a ``None`` keepalive marker only while a :class:`Heartbeat` is set and due."""

from __future__ import annotations

import asyncio

import pytest

from lumina_app.domain import EventType, RunEvent
from lumina_app.domain.heartbeat import HEARTBEAT, Heartbeat
from lumina_app.storage.local.run_events import LocalRunEventLog
from tests.events import chunk, result
from tests.waits import wait_until

pytestmark = pytest.mark.unit


def event(event_id: int, kind: EventType = EventType.DELTA) -> RunEvent:
    return result(event_id) if kind is EventType.RESULT else chunk(event_id, f"w{event_id}")


async def test_a_due_heartbeat_yields_none_between_events() -> None:
    log = LocalRunEventLog(retention=60)
    await log.publish("run-1", event(1))
    heartbeat = Heartbeat(0.05)
    heartbeat.reset()
    token = HEARTBEAT.set(heartbeat)
    try:
        events = log.subscribe("run-1")
        assert (await anext(events)).id == 1
        started = asyncio.get_running_loop().time()
        assert await anext(events) is None  # nothing new for 0.05 s
        assert asyncio.get_running_loop().time() - started >= 0.04
        heartbeat.reset()
        await log.publish("run-1", event(2))
        assert (await anext(events)).id == 2  # an event in time: no marker first
        await log.publish("run-1", event(3, EventType.RESULT))
        await log.finish("run-1")
        assert [e.id async for e in events if e is not None] == [3]
    finally:
        heartbeat.stop()
        HEARTBEAT.reset(token)


async def test_without_a_heartbeat_a_quiet_run_yields_nothing() -> None:
    log = LocalRunEventLog(retention=60)
    await log.publish("run-1", event(1))
    events = log.subscribe("run-1")
    assert (await anext(events)).id == 1
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0.1)  # the point: a quiet while in which nothing may arrive
    assert not waiting.done()  # the UI and the engine's own readers never see markers
    await log.publish("run-1", event(2))
    assert (await waiting).id == 2
    await events.aclose()


async def test_one_streams_keepalive_does_not_reach_another_reader_of_the_run() -> None:
    """The heartbeat wakes the run's waiters; a reader whose keepalive is not due (here
    one without any) waits on and sees only events."""
    log = LocalRunEventLog(retention=60)
    await log.publish("run-1", event(1))

    async def read(every: float | None, seen: list[int | None]) -> list[int | None]:
        heartbeat = None
        if every is not None:
            heartbeat = Heartbeat(every)
            heartbeat.reset()
            HEARTBEAT.set(heartbeat)  # this task's own context
        async for item in log.subscribe("run-1"):
            seen.append(None if item is None else item.id)
            if heartbeat is not None:
                heartbeat.reset()
        if heartbeat is not None:
            heartbeat.stop()
        return seen

    markers: list[int | None] = []
    quick, plain = asyncio.create_task(read(0.03, markers)), asyncio.create_task(read(None, []))
    await wait_until(lambda: markers.count(None) >= 3, "three markers to the quick reader")
    await log.publish("run-1", event(2, EventType.RESULT))
    await log.finish("run-1")
    assert (await plain) == [1, 2]
    quick_seen = await quick
    assert quick_seen[0] == 1 and quick_seen[-1] == 2 and quick_seen.count(None) >= 3
