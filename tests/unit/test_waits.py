"""tests/waits.py: a wait ends as soon as its condition holds, and fails naming it."""

from __future__ import annotations

import pytest

from tests.waits import WaitTimeout, wait_until, wait_until_sync

pytestmark = pytest.mark.unit


async def test_wait_until_returns_the_first_truthy_value_of_a_sync_or_async_condition() -> None:
    polls = iter([0, [], "ready"])
    assert await wait_until(lambda: next(polls), "the third poll", interval=0) == "ready"

    async def later() -> int:
        return 7

    assert await wait_until(later, "an awaitable condition") == 7


async def test_wait_until_fails_naming_what_it_waited_for() -> None:
    with pytest.raises(WaitTimeout, match=r"after 0.05 s waiting for the moon \(last seen: 0\)"):
        await wait_until(lambda: 0, "the moon", within=0.05)


def test_the_sync_twin_behaves_the_same() -> None:
    polls = iter([False, True])
    assert wait_until_sync(lambda: next(polls), "the second poll", interval=0) is True
    with pytest.raises(AssertionError, match="waiting for nothing"):
        wait_until_sync(lambda: None, "nothing", within=0.05)
