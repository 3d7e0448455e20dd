"""The counted slots contract (``storage.slots``) on each implementation: at most a limit
of live members per key, taken all or nothing, each gone ``ttl`` after it was taken or
renewed."""

from __future__ import annotations

import asyncio

from lumina_app.storage.slots import Slots

LONG = 60.0


async def test_a_key_holds_at_most_its_limit(slots: Slots) -> None:
    assert await slots.take({"k": 2}, "m1", LONG) == 0
    assert await slots.take({"k": 2}, "m2", LONG) == 0
    wait = await slots.take({"k": 2}, "m3", LONG)
    assert 0 < wait <= LONG  # the seconds until one frees
    await slots.release(["k"], "m1")
    assert await slots.take({"k": 2}, "m3", LONG) == 0
    assert await slots.take({"k": 2}, "m4", LONG) > 0


async def test_a_take_is_all_or_nothing_across_its_keys(slots) -> None:
    assert await slots.take({"full": 1}, "m1", LONG) == 0
    assert await slots.take({"free": 1, "full": 1}, "m2", LONG) > 0
    assert await slots.take({"free": 1}, "m3", LONG) == 0  # m2 was not added under "free"


async def test_clear_empties_one_key(slots) -> None:
    await slots.take({"a": 1}, "m1", LONG)
    await slots.take({"b": 1}, "m1", LONG)
    await slots.clear("a")
    assert await slots.take({"a": 1}, "m2", LONG) == 0
    assert await slots.take({"b": 1}, "m2", LONG) > 0


async def test_a_member_expires_unless_renewed(slots) -> None:
    await slots.take({"short": 1}, "m1", 0.3)
    await slots.take({"kept": 1}, "m1", 0.3)
    await slots.renew(["kept"], "m1", LONG)
    await asyncio.sleep(0.6)  # the point: the short ttl runs out
    assert await slots.take({"short": 1}, "m2", LONG) == 0
    assert await slots.take({"kept": 1}, "m2", LONG) > 0


async def test_renew_takes_a_lost_member_again(slots) -> None:
    await slots.take({"k": 1}, "m1", LONG)
    await slots.clear("k")
    await slots.renew(["k"], "m1", LONG)
    assert await slots.take({"k": 1}, "m2", LONG) > 0


async def test_another_process_counts_in_the_same_slots_exactly_when_shared(
    slots: Slots, slots_elsewhere: Slots
) -> None:
    assert await slots.take({"owner": 1}, "run-1", LONG) == 0
    wait = await slots_elsewhere.take({"owner": 1}, "run-2", LONG)
    assert (wait > 0) is slots.shared
    await slots.release(["owner"], "run-1")
    if slots.shared:
        assert await slots_elsewhere.take({"owner": 1}, "run-2", LONG) == 0
