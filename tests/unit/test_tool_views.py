"""The chat page's tool cards without a browser: stored rows paired into cards (also
across a page boundary), and a live turn built from its run's events — steps moving into
the list once done, cards running then done, a run stopped during its calls."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from lumina_app.domain import (
    AnswerChunk,
    MessageStatus,
    Msg,
    RunFinished,
    RunStatus,
    Scenario,
    ToolCallFinished,
    ToolCallRequested,
)
from lumina_app.ui.view_models.live_turn import LiveTurn
from lumina_app.ui.view_models.tool_views import card, pair_results, with_result
from lumina_app.ui.view_models.views import message_view
from tests.events import session

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def stored_turn() -> list[Msg]:
    calls = [
        {"id": "a", "name": "current_time", "arguments": '{"timezone": "UTC"}'},
        {"id": "b", "name": "calculator", "arguments": '{"expression": "1/0"}'},
    ]
    rows = [
        Msg.user("time and 1/0?"),
        Msg.assistant("Let me see.", meta={"toolCalls": calls}),
        Msg.tool("2026-11-30T10:00:00+00:00", call_id="a", name="current_time",
                 meta={"isError": False, "durationMs": 3}),
        Msg.tool("Error: division by zero", call_id="b", name="calculator",
                 meta={"isError": True, "durationMs": 1500}),
        Msg.assistant("It is ten; 1/0 has no value."),
    ]  # fmt: skip
    for seq, row in enumerate(rows, start=1):
        row.id, row.seq, row.created_at = 100 + seq, seq, T0
    return rows


def test_stored_results_are_folded_into_the_cards_of_their_calls() -> None:
    views = pair_results([message_view(m) for m in stored_turn()])
    assert [v["role"] for v in views] == ["user", "assistant", "assistant"]
    clock, calculator = views[1]["tools"]
    assert clock == {
        "key": "a",
        "name": "current_time",
        "arguments": '{\n  "timezone": "UTC"\n}',
        "content": "2026-11-30T10:00:00+00:00",
        "status": "done",
        "duration": "3 ms",
        "options": [],
    }
    assert (calculator["status"], calculator["duration"]) == ("error", "1.5 s")
    assert views[2]["tools"] == []


def test_a_result_whose_call_is_on_an_older_page_waits_for_it() -> None:
    rows = [message_view(m) for m in stored_turn()]
    newest = pair_results(rows[3:])  # the page starts at the second result
    assert [v["role"] for v in newest] == ["tool", "assistant"]
    assert newest[0]["tools"][0]["status"] == "error"  # shown on its own meanwhile
    both = pair_results(rows[:3] + newest)  # the older page is loaded
    assert [v["role"] for v in both] == ["user", "assistant", "assistant"]
    assert [c["status"] for c in both[1]["tools"]] == ["done", "error"]


SESSION = dataclasses.replace(
    session().payload, user_message_id=11, assistant_message_id=12, user_seq=1
)


def result(
    message_id: int, status: RunStatus = RunStatus.COMPLETE, content: str = "done"
) -> RunFinished:
    return RunFinished("run-1", "c", message_id, "msg-1", status, content, Scenario.NEW)


def test_a_live_turn_moves_each_finished_step_into_the_list() -> None:
    turn = LiveTurn("time?", known=set())
    turn.feed(SESSION)
    turn.feed(AnswerChunk("Let me "))
    turn.feed(AnswerChunk("see."))
    turn.feed(ToolCallRequested("a", "current_time", "{}", 12, 2))
    assert turn.take() == [] and turn.text == "Let me see."
    assert [(c["key"], c["status"]) for c in turn.cards] == [("a", "running")]
    turn.feed(ToolCallFinished("a", "current_time", "10:00", False, 4))
    assert turn.cards[0]["status"] == "done" and turn.cards[0]["content"] == "10:00"
    turn.feed(AnswerChunk("It is ten."))  # the next step: the one before is stored
    question, step = turn.take()
    assert (question["id"], question["role"], question["content"]) == (11, "user", "time?")
    assert (step["id"], step["seq"], step["content"]) == (12, 2, "Let me see.")
    assert step["tools"][0]["status"] == "done"
    assert turn.question_listed and turn.text == "It is ten." and turn.cards == []
    turn.feed(result(14, content="It is ten."))
    (answer,) = turn.finish()
    assert (answer["id"], answer["seq"], answer["content"], answer["tools"]) == (
        14,
        4,  # after the step's answer (2) and its one TOOL row (3)
        "It is ten.",
        [],
    )


def test_a_run_stopped_during_its_calls_ends_on_the_answer_that_asked() -> None:
    turn = LiveTurn("slow one", known=set())
    turn.feed(SESSION)
    turn.feed(ToolCallRequested("a", "slow", "{}", 12, 2))
    turn.feed(ToolCallRequested("b", "echo", "{}", 12, 2))
    turn.feed(ToolCallFinished("b", "echo", "hi", False, 1))
    turn.feed(ToolCallFinished("a", "slow", "Error: stopped by the user", True, 900))
    turn.feed(result(12, RunStatus.STOPPED, content=""))
    question, answer = turn.finish()
    assert question["role"] == "user"
    assert (answer["id"], answer["seq"], answer["status"]) == (12, 2, "stopped")
    assert [(c["key"], c["status"]) for c in answer["tools"]] == [("a", "error"), ("b", "done")]


def test_a_page_that_reattaches_does_not_repeat_what_it_shows() -> None:
    turn = LiveTurn("", known={11})  # re-attached after a reload: the question is listed
    for payload in (
        SESSION,
        ToolCallRequested("a", "current_time", "{}", 12, 2),
        ToolCallFinished("a", "current_time", "10:00", False, 4),
        ToolCallRequested("b", "current_time", "{}", 14, 4),  # a second step, no text
        ToolCallFinished("b", "current_time", "10:01", False, 4),
        AnswerChunk("Twice."),
        result(16, content="Twice."),
    ):
        turn.feed(payload)
    rows = turn.finish()
    assert [(r["id"], r["seq"], len(r["tools"])) for r in rows] == [
        (12, 2, 1),
        (14, 4, 1),
        (16, 6, 0),
    ]
    assert MessageStatus(rows[-1]["status"]) is MessageStatus.COMPLETE


def test_an_acp_permission_request_card_carries_its_options() -> None:
    arguments = '{"requestId": "perm-1", "options": [{"optionId": "yes", "name": "Allow"}]}'
    waiting = card("perm-1", "permission: edit notes.md", arguments, "running")
    assert waiting["options"] == [{"optionId": "yes", "name": "Allow"}]
    assert with_result(waiting, "chose Allow", False, 5)["options"] == []  # answered: no buttons
    assert card("t1", "list files", arguments, "running")["options"] == []
