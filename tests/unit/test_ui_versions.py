"""Which version of a regenerated answer the page shows, and the switcher's place."""

from __future__ import annotations

import pytest

from lumina_app.ui.view_models.versions import arrange, retire_answer, show
from lumina_app.ui.view_models.views import UNARRANGED, MessageView

pytestmark = pytest.mark.unit


def row(seq: int, role: str, run: str = "", turn: str = "t2", status: str = "complete"):
    return MessageView(
        key=f"m{seq}", id=seq, seq=seq, role=role, content=f"m{seq}", status=status, error="",
        time="", run=run, tools=[], turn=turn, thinking="", **UNARRANGED,
    )  # fmt: skip


PAGE = [
    row(1, "user", turn="t1"),
    row(2, "assistant", "run-a", turn="t1"),
    row(3, "user"),
    row(4, "assistant", "run-b", status="superseded"),
    row(5, "assistant", "run-c"),
]


def shown(rows) -> list[int]:
    return [r["seq"] for r in rows if not r["hidden"]]


def test_the_newest_version_is_shown_with_the_switcher() -> None:
    rows = arrange(PAGE)
    assert shown(rows) == [1, 2, 3, 5]
    assert [(r["seq"], r["version"], r["versions"]) for r in rows if r["switcher"]] == [(5, 2, 2)]
    assert [r["seq"] for r in rows if r["last"]] == [5]


def test_switching_shows_an_earlier_version_and_back() -> None:
    rows = show(arrange(PAGE), "t2", 1)
    assert shown(rows) == [1, 2, 3, 4]
    assert [r["seq"] for r in rows if r["switcher"]] == [4]
    assert shown(arrange([*rows, row(6, "user", turn="t3")], {"t2": 1})) == [1, 2, 3, 4, 6]
    assert shown(show(rows, "t2", 2)) == [1, 2, 3, 5]


def test_a_regenerate_retires_the_shown_answer() -> None:
    rows = retire_answer(arrange(PAGE))
    assert shown(rows) == [1, 2, 3]
    assert shown(arrange([*rows, row(6, "assistant", "run-d")])) == [1, 2, 3, 6]
