"""Recall across conversations reads each word's newest matches only (issue #26): a rare
word's matches are all found however old, a frequent word's only its newest — what the
bounded candidates give up (docs/PERFORMANCE.md) — on every backend."""

from __future__ import annotations

import pytest

from lumina_app.recall import retriever
from lumina_app.storage.sql import recall_candidates
from tests.api.helpers import say
from tests.api.test_recall import ALICE, KEYS, recall


@pytest.fixture
async def opened(api_factory, database, monkeypatch):
    monkeypatch.setattr(recall_candidates, "CANDIDATE_WINDOW", 4)
    monkeypatch.setattr(retriever, "RANKED_CANDIDATES", 6)
    return await api_factory(database_url=database.url, api_keys=KEYS)


async def test_a_rare_word_is_found_past_a_frequent_words_window(opened) -> None:
    _services, api = opened
    old = (await say(api, "the printer ticket is ZEBRA-4417", headers=ALICE))["conversationId"]
    lone = (await say(api, "the printer hums quietly", headers=ALICE))["conversationId"]
    # the demo answer repeats each: 8 newer rows hold "printer"
    newer = [(await say(api, f"printer jam number {i}", headers=ALICE))["conversationId"]
             for i in range(4)]  # fmt: skip

    hits = await recall(api, "which ticket did I open for the printer?", limit=10)
    assert hits[0]["conversationId"] == old and "ZEBRA-4417" in hits[0]["snippet"]
    found = {h["conversationId"] for h in hits}
    # "printer" alone: only its newest 4 matches are candidates, so the older rows that
    # hold nothing but it are not found (the window), the rare word's row is
    assert lone not in found and set(newer[-2:]) <= found

    everything = await recall(api, "printer", limit=10)
    assert {h["conversationId"] for h in everything} == set(newer[-2:])
    # a word in few rows brings them all, however old
    assert {h["conversationId"] for h in await recall(api, "hums")} == {lone}
