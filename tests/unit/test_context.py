"""Context building (ARCHITECTURE.md § Runs): system prompt + the last N history messages + input,
never starting on an answer, answers cut short kept as far as they got."""

from __future__ import annotations

import pytest

from lumina_app.agents.run.context import (
    MAX_EARLIER,
    SUMMARY_PREFIX,
    build_context,
    carried,
    usable_history,
)
from lumina_app.domain import MessageStatus, Msg, MsgRole, Summary

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


# -- tool calls and their results -----------------------------------------------------------


def call(call_id: str, name: str = "current_time") -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": "{}"}


def tool_turn(first_seq: int, question: str, calls: list[str]) -> list[Msg]:
    """A question, an answer asking for ``calls``, their results, the final answer."""
    msgs = [Msg.user(question)]
    if calls:
        msgs.append(Msg.assistant("", meta={"toolCalls": [call(c) for c in calls]}))
    msgs += [Msg.tool(f"result {c}", call_id=c, name="current_time") for c in calls]
    msgs.append(Msg.assistant(f"answer to {question}"))
    for offset, msg in enumerate(msgs):
        msg.seq = first_seq + offset
    return msgs


FUNCTION = {"name": "current_time", "arguments": "{}"}


def test_a_tool_call_goes_with_its_tool_calls_and_its_results_as_role_tool() -> None:
    built = build_context("", tool_turn(1, "q", ["a", "b"]), "next", window=20)
    assert built.messages == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": c, "type": "function", "function": FUNCTION} for c in ("a", "b")],
        },
        {"role": "tool", "tool_call_id": "a", "content": "result a"},
        {"role": "tool", "tool_call_id": "b", "content": "result b"},
        {"role": "assistant", "content": "answer to q"},
        {"role": "user", "content": "next"},
    ]


def test_an_empty_result_still_answers_its_call() -> None:
    msgs = tool_turn(1, "q", ["a"])
    msgs[2].content = ""
    built = build_context("", msgs, "next", window=20)
    assert {"role": "tool", "tool_call_id": "a", "content": ""} in built.messages


@pytest.mark.parametrize("window", range(1, 16))
def test_no_window_separates_a_call_from_its_results(window: int) -> None:
    history = tool_turn(1, "q1", ["a", "b"]) + tool_turn(6, "q2", ["c"]) + tool_turn(10, "q3", [])
    assert [m.seq for m in history] == list(range(1, 12))
    used = usable_history(history, window)
    assert not used or used[0].role is MsgRole.USER
    assert_pairs_whole(used)
    assert used == history[len(history) - len(used) :]  # only ever cut at the front
    assert len(used) > window - 5  # by less than the turn it cuts into


def assert_pairs_whole(msgs: list[Msg]) -> None:
    i = 0
    while i < len(msgs):
        if msgs[i].role is MsgRole.TOOL:
            raise AssertionError(f"a result without its call at {i}")
        if msgs[i].tool_calls:
            wanted = [c["id"] for c in msgs[i].tool_calls]
            got = [m.tool_call_id for m in msgs[i + 1 : i + 1 + len(wanted)]]
            assert got == wanted, (wanted, got)
            i += len(wanted)
        i += 1


def test_results_without_their_call_are_left_out_a_call_without_results_keeps_its_text() -> None:
    orphan = Msg.tool("lost", call_id="x", name="t", seq=2)
    asked = Msg.assistant("let me look", seq=4, meta={"toolCalls": [call("y")]})
    history = [Msg.user("q", seq=1), orphan, Msg.user("again", seq=3), asked]
    built = build_context("", history, "next", window=20)
    assert built.messages == [
        {"role": "user", "content": "q"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "let me look"},
        {"role": "user", "content": "next"},
    ]


# -- what left the window before the summary covers it ---------------------------------------


def test_an_agent_with_a_summary_gets_what_left_the_window_since_the_summary() -> None:
    summary = Summary(covered_to_seq=10, text="the gist", id=7)
    built = build_context("", history(24), "next", window=6, summary=summary, earlier=True)
    sent = [m["content"] for m in built.messages]
    assert sent[0] == SUMMARY_PREFIX + "the gist"
    assert sent[1:-1] == [f"m{n}" for n in range(11, 25)]
    assert built.earlier == 8 and built.earlier_range == (11, 18)
    assert built.seq_range == (19, 24)  # the window proper
    # without a summary: everything; without ``earlier`` (no summary agent): the window
    assert build_context("", history(24), "x", window=6, earlier=True).earlier_range == (1, 18)
    assert build_context("", history(24), "x", window=6, summary=summary).earlier == 0


def test_the_token_budget_leaves_out_the_oldest_earlier_turns_first_and_whole() -> None:
    msgs = [*history(2), *tool_turn(3, "tools", ["c1", "c2"]), *history(12)[6:]]
    for n, msg in enumerate(msgs, start=1):
        msg.seq = n
    full = build_context("", msgs, "next", window=4, earlier=True)
    assert full.earlier == len(msgs) - 4
    budget = full.tokens - 5  # a little too much: only the oldest turn goes
    built = build_context("", msgs, "next", window=4, earlier=True, token_budget=budget)
    assert built.trimmed == 2 and built.history[0].seq == 3
    for cut in range(20, full.tokens, 7):  # any budget: a call never without its results
        trimmed = build_context("", msgs, "next", window=4, earlier=True, token_budget=cut)
        assert trimmed.history[:1] == [] or trimmed.history[0].role is MsgRole.USER
        assert_pairs_whole(trimmed.history)


def test_a_warm_session_carries_what_no_summary_covers_yet() -> None:
    msgs = history(30)
    assert [m.seq for m in carried(msgs, window=6, summary=None, earlier=False)] == list(
        range(25, 31)
    )
    summary = Summary(covered_to_seq=16, text="s")
    kept = carried(msgs, window=6, summary=summary, earlier=True)
    assert [m.seq for m in kept] == list(range(17, 31))
    assert len(carried(history(400), window=6, summary=None, earlier=True)) == 6 + MAX_EARLIER
