"""The demo model's reading of a measure that changes (issue #42): "my <thing> <verb>
<value>" is a fact about the person's thing; a later statement with the same thing and the
same verb ("the <thing> now <verb> …") replaces it; "the <thing>" alone, when the person's
<thing> is not known, is not about them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lumina_app.agents.after_run.memory_extractor import (
    Operation,
    demo_operations,
    demo_says_something,
)
from lumina_app.domain.memories import Memory, MemoryStatus

pytestmark = pytest.mark.unit
NOW = datetime(2026, 12, 6, tzinfo=UTC)


def known(memory_id: int, text: str) -> Memory:
    return Memory(memory_id, "alice", "assistant", text, MemoryStatus.ACTIVE, False, None, None,
                  NOW, NOW)  # fmt: skip


def test_a_measure_is_added_then_replaced_by_a_newer_one_of_the_same_thing() -> None:
    said = "My dashboard API averages 400 ms."
    assert demo_operations([], said) == [
        Operation("add", "The user's dashboard API averages 400 ms.")
    ]
    facts = [known(7, "The user's dashboard API averages 400 ms."),
             known(8, "The user's first sprint ends March 29.")]  # fmt: skip
    later = "The dashboard API now averages 250 ms after the caching change."
    assert demo_says_something(later)
    assert demo_operations(facts, later) == [
        Operation(
            "supersede", "The user's dashboard API averages 250 ms after the caching change.", 7
        )
    ]
    assert demo_operations(facts, "my first sprint now ends April 5, sadly") == [
        Operation("supersede", "The user's first sprint ends April 5.", 8)
    ]
    # Another verb is another fact; the same value again is nothing new.
    assert demo_operations(facts, "My first sprint starts March 1.") == [
        Operation("add", "The user's first sprint starts March 1.")
    ]
    assert demo_operations(facts, "my dashboard API averages 400 ms") == []


def test_the_thing_of_someone_else_is_not_a_fact_about_the_person() -> None:
    assert demo_operations([], "The dashboard API now averages 250 ms.") == []
    assert demo_operations([], "The meeting ends at noon.") == []
    assert not demo_says_something("how are you today?")
