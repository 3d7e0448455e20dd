"""Live pages across instances (#30): two service stacks over one SQL database and one
Redis. A page open on instance B hears of a run started on A (and of renames, forks,
deletes) through Redis Pub/Sub and follows the answer from the run event log; another
owner's page hears nothing."""

from __future__ import annotations

import pytest

from lumina_app.composition import open_services
from lumina_app.domain import EventType, Principal, Via
from tests.waits import wait_until

ANN = Principal(owner="ann", via=Via.API_KEY, name="ann")
BOB = Principal(owner="bob", via=Via.API_KEY, name="bob")


@pytest.fixture
async def pair(settings_factory):
    one = await open_services(settings_factory())
    two = await open_services(settings_factory(), recover=False)
    bus = one.live.bus
    await wait_until(
        lambda: _subscribers(bus), "both instances' listeners to subscribe to the live channel"
    )
    yield one, two
    await one.close()
    await two.close()


async def _subscribers(bus) -> bool:
    [(_, count)] = await bus.client.pubsub_numsub(bus.channel)
    return count >= 2


async def next_kind(feed, kind: str):
    while True:
        notice = await feed.next(5)
        assert notice is not None, f"no {kind!r} notice within 5 s"
        if notice.kind == kind:
            return notice


async def test_a_page_on_b_follows_a_run_started_on_a(pair, fake_llm) -> None:
    one, two = pair
    fake_llm.script.chunks = [f"w{i} " for i in range(30)]
    fake_llm.script.delay = 0.01
    async with two.live.page(ANN, "tab-on-b") as anns, two.live.page(BOB, "tab-bob") as bobs:
        run = await one.runs.start_run(ANN, agent_id="tester", message="hello from A")
        notice = await next_kind(anns, "run")
        assert (notice.conversation, notice.run_id) == (run.conversation.uuid, run.run_id)
        assert notice.question == "hello from A"
        events = await two.runs.events(ANN, notice.run_id)  # replayed from Redis on B
        kinds = []
        async for event in events:
            if event is not None:
                kinds.append(event.type)
                if event.type is EventType.RESULT:
                    break
        assert kinds[0] is EventType.SESSION and EventType.DELTA in kinds
        assert (await one.runs.result(run)).content.startswith("w0 w1")
        ended = await next_kind(anns, "ended")
        assert ended.conversation == run.conversation.uuid
        await one.conversations.rename(ANN, run.conversation.uuid, "Named on A")
        renamed = await next_kind(anns, "renamed")
        assert renamed.title == "Named on A"
        fork = await one.conversations.fork(ANN, run.conversation.uuid)
        assert (await next_kind(anns, "forked")).conversation == fork.uuid
        await one.conversations.delete(ANN, fork.uuid)
        assert (await next_kind(anns, "deleted")).conversation == fork.uuid
        assert await bobs.next(0.3) is None  # Bob's page heard nothing of Ann's
        assert bobs.queue.empty()
