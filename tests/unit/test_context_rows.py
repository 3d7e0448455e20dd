"""The context dialog's rows: tool calls spelled out, later model calls marked."""

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
        {"role": "system", "content": "Be brief.", "call": ""},
        {"role": "user", "content": "6 * 7?", "call": ""},
        {
            "role": "assistant",
            "content": '→ calculator({"expression": "6 * 7"})',
            "call": "model call 2",
        },
        {"role": "tool", "content": "[call_a] 42", "call": ""},
    ]


def test_a_run_without_tools_has_no_marks() -> None:
    rows = context_rows([{"role": "user", "content": "hi"}], [1])
    assert rows == [{"role": "user", "content": "hi", "call": ""}]
