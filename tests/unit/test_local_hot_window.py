"""The in-process hot window (no Redis) is bounded by the text its windows hold as well as
by their count: a count alone let 10,000 windows of long messages hold gigabytes."""

from __future__ import annotations

import pytest

from lumina_app.domain import Msg, Summary
from lumina_app.storage.local.hot_window import LocalHotWindow

pytestmark = pytest.mark.unit


def said(first_seq: int, chars: int) -> list[Msg]:
    return [
        Msg.user("q" * (chars // 2), seq=first_seq),
        Msg.assistant("a" * (chars - chars // 2), seq=first_seq + 1),
    ]


async def test_the_least_recent_windows_go_once_their_text_passes_the_budget() -> None:
    hot = LocalHotWindow(window=6, max_conversations=100, max_chars=1000)
    for c in ("c0", "c1", "c2"):
        await hot.replace(c, said(1, 400), 2)
    assert list(hot._entries) == ["c1", "c2"] and hot.chars == 800  # c0, the oldest, went

    assert await hot.append("c1", said(3, 100))  # c1: 500 now, the newest
    assert list(hot._entries) == ["c2", "c1"] and hot.chars == 900
    assert await hot.append("c1", said(5, 300))  # 1,200 in all: c2, the least recent, goes
    assert list(hot._entries) == ["c1"] and hot.chars == 800
    assert await hot.append("c1", said(7, 200))  # the deque drops seqs 1-2 (400): counted out
    window = await hot.read("c1")
    assert [m.seq for m in window.messages] == [3, 4, 5, 6, 7, 8] and hot.chars == 600

    await hot.set_summary("c1", Summary(covered_to_seq=4, text="s" * 100))
    assert hot.chars == 700  # a summary's text counts too
    await hot.replace("big", said(1, 1001), 2)  # alone over the budget: not kept
    assert await hot.read("big") is None and len(hot) == 0 and hot.chars == 0


async def test_a_gap_or_a_delete_gives_back_the_windows_text() -> None:
    hot = LocalHotWindow(window=20, max_conversations=10, max_chars=10_000)
    await hot.replace("c", said(1, 300), 2)
    await hot.replace("d", said(1, 200), 2)
    assert not await hot.append("c", said(9, 10))  # a gap: the window is dropped
    assert hot.chars == 200
    await hot.delete("d")
    assert hot.chars == 0 and len(hot) == 0
