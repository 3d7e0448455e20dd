"""Search where it is asked (issue #44): a one-character last word is a prefix like any
other, and a conversation's search finds its own matches whether its rows were written
alone or side by side with other conversations' (on SQLite, side by side, it is matched
from the conversation's own rows rather than the whole index's entries)."""

from __future__ import annotations

import pytest

from lumina_app.storage.sql import search
from tests.api.helpers import bearer, say

ALICE = bearer("ka")


@pytest.fixture
async def api_on(api_factory, database):
    _services, client = await api_factory(database_url=database.url, api_keys="alice:ka")
    return client


async def _users(api, q: str, conversation: str | None = None) -> list[int | str]:
    """The USER hits' seqs inside ``conversation``, or their conversations everywhere."""
    path = f"/api/v1/conversations/{conversation}/search" if conversation else "/api/v1/search"
    resp = await api.get(path, params={"q": q, "limit": 50}, headers=ALICE)
    assert resp.status_code == 200, resp.text
    hits = [h for h in resp.json()["items"] if h["role"] == "USER"]
    return sorted(h["seq"] if conversation else h["conversationId"] for h in hits)


async def test_a_one_character_prefix_finds_the_words_it_starts(api_on) -> None:
    apple = (await say(api_on, "apple pie recipe", headers=ALICE))["conversationId"]
    cat = (await say(api_on, "a cat sat", headers=ALICE))["conversationId"]
    await say(api_on, "banana split", headers=ALICE)
    assert await _users(api_on, "a") == sorted([apple, cat])
    assert await _users(api_on, "A") == sorted([apple, cat])
    assert await _users(api_on, "pie r") == [apple]
    assert await _users(api_on, "a", apple) == [1]
    assert await _users(api_on, "cat s", cat) == [1]
    assert await _users(api_on, "banana a") == []


# SQLite reads a conversation's matches from FTS5 or from its own rows, by their expected
# costs; each way is forced here (the costs set to zero) and must find the same.
PLANS = {
    "chosen": {},
    "fts5": {"_US_ENTRY": 0.0, "_US_JOINED": 0.0},
    "own rows": {"_US_SPLIT": 0.0, "_US_ENTRY": 1.0},
}


@pytest.mark.parametrize("plan", PLANS)
async def test_a_conversation_written_beside_others_finds_its_own_matches(
    api_on, database, monkeypatch, plan: str
) -> None:
    """Three conversations' turns interleaved, one word in all of them."""
    if plan != "chosen" and database.backend != "sqlite":
        pytest.skip("one plan on MariaDB and PostgreSQL")
    for name, value in PLANS[plan].items():
        monkeypatch.setattr(search, name, value)
    mine = (await say(api_on, "zinc plate café number 0", headers=ALICE))["conversationId"]
    others = [
        (await say(api_on, f"zinc other {n} deploy", headers=ALICE))["conversationId"]
        for n in (0, 1)
    ]
    for i in (1, 2):
        await say(api_on, f"zinc plate café number {i}", mine, headers=ALICE)
        for other in others:
            await say(api_on, f"zinc other {i} deploy", other, headers=ALICE)

    for q in ("zinc", "zinc pla", "plate zinc", "CAFÉ", "Café number", "zinc plate n"):
        assert await _users(api_on, q, mine) == [1, 3, 5], q
    assert await _users(api_on, "number 1", mine) == [3]
    assert await _users(api_on, "n", mine) == [1, 3, 5]
    for q in ("deploy", "other", "zinc z9", "plate elephant"):
        assert await _users(api_on, q, mine) == [], q
    assert await _users(api_on, "zinc other 2", others[1]) == [5]
    assert await _users(api_on, "zinc") == sorted([mine, *others] * 3)
