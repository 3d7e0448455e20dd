"""The live hub as an open page sees it: its owner's notices only, in order; one feed
per page; a cap; a page gone is let go; a run is announced when it starts and ends."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from lumina_app.domain import Principal, Via
from lumina_app.services.live import QUEUE, AlreadyLive, LiveHub, Notice, TooManyLivePages
from lumina_app.storage.local.live_bus import LocalLiveBus

pytestmark = pytest.mark.unit

ANN = Principal(owner="ann", via=Via.SESSION, name="ann")
BOB = Principal(owner="bob", via=Via.SESSION, name="bob")


@pytest.fixture
async def hub():
    hub = LiveHub(LocalLiveBus(), per_owner=2, total=3)
    listening = asyncio.create_task(hub.run_forever())
    await asyncio.sleep(0)  # the point: one turn of the loop so the listener task starts
    yield hub
    listening.cancel()


async def test_a_notice_reaches_the_owners_pages_and_no_one_elses(hub) -> None:
    async with (
        hub.page(ANN, "tab-1") as one,
        hub.page(ANN, "tab-2") as two,
        hub.page(BOB, "tab-3") as bobs,
    ):
        await hub.announce("ann", Notice("renamed", "c1", title="New name"))
        assert (await one.next(1)).title == "New name"
        assert (await two.next(1)).kind == "renamed"
        assert await bobs.next(0.05) is None  # nothing: idle


async def test_one_feed_per_page_and_a_cap(hub) -> None:
    async with hub.page(ANN, "tab-1"):
        with pytest.raises(AlreadyLive):
            async with hub.page(ANN, "tab-1"):
                pass
        async with hub.page(ANN, "tab-2"):
            with pytest.raises(TooManyLivePages):  # per owner
                async with hub.page(ANN, "tab-3"):
                    pass
            async with hub.page(BOB, "tab-4"):
                with pytest.raises(TooManyLivePages):  # per process
                    async with hub.page(BOB, "tab-5"):
                        pass
    assert hub.open_pages == 0 and hub._pages == {} and hub._keys == {}


async def test_a_tab_signed_in_as_someone_else_takes_over_at_once(hub) -> None:
    """The attacker's view: Bob signs in on the tab Ann used. From that moment Ann's
    notices reach the tab no more (not after the old feed's next wake-up), and Bob's
    feed runs at once instead of being refused as "already live"."""
    async with hub.page(ANN, "tab-1") as anns:
        async with hub.page(BOB, "tab-1") as bobs:
            assert (await anns.next(1)).kind == "closed"  # at once, not after IDLE_SECONDS
            await hub.announce("ann", Notice("renamed", "c1", title="Ann's secret"))
            await hub.announce("bob", Notice("renamed", "c2", title="Bob's own"))
            assert (await bobs.next(1)).title == "Bob's own"
            assert await anns.next(0.05) is None, "nothing of Ann's after the takeover"
            assert await bobs.next(0.05) is None
            assert hub.open_pages == 1 and set(hub._pages) == {"bob"}
        assert hub.open_pages == 0  # Ann's leaving later does not drop anyone
    assert hub.open_pages == 0 and hub._pages == {} and hub._keys == {}


async def test_a_page_that_does_not_keep_up_keeps_the_newest(hub) -> None:
    async with hub.page(ANN, "tab-1") as feed:
        for i in range(QUEUE + 5):
            await hub.announce("ann", Notice("renamed", "c1", title=str(i)))
        assert (await feed.next(1)).title == "5"
        assert feed.queue.qsize() == QUEUE - 1


async def test_a_run_is_announced_when_it_starts_and_when_it_ends(hub) -> None:
    done = asyncio.Event()
    run = SimpleNamespace(
        run_id="run-1",
        conversation=SimpleNamespace(uuid="c1", agent_id="demo", title="Hello"),
        user=SimpleNamespace(content="what is up?", files=[{"id": "file-1", "name": "a.png"}]),
        done=done,
    )
    async with hub.page(ANN, "tab-1") as feed:
        hub.run_started("ann", run)
        started = await feed.next(1)
        assert (started.kind, started.run_id, started.question) == ("run", "run-1", "what is up?")
        assert started.files == ({"id": "file-1", "name": "a.png"},)  # the question's files
        assert await feed.next(0.05) is None
        done.set()
        ended = await feed.next(1)
        assert (ended.kind, ended.conversation) == ("ended", "c1")


async def test_a_malformed_notice_from_the_bus_is_ignored(hub) -> None:
    async with hub.page(ANN, "tab-1") as feed:
        hub.deliver("ann", {"title": "no kind"})
        hub.deliver("ann", {"kind": "renamed", "conversation": "c1", "extra": 1})
        assert (await feed.next(1)).conversation == "c1"


async def test_a_disabled_owners_pages_are_told_to_stop(hub) -> None:
    async with hub.page(ANN, "tab-1") as anns, hub.page(BOB, "tab-2") as bobs:
        await hub.close_owner("ann")
        assert (await anns.next(1)).kind == "closed"
        assert await bobs.next(0.05) is None
