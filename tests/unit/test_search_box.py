"""The search box's one rule: a question is ranked (recall), a few words are looked up."""

from __future__ import annotations

import pytest

from lumina_app.domain.search import is_question

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "text",
    [
        "When did Caroline go to the LGBTQ support group?",
        "which ticket did I open for the printer?",
        "zebra?",
        "what did I say about invoices",
    ],
)
def test_questions_are_ranked(text: str) -> None:
    assert is_question(text)


@pytest.mark.parametrize("text", ["quokk", "ZEBRA-4417", "printer ticket", "  invoice 1234  "])
def test_a_few_words_are_looked_up_word_for_word(text: str) -> None:
    assert not is_question(text)
