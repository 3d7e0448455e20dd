"""The Markdown export of a turn with a tool step: what was called and what it returned,
never an empty section (the tool step's answer has no text of its own)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lumina_app.archive.format import markdown_transcript
from lumina_app.domain import ConversationInfo, Msg, MsgRole

pytestmark = pytest.mark.unit


def test_a_tool_step_renders_its_call_and_result() -> None:
    when = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
    conv = ConversationInfo.new(agent_id="assistant", title="Sums")
    calls = [{"id": "c1", "name": "calculator", "arguments": '{"expression": "6*7"}'}]
    msgs = [
        Msg(MsgRole.USER, "What is 6 times 7?", seq=1, created_at=when),
        Msg(MsgRole.ASSISTANT, "", seq=2, created_at=when, meta={"toolCalls": calls}),
        Msg.tool("42", call_id="c1", name="calculator", seq=3, created_at=when),
        Msg(MsgRole.ASSISTANT, "It is 42.", seq=4, created_at=when),
    ]
    text = markdown_transcript(conv, msgs)
    sections = text.split("\n### ")[1:]
    assert len(sections) == 4
    assert all(body.strip() for _, _, body in (s.partition("\n\n") for s in sections))
    assert '- called `calculator` with `{"expression": "6*7"}`' in sections[1]
    assert sections[2].startswith("Tool result · `calculator`") and sections[2].endswith("42\n")
