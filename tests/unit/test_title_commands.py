"""A slash command at the start of a first message is not part of the conversation's
title (#45): neither the cut first message nor a model's proposal keeps it."""

from __future__ import annotations

from lumina_app.agents.definitions.titling import clean_title
from lumina_app.agents.run.engine import title_from


def test_the_cut_first_message_drops_a_leading_command() -> None:
    assert title_from("/long Planning the garden beds") == "Planning the garden beds"
    assert title_from("/think /long  How do tides work?") == "How do tides work?"
    assert title_from("What does /long do?") == "What does /long do?"  # only at the start
    assert title_from("/help") == "/help"  # nothing else to name it by


def test_a_proposed_title_drops_a_leading_command() -> None:
    assert clean_title("/summarize Garden plans") == "Garden plans"
    assert clean_title("/summarize") == "/summarize"
