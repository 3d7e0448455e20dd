"""The background embedding worker on every backend: each final message is embedded once
as its own text, the conversations due together share one batch, and a conversation that
becomes due while the worker is busy is embedded next, not after the failure back-off."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from lumina_app.storage.sql.models import message_vectors as V
from lumina_app.storage.sql.models import messages as M
from tests.api.helpers import say
from tests.api.test_recall import FACTS, _until


@pytest.fixture
async def opened(api_factory, database):
    services, api = await api_factory(database_url=database.url)
    assert services.embeddings is not None
    return services, api


def record_embeds(services, gate: asyncio.Event | None = None) -> list[list[str]]:
    """Each call of the server's embedder, with its texts; with ``gate``, the first call
    waits for it."""
    embedder = services.embeddings.embedder
    original, calls = embedder.embed, []

    async def embed(texts):
        calls.append(list(texts))
        if gate is not None and len(calls) == 1:
            await gate.wait()
        return await original(texts)

    embedder.embed = embed
    return calls


async def count(services, table) -> int:
    async with services.db.connect() as conn:
        return (await conn.execute(sa.select(sa.func.count()).select_from(table))).scalar()


async def test_each_final_message_is_embedded_once(opened) -> None:
    services, api = opened
    calls = record_embeds(services)
    conv = (await say(api, FACTS[0]))["conversationId"]
    for fact in FACTS[1:]:
        await say(api, fact, conv)
    await _until(lambda: count(services, V), lambda n: n == 6)
    async with services.db.connect() as conn:
        said = (await conn.execute(sa.select(M.c.content))).scalars().all()
    texts = [t for call in calls for t in call]
    assert len(said) == 6
    # its own text once, and once after the message before it (the first has none)
    assert all(texts.count(content) == 1 for content in said), texts
    assert len(texts) == 6 + 5


async def test_conversations_due_together_share_one_batch(opened) -> None:
    services, api = opened
    for fact in FACTS:
        await say(api, fact)
    await _until(lambda: count(services, V), lambda n: n == 6)
    async with services.db.begin() as conn:
        await conn.execute(sa.delete(V))
        pks = (await conn.execute(sa.select(M.c.conversation_id).distinct())).scalars().all()
    calls = record_embeds(services)
    assert await services.embeddings.embed_due(set(pks)) == set()
    assert len(calls) == 1 and len(calls[0]) == 6 + 3  # three questions have no message before
    assert await count(services, V) == 6


async def test_a_conversation_due_while_the_worker_works_is_not_held_back(opened) -> None:
    services, api = opened
    services.embeddings.retry_seconds = 60.0  # the back-off after a failure only
    gate = asyncio.Event()
    calls = record_embeds(services, gate)
    await say(api, FACTS[0])
    await _until(lambda: asyncio.sleep(0, len(calls)), lambda n: n == 1)
    await say(api, FACTS[1])  # due while the first batch waits at the gate
    gate.set()
    await _until(lambda: count(services, V), lambda n: n == 4, seconds=5.0)


async def test_a_turn_embeds_its_own_rows_not_the_conversations_backlog(opened) -> None:
    """A finished turn is looked for by its turn, not by reading the whole conversation:
    older rows without a vector (a backlog, say an embedder that was off) wait for an
    explicit due(), which embeds the whole conversation."""
    services, api = opened
    conv = (await say(api, FACTS[0]))["conversationId"]
    await say(api, FACTS[1], conv)
    await _until(lambda: count(services, V), lambda n: n == 4)
    async with services.db.begin() as conn:
        await conn.execute(sa.delete(V))
    calls = record_embeds(services)
    last = await say(api, FACTS[2], conv)
    # one batch writes everything it found at once: 2 (the turn) or 6 (the backlog too)
    assert await _until(lambda: count(services, V), lambda n: n >= 2) == 2
    async with services.db.connect() as conn:
        embedded = (
            (
                await conn.execute(
                    sa.select(M.c.turn_id).join(V, V.c.message_id == M.c.id).distinct()
                )
            )
            .scalars()
            .all()
        )
        pk = (await conn.execute(sa.select(M.c.conversation_id).distinct())).scalar_one()
    assert len(embedded) == 1 and len(calls) == 1
    assert FACTS[2] in calls[0] and FACTS[0] not in calls[0]
    assert last["conversationId"] == conv
    services.embeddings.due(pk)
    await _until(lambda: count(services, V), lambda n: n == 6)
