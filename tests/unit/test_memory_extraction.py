"""The demo model's deterministic memory extraction and the parsing of a model's reply
(issue #27): what each phrase becomes, that a known fact is not added again, that a new
name or home supersedes the old one, and which replies are refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lumina_app.agents.after_run.memory_extractor import (
    MalformedReply,
    Operation,
    demo_operations,
    parse_operations,
)
from lumina_app.domain import InvalidInput
from lumina_app.domain.memories import Memory, MemoryNotFound, MemoryStatus
from lumina_app.memory.long_term import checked_text, context_message, memory_id, normalised

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def known(memory_id: int, text: str) -> Memory:
    return Memory(memory_id, "alice", "assistant", text, MemoryStatus.ACTIVE, False, None, None,
                  NOW, NOW)  # fmt: skip


def test_each_phrase_becomes_a_fact() -> None:
    said = ("My name is Ada and I work on graph databases. I live in Lyon, "
            "and I prefer short answers!")  # fmt: skip
    assert demo_operations([], said) == [
        Operation("add", "The user's name is Ada."),
        Operation("add", "The user lives in Lyon."),
        Operation("add", "The user prefers short answers."),
        Operation("add", "The user works on graph databases."),
    ]
    assert demo_operations([], "how are you today?") == []


def test_a_known_fact_is_nothing_new_and_a_changed_one_supersedes() -> None:
    facts = [known(1, "The user's name is Ada."), known(2, "The user lives in Lyon.")]
    assert demo_operations(facts, "my name is ada") == []
    assert demo_operations(facts, "actually call me Ada L.") == [
        Operation("supersede", "The user's name is Ada L.", 1)
    ]
    assert demo_operations(facts, "I live in Paris now") == [
        Operation("supersede", "The user lives in Paris now.", 2)
    ]


def test_a_models_reply_is_parsed_or_refused() -> None:
    reply = '```json\n{"operations": [{"op": "add", "text": "x"}, {"op": "none"}]}\n```'
    assert parse_operations(reply) == [Operation("add", "x"), Operation("none")]
    assert parse_operations('[{"op": "update", "id": 3, "text": "y"}]') == [
        Operation("update", "y", 3)
    ]
    for bad in ("The user is Ada.", "{}", '{"operations": [{"op": "delete", "id": 1}]}',
                '{"operations": [{"op": "update", "text": "no id"}]}',
                '{"operations": [{"op": "supersede", "id": true, "text": "t"}]}',
                '{"operations": [{"op": "add", "text": "  "}]}'):  # fmt: skip
        with pytest.raises(MalformedReply):
            parse_operations(bad)


def test_texts_and_ids_from_outside() -> None:
    assert normalised("The user  likes TEA.") == normalised("the user likes tea")
    assert checked_text("  two\n words ") == "two words"
    for bad in ("", "   ", "a\x00b", "x" * 501):
        with pytest.raises(InvalidInput):
            checked_text(bad)
    assert memory_id("12") == 12 and memory_id(12) == 12
    for bad in ("0", "-1", "1.5", "abc", True, 0, "9" * 19):
        with pytest.raises(MemoryNotFound):
            memory_id(bad)
    assert context_message([]) == ""
    assert context_message([known(1, "A."), known(2, "B.")]) == (
        "What you know about this person:\n- A.\n- B."
    )
