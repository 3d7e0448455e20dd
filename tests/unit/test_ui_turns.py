"""A turn reads as one answer (#30): a run's rows fold into one message with the earlier
steps inline, in order; a streaming run's steps go into the streaming message."""

from __future__ import annotations

import pytest

from lumina_app.ui.view_models.turns import one_per_turn, split_live
from lumina_app.ui.view_models.versions import arrange
from lumina_app.ui.view_models.views import UNARRANGED, MessageView

pytestmark = pytest.mark.unit


def row(seq: int, role: str, run: str = "", turn: str = "t1", tools: int = 0, **extra):
    cards = [{"id": f"c{seq}.{i}", "name": "calculator"} for i in range(tools)]
    return MessageView(**{
        "key": f"m{seq}", "id": seq, "seq": seq, "role": role, "content": f"text {seq}",
        "status": "complete", "error": "", "time": f"time {seq}", "run": run,
        "tools": cards, "turn": turn, "thinking": "", **UNARRANGED, **extra,
    })  # fmt: skip


TOOL_TURN = [
    row(1, "user"),
    row(2, "assistant", "run-a", tools=2),  # asked for two tools (results paired in)
    row(5, "assistant", "run-a", tools=1),  # a second step
    row(7, "assistant", "run-a"),  # the answer after them
]


def test_a_tool_turn_is_one_message_with_its_steps_in_order() -> None:
    shown = one_per_turn(TOOL_TURN)
    assert [(r["role"], r["seq"]) for r in shown] == [("user", 1), ("assistant", 7)]
    answer = shown[1]
    assert [s["seq"] for s in answer["steps"]] == [2, 5]
    assert [len(s["tools"]) for s in answer["steps"]] == [2, 1]
    assert answer["content"] == "text 7" and answer["time"] == "time 2"
    assert TOOL_TURN[3]["steps"] == []  # the rows themselves are left as they are


def test_turns_and_runs_do_not_fold_into_each_other() -> None:
    rows = [
        *TOOL_TURN,
        row(8, "user", turn="t2"),
        row(9, "assistant", "run-b", turn="t2"),
    ]
    assert [r["seq"] for r in one_per_turn(rows)] == [1, 7, 8, 9]


def test_a_regenerated_turn_folds_only_the_version_shown() -> None:
    rows = arrange([
        row(1, "user"),
        row(2, "assistant", "run-a", tools=1, status="superseded"),
        row(4, "assistant", "run-a", status="superseded"),
        row(5, "assistant", "run-b", tools=1),
        row(7, "assistant", "run-b"),
    ])  # fmt: skip
    shown = [r for r in one_per_turn(rows) if not r["hidden"]]
    assert [(r["seq"], [s["seq"] for s in r["steps"]]) for r in shown] == [(1, []), (7, [5])]


def test_a_streaming_runs_steps_are_shown_inside_the_streaming_message() -> None:
    streaming = TOOL_TURN[:3]  # the final answer still streams
    listed, steps = split_live(one_per_turn(streaming), "run-a")
    assert [r["seq"] for r in listed] == [1]
    assert [s["seq"] for s in steps] == [2, 5]
    assert split_live(one_per_turn(streaming), "") == (one_per_turn(streaming), [])
    listed, steps = split_live(one_per_turn(streaming), "run-other")
    assert len(listed) == 2 and steps == []
