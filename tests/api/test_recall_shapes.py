"""Recall holds on a long technical chat, not only on short turns (#42), on every backend:
a person's one-line fact said right after a long answer is found by a question in other
words, above the long answers that echo its vocabulary; a fact changed later is returned
with its newer statement; a long question (up to 2,000 characters) ranks the same way.
Driven through the public route, a stand-in model writing the long answers."""

from __future__ import annotations

import asyncio

import pytest

from tests.api.helpers import bearer, say
from tests.fake_llm import Reply

ALICE = bearer("ka")

SPRINT = [
    "Sprint planning works best when each sprint has one goal. Keep the sprint backlog "
    "small, estimate the first items in points, and leave a buffer before the sprint ends "
    "so that the review at the end of the sprint does not slip.",
    "The first sprint sets the pace: end it with a demo, a retrospective and a clear list "
    "of what moves to the next sprint. A sprint that ends without a review loses its lessons.",
]
OTHER = [
    "For the dashboard API, put a cache in front of the aggregate queries, measure the "
    "average response time per route, and alert when the p99 drifts above the budget.",
    "Migrations on the transactions table should be backwards compatible: add the column, "
    "deploy code that writes both shapes, backfill in batches, then drop the old column "
    "once nothing reads it.",
    "Pagination should be keyset based: pass the last id and timestamp, order by both and "
    "fetch one more row than you return. Offsets get slower on every page of a large table.",
    "Connection pools should match the workers: a pool per process, sized to its threads, "
    "a statement timeout, and no transaction held across a network call.",
]


def long_answer(body: dict) -> Reply:
    """A 2,000-3,000 character answer; one about planning has a paragraph on sprints."""
    asked = body["messages"][-1]["content"]
    n = len(body["messages"])
    planning = "sprint" in asked.lower()
    paragraphs = [OTHER[(n + i) % len(OTHER)] for i in range(8)]
    if planning:
        paragraphs[3] = SPRINT[n % len(SPRINT)]
    return Reply(chunks=["\n\n".join(paragraphs)])


ASKS = [
    "How should I plan the sprint backlog for the dashboard work?",
    "What should the review at the end of a sprint cover?",
    "How do I estimate the sprint work in points?",
    "What goes into the first sprint's retrospective?",
    "Which dashboard API routes should be cached?",
    "How do I migrate the transactions table without downtime?",
]


@pytest.fixture
async def chat(api_factory, database, fake_llm):
    fake_llm.script.respond = long_answer
    services, api = await api_factory(database_url=database.url, api_keys="alice:ka")
    conv = None
    said: dict[str, int] = {}  # a text's (last) user row
    turns = 0

    async def turn(text: str) -> None:
        nonlocal conv, turns
        out = await say(api, text, conv, agent="tester", headers=ALICE)
        conv = out["conversationId"]
        said[text] = turns * 2 + 1  # the answer follows it
        turns += 1

    for ask in ASKS:  # the last answer before the fact is about migrations
        await turn(ask)
    await turn("Our first sprint ends March 29.")
    await turn("The dashboard API averages 400 ms right now.")
    for ask in ASKS:
        await turn(ask)
    await turn("After the caching change the dashboard API averages 250 ms.")
    for ask in ASKS:
        await turn(ask)
    await _embedded(services, conv)
    return api, conv, said


async def _embedded(services, conv: str) -> None:
    from lumina_app.storage.sql import recall_rows

    loop = asyncio.get_running_loop()
    end = loop.time() + 20
    while await recall_rows.pending(services.db, services.recall.retriever.model):
        assert loop.time() < end, "the worker never embedded the turns"
        await asyncio.sleep(0.05)


async def recalled(api, conv: str, q: str, limit: int = 5) -> list[int]:
    resp = await api.get(
        f"/api/v1/conversations/{conv}/recall", params={"q": q, "limit": limit}, headers=ALICE
    )
    assert resp.status_code == 200, resp.text
    return [h["seq"] for h in resp.json()["items"]]


async def test_a_one_line_fact_after_a_long_answer_is_found(chat) -> None:
    api, conv, said = chat
    fact = said["Our first sprint ends March 29."]
    # a dozen long answers talk about sprints ending; the line that answers says it once
    assert fact in await recalled(api, conv, "When does my first sprint end?", limit=10)


async def test_a_changed_value_comes_back_with_its_newer_statement(chat) -> None:
    api, conv, said = chat
    newer = said["After the caching change the dashboard API averages 250 ms."]
    older = said["The dashboard API averages 400 ms right now."]
    top = await recalled(api, conv, "What is the average response time of the dashboard API?")
    assert newer in top and older in top  # both, each with its date: the model tells which


async def test_a_long_question_ranks_like_a_short_one(chat) -> None:
    api, conv, said = chat
    fact = said["Our first sprint ends March 29."]
    preamble = "I am going over the plan with the team this afternoon and need the dates. " * 30
    question = (preamble + "So, when does my first sprint end?")[-2000:]
    assert len(question) == 2000
    assert fact in (await recalled(api, conv, question, limit=10))
