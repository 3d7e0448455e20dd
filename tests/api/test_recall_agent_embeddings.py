"""An agent with its own embedder (config.json ``embeddings``): its messages are embedded
by that server, its recall embeds the query there, and a vector another embedder made is
never compared — a changed model is embedded again, not mixed in. Every backend."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from lumina_app.storage.sql.models import message_vectors as V
from tests.api.helpers import bearer, error_of, say
from tests.api.test_recall import FACTS, KEYS, recall, three_facts
from tests.conftest import write_agent
from tests.waits import wait_until

ALICE, BOB = bearer("ka"), bearer("kb")


def _own(fake_url: str, model: str) -> dict:
    return {"name": "Own", "embeddings": {"provider": "openai", "baseUrl": fake_url,
                                          "model": model}}  # fmt: skip


async def _models(services, uuid: str) -> dict[str, int]:
    """Stored vectors of the conversation, by the model that made them."""
    row_id = (await services.reads.lookup.get_conversation(uuid)).id
    query = (
        sa.select(V.c.model, sa.func.count())
        .where(V.c.conversation_id == row_id)
        .group_by(V.c.model)
    )
    async with services.db.connect() as conn:
        return {row[0]: row[1] for row in (await conn.execute(query)).all()}


def _inputs(fake) -> list[tuple[str, str]]:
    return [(b["model"], text) for b in fake.embedding_requests for text in b["input"]]


@pytest.fixture
async def opened(api_factory, database, data_dir, fake_llm):
    write_agent(data_dir / "agents", "own", _own(fake_llm.base_url, "fake-embed"))
    services, api = await api_factory(database_url=database.url, data_dir=data_dir, api_keys=KEYS)
    return services, api, fake_llm, data_dir


async def test_an_agent_embeds_with_its_own_server_and_recalls_with_it(opened) -> None:
    services, api, fake, _dir = opened
    mine = (await say(api, FACTS[0], agent="own", headers=ALICE))["conversationId"]
    for fact in FACTS[1:]:
        await say(api, fact, mine, agent="own", headers=ALICE)
    other = await three_facts(api)  # the demo agent: the server's (local) embedder
    assert await wait_until(
        lambda: _has(services, mine, {"openai:fake-embed": 6}), "the agent's vectors"
    )
    assert await wait_until(
        lambda: _has(services, other, {services.recall.retriever.model: 6}), "local vectors"
    )
    assert {m for m, _ in _inputs(fake)} == {"fake-embed"}
    assert set(FACTS) <= {t for _, t in _inputs(fake)}  # only its own agent's messages
    said = len(fake.embedding_requests)

    hits = await recall(api, "Where is my sister moving?", mine)
    assert hits[0]["seq"] in (3, 4)
    assert ("fake-embed", "Where is my sister moving?") in _inputs(fake)[said:]
    across = await recall(api, "quarterly budget review", agentId="own")
    assert {h["conversationId"] for h in across} == {mine}
    assert ("fake-embed", "quarterly budget review") in _inputs(fake)
    # without an agent the server's embedder embeds the query; the agent's vectors are
    # not compared with it, its rows still rank by their words
    before = len(fake.embedding_requests)
    everywhere = await recall(api, "quarterly budget review")
    assert {h["conversationId"] for h in everywhere} == {mine, other}
    assert len(fake.embedding_requests) == before
    # owner-scoped with its own embedder too
    assert await recall(api, "quarterly budget review", agentId="own", headers=BOB) == []
    error_of(await api.get(f"/api/v1/conversations/{mine}/recall?q=budget", headers=BOB), 404)


async def test_a_changed_model_is_embedded_again_not_mixed_in(opened) -> None:
    services, api, fake, data_dir = opened
    mine = (await say(api, FACTS[1], agent="own", headers=ALICE))["conversationId"]
    assert await wait_until(
        lambda: _has(services, mine, {"openai:fake-embed": 2}), "the agent's vectors"
    )
    config = data_dir / "agents/own/config.json"
    config.write_text(json.dumps(_own(fake.base_url, "fake-embed-2")))

    async def recalled_with_new_model() -> bool:
        await recall(api, "sister", mine)  # finds rows without a vector of the new model
        return await _has(services, mine, {"openai:fake-embed-2": 2})

    assert await wait_until(recalled_with_new_model, "vectors of the new model")
    assert ("fake-embed-2", FACTS[1]) in _inputs(fake)


async def _has(services, uuid: str, expected: dict[str, int]) -> bool:
    return await _models(services, uuid) == expected


async def test_the_backfill_embeds_each_conversation_with_its_agents_embedder(opened) -> None:
    services, api, _fake, _dir = opened
    mine = (await say(api, FACTS[0], agent="own", headers=ALICE))["conversationId"]
    other = (await say(api, FACTS[1], headers=ALICE))["conversationId"]
    local = services.recall.retriever.model
    assert await wait_until(lambda: _has(services, mine, {"openai:fake-embed": 2}), "own")
    assert await wait_until(lambda: _has(services, other, {local: 2}), "local")
    async with services.db.begin() as conn:
        await conn.execute(sa.delete(V))

    assert await services.embeddings.embed_pending() == 4  # what `python -m lumina_app embed` runs
    assert await _models(services, mine) == {"openai:fake-embed": 2}
    assert await _models(services, other) == {local: 2}
    assert await services.embeddings.embed_pending() == 0
