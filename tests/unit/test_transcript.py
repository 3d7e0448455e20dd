"""What a client saw of a conversation (the gateway's history matching): questions and shown
answers only, one line per answer however many rows a tool round made of it."""

from __future__ import annotations

import pytest

from lumina_app.domain import MessageStatus, Msg
from lumina_app.domain.transcript import Line, longest_prefix, opening_hash, visible

pytestmark = pytest.mark.unit

U, A = "user", "assistant"


def rows() -> list[Msg]:
    """A turn with a tool round, a regenerated answer, a failed one, a stopped one."""
    return [
        Msg.user("what is 6*7?", seq=1, turn_id="t1"),
        Msg.assistant("Let me compute. ", seq=2, turn_id="t1", meta={"toolCalls": [{"id": "c"}]}),
        Msg.tool("42", call_id="c", name="calculator", seq=3, turn_id="t1"),
        Msg.assistant("It is 42.", seq=4, turn_id="t1"),
        Msg.user("tell a joke", seq=5, turn_id="t2"),
        Msg.assistant("old joke", seq=6, turn_id="t2", status=MessageStatus.SUPERSEDED),
        Msg.assistant("new joke", seq=7, turn_id="t2"),
        Msg.user("again", seq=8, turn_id="t3"),
        Msg.assistant("half", seq=9, turn_id="t3", status=MessageStatus.FAILED),
        Msg.user("once more", seq=10, turn_id="t4"),
        Msg.assistant("cut sh", seq=11, turn_id="t4", status=MessageStatus.STOPPED),
        Msg.user("last", seq=12, turn_id="t5"),
        Msg.assistant("", seq=13, turn_id="t5", status=MessageStatus.INTERRUPTED),
    ]


def test_a_client_sees_questions_and_shown_answers() -> None:
    assert visible(rows()) == [
        Line(U, "what is 6*7?"),
        Line(A, "Let me compute. It is 42."),
        Line(U, "tell a joke"),
        Line(A, "new joke"),
        Line(U, "again"),
        Line(U, "once more"),
        Line(A, "cut sh"),
        Line(U, "last"),
    ]


def test_order_is_by_seq_not_by_list_order() -> None:
    assert visible(list(reversed(rows()))) == visible(rows())


def test_the_longest_stored_prefix_wins() -> None:
    earlier = [Line(U, "a"), Line(A, "b"), Line(U, "c"), Line(A, "d")]
    stored = {
        "short": [Line(U, "a"), Line(A, "b")],
        "whole": list(earlier),
        "other": [Line(U, "a"), Line(A, "x")],
        "longer": [*earlier, Line(U, "e")],  # has more than the client: not this one
        "empty": [],
    }
    assert longest_prefix(stored, earlier) == ("whole", 4)
    assert longest_prefix({"other": stored["other"]}, earlier) is None
    assert longest_prefix({"first": earlier[:2], "second": earlier[:2]}, earlier) == ("first", 2)


def test_opening_hash_ignores_surrounding_whitespace() -> None:
    assert opening_hash(" hi\n") == opening_hash("hi") != opening_hash("hi!")
    assert len(opening_hash("hi")) == 64
