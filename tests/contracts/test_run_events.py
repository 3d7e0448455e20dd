"""The run event contract (``storage.run_events``) on each implementation: a run's events
replay from any id, then follow live, until its last; a reader elsewhere (another
instance, on Redis) sees the same."""

from __future__ import annotations

import asyncio

from tests.contracts.conftest import EventLogs
from tests.events import chunk, result
from tests.waits import wait_until


async def ids(events) -> list[int]:
    return [event.id async for event in events if event is not None]


async def test_a_finished_run_replays_from_any_id(run_events: EventLogs) -> None:
    log = run_events.here
    for event_id in (1, 2, 3):
        await log.publish("run-1", chunk(event_id, f"w{event_id}"))
    await log.publish("run-1", result(4))
    await log.finish("run-1")
    assert await log.known("run-1") and not await log.known("run-never")
    assert await ids(log.subscribe("run-1")) == [1, 2, 3, 4]
    assert await ids(log.subscribe("run-1", after=2)) == [3, 4]
    chunks = [e async for e in log.subscribe("run-1") if e is not None and e.id < 4]
    assert [e.payload.text for e in chunks] == ["w1", "w2", "w3"]


async def test_a_reader_elsewhere_gets_the_missed_events_then_the_live_ones(run_events) -> None:
    here, elsewhere = run_events.here, run_events.elsewhere
    await here.publish("run-1", chunk(1, "a"))
    await here.publish("run-1", chunk(2, "b"))
    await wait_until(lambda: elsewhere.known("run-1"), "the run to be known elsewhere")
    reading = asyncio.create_task(ids(elsewhere.subscribe("run-1", after=1)))
    await here.publish("run-1", chunk(3, "c"))
    await here.publish("run-1", result(4))
    await here.finish("run-1")
    assert await asyncio.wait_for(reading, 10) == [2, 3, 4]


async def test_a_deleted_run_is_gone_everywhere(run_events) -> None:
    here, elsewhere = run_events.here, run_events.elsewhere
    await here.publish("run-1", chunk(1, "a"))
    await here.publish("run-1", result(2))
    await here.finish("run-1")
    await wait_until(lambda: elsewhere.known("run-1"), "the run to be known elsewhere")
    await here.delete("run-1")
    assert not await here.known("run-1")
    assert not await elsewhere.known("run-1")
