"""The hot window contract (``storage.hot_window``) on each implementation: a window is
whole or missing, never partial; ``append`` only extends it by the next seqs."""

from __future__ import annotations

from lumina_app.domain import Msg, Summary
from lumina_app.storage.hot_window import HotWindow
from tests.contracts.conftest import WINDOW


def turn(first_seq: int, text: str = "x") -> list[Msg]:
    return [
        Msg.user(f"q{text}{first_seq}", seq=first_seq),
        Msg.assistant(f"a{text}{first_seq}", seq=first_seq + 1),
    ]


def seqs(window) -> list[int]:
    return [m.seq for m in window.messages]


async def test_a_replaced_window_reads_back_whole_with_its_summary(hot_window: HotWindow) -> None:
    assert await hot_window.read("c") is None  # none: never an empty stand-in
    await hot_window.replace("c", turn(1), 2)
    window = await hot_window.read("c")
    assert seqs(window) == [1, 2] and window.high_water == 2 and window.summary is None
    assert [m.content for m in window.messages] == ["qx1", "ax1"]
    summary = Summary(covered_to_seq=2, text="so far")
    await hot_window.replace("c", turn(3), 4, summary)
    window = await hot_window.read("c")
    assert seqs(window) == [3, 4] and window.high_water == 4
    assert (window.summary.covered_to_seq, window.summary.text) == (2, "so far")
    assert await hot_window.read("other") is None
    assert await hot_window.status() == "ok"


async def test_append_extends_by_the_next_seqs_and_keeps_the_last_n(hot_window) -> None:
    await hot_window.replace("c", turn(1), 2)
    assert await hot_window.append("c", turn(3))
    assert await hot_window.append("c", turn(5))
    window = await hot_window.read("c")
    assert seqs(window) == [6 - WINDOW + 1 + i for i in range(WINDOW)]  # the last N only
    assert window.high_water == 6


async def test_append_to_a_missing_window_leaves_it_missing(hot_window) -> None:
    assert not await hot_window.append("c", turn(1))
    assert await hot_window.read("c") is None


async def test_a_gap_drops_the_window(hot_window) -> None:
    await hot_window.replace("c", turn(1), 2)
    assert not await hot_window.append("c", turn(4))  # seq 3 missing
    assert await hot_window.read("c") is None  # the next read rebuilds it


async def test_messages_at_or_below_the_mark_ask_for_a_rebuild(hot_window) -> None:
    await hot_window.replace("c", turn(1), 4)
    assert not await hot_window.append("c", turn(3))
    window = await hot_window.read("c")  # kept or dropped, never extended by them
    assert window is None or (seqs(window) == [1, 2] and window.high_water == 4)


async def test_a_summary_lands_only_on_a_window_that_exists(hot_window) -> None:
    await hot_window.set_summary("c", Summary(covered_to_seq=1, text="nowhere"))
    assert await hot_window.read("c") is None
    await hot_window.replace("c", turn(1), 2)
    await hot_window.set_summary("c", Summary(covered_to_seq=2, text="newer"))
    window = await hot_window.read("c")
    assert window.summary.text == "newer" and seqs(window) == [1, 2]


async def test_delete_forgets_one_window(hot_window) -> None:
    await hot_window.replace("c", turn(1), 2, Summary(covered_to_seq=1, text="s"))
    await hot_window.replace("d", turn(1), 2)
    await hot_window.delete("c")
    assert await hot_window.read("c") is None
    assert not await hot_window.append("c", turn(3))
    assert seqs(await hot_window.read("d")) == [1, 2]
