"""The context dialog's rows: tool calls spelled out; a turn with several model calls
lists each call in order, headed by what it received."""

from lumina_app.ui.view_models.context_rows import context_rows


def test_tool_steps_are_spelled_out_and_each_later_call_is_marked() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "6 * 7?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "6 * 7"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "42"},
    ]
    rows = context_rows(messages, [2, 4])
    assert rows == [
        {"role": "system", "content": "Be brief.", "call": "model call 1 · received 2 messages"},
        {"role": "user", "content": "6 * 7?", "call": ""},
        {
            "role": "assistant",
            "content": '→ calculator({"expression": "6 * 7"})',
            "call": "model call 2 · received the 2 above and 2 messages",
        },
        {"role": "tool", "content": "[call_a] 42", "call": ""},
    ]


def test_three_calls_are_each_headed() -> None:
    steps = [{"role": role, "content": "x"} for role in ("assistant", "tool") * 2]
    messages = [{"role": "user", "content": "q"}, *steps]
    heads = [r["call"] for r in context_rows(messages, [1, 3, 5]) if r["call"]]
    assert heads == [
        "model call 1 · received 1 message",
        "model call 2 · received the 1 above and 2 messages",
        "model call 3 · received the 3 above and 2 messages",
    ]


def test_a_run_without_tools_has_no_marks() -> None:
    rows = context_rows([{"role": "user", "content": "hi"}], [1])
    assert rows == [{"role": "user", "content": "hi", "call": ""}]
