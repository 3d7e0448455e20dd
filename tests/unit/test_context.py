"""Context building (DESIGN §5): system prompt + the last N history messages + the input,
never starting on an answer, answers cut short kept as far as they got."""

from __future__ import annotations

import pytest

from lumina_app.agents.context import build_context
from lumina_app.domain import MessageStatus, Msg, MsgRole

pytestmark = pytest.mark.unit


def history(n: int) -> list[Msg]:
    roles = [MsgRole.USER, MsgRole.ASSISTANT]
    return [Msg(roles[i % 2], f"m{i + 1}", seq=i + 1) for i in range(n)]


def test_a_new_conversation_is_the_prompt_and_the_input() -> None:
    built = build_context("Be brief.", [], "hi", window=20)
    assert built.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert built.seq_range == (None, None)


def test_the_window_keeps_the_last_n_and_never_starts_on_an_answer() -> None:
    built = build_context("", history(30), "next", window=5)
    assert [m["content"] for m in built.messages] == ["m27", "m28", "m29", "m30", "next"]
    assert built.messages[0]["role"] == "user"
    assert built.seq_range == (27, 30)


def test_an_answer_cut_short_stays_as_far_as_it_got_and_an_empty_one_is_left_out() -> None:
    msgs = history(4)
    msgs[1].status, msgs[1].content = MessageStatus.STOPPED, "half"
    msgs[3].status, msgs[3].content = MessageStatus.INTERRUPTED, ""
    built = build_context("", msgs, "again", window=20)
    assert [m["content"] for m in built.messages] == ["m1", "half", "m3", "again"]
