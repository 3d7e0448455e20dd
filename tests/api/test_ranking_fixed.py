"""Recall and long-term memories rank a fixed corpus exactly as they did before BM25 and
rank fusion were written once (``recall/ranking.py``, #44): the same rows, in the same
order, with the same scores, on every database. The expected figures in
``ranking_fixed.json`` were captured from the code before the change (the recall routes'
scores; for memories the scores of the search the memory route ranks by)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.api.helpers import bearer, say
from tests.conftest import ROOT
from tests.waits import wait_until

KEYS = "alice:ka"
ALICE = bearer("ka")
EXPECTED = Path(__file__).with_name("ranking_fixed.json")

SAID = [
    "I went to a support group for new parents last Tuesday",
    "my sister is moving to Lisbon in the spring with her two cats",
    "the quarterly budget review is on Friday and the budget is tight",
    "we adopted a rescue dog called Biscuit from the shelter",
    "the kitchen tap leaks again, I need a plumber before the weekend",
    "my sister's cats hate the dog, so the move to Lisbon is complicated",
    "I started learning the cello, scales every evening",
    "the plumber fixed the tap but the kitchen floor is still wet",
]
ASKED = [
    "Where is my sister moving?",
    "who fixed the kitchen tap",
    "budget review",
    "pets cats dog",
    "musical instrument practice",
]
REMEMBERED = [
    "The user is allergic to peanuts and cashews.",
    "The user's sister lives in Lisbon with two cats.",
    "The user plays the cello in the evening.",
    "The user has a rescue dog named Biscuit.",
    "The user works on the quarterly budget every Friday.",
    "The user prefers tea to coffee, and coffee only before noon.",
]
RECALLED = [
    "sister cats",
    "allergy nuts",
    "evening music",
    "coffee",
    "dog budget",
    "user",
    "the user sister tea evening budget peanuts",
]


@pytest.fixture
async def opened(api_factory, database, data_dir):
    shutil.copytree(ROOT / "data/agents/assistant", data_dir / "agents/assistant")
    return await api_factory(database_url=database.url, api_keys=KEYS)


async def _recall(api, q: str, conversation: str | None = None) -> list[list]:
    path = f"/api/v1/conversations/{conversation}/recall" if conversation else "/api/v1/recall"
    resp = await api.get(path, params={"q": q, "limit": 20}, headers=ALICE)
    assert resp.status_code == 200, resp.text
    return [[h["seq"], h["score"]] for h in resp.json()["items"]]


async def _embedded(services) -> bool:
    from lumina_app.storage.sql import recall_rows

    return not await recall_rows.pending(services.db, services.recall.retriever.model)


async def ranked_now(services, api) -> dict:
    """What the routes rank on the fixed corpus, once every message has its vector."""
    conversation = (await say(api, SAID[0], headers=ALICE))["conversationId"]
    for text in SAID[1:]:
        await say(api, text, conversation, headers=ALICE)
    await wait_until(lambda: _embedded(services), "every message embedded", within=30)
    for text in REMEMBERED:
        body = {"agentId": "assistant", "text": text}
        resp = await api.post("/api/v1/memories", json=body, headers=ALICE)
        assert resp.status_code in (200, 201), resp.text
    store = services.memories.store
    out: dict = {"in_conversation": {}, "across": {}, "memories": {}, "memory_route": {}}
    for q in ASKED:
        out["in_conversation"][q] = await _recall(api, q, conversation)
        out["across"][q] = await _recall(api, q)
    for q in RECALLED:
        found = await store.search("alice", q, agent_id="assistant", limit=20)
        out["memories"][q] = [[m.text, score] for m, score in found]
        resp = await api.get("/api/v1/memories", params={"q": q}, headers=ALICE)
        assert resp.status_code == 200, resp.text
        out["memory_route"][q] = [m["text"] for m in resp.json()["items"]]
    return out


async def test_a_fixed_corpus_ranks_as_before(opened) -> None:
    services, api = opened
    got = await ranked_now(services, api)
    assert got["in_conversation"]["Where is my sister moving?"]  # the corpus is found at all
    assert got["memories"]["sister cats"]
    assert got == json.loads(EXPECTED.read_text())
