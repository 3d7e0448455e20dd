"""The conversation indexes recall keeps between reads are bounded by the rows they hold
and by their text as well as by their count (a count alone let the cache grow with its
conversations, rows alone with their messages' length), and a conversation over a whole
budget is ranked without being kept; on every backend."""

from __future__ import annotations

import json

import pytest

from lumina_app.domain import LOCAL
from tests.api.helpers import count_whole_reads, say


@pytest.fixture
async def opened(api_factory, database):
    return await api_factory(database_url=database.url)


async def test_the_index_cache_holds_a_bounded_number_of_rows(opened) -> None:
    services, api = opened
    retriever = services.recall.retriever
    retriever._cache_rows = 6  # the budget: three conversations of one turn (two rows each)
    pks = []
    for i in range(4):
        uuid = (await say(api, f"the blue heron number {i} nests here"))["conversationId"]
        pks.append((await services.conversations.get(LOCAL, uuid)).id)
    for pk in pks:
        assert await retriever.in_conversation(pk, "heron nests")
    assert list(retriever._cache) == pks[1:]  # the oldest went to keep 6 rows
    assert retriever._cached_rows == 6

    long = (await say(api, "a long one about herons"))["conversationId"]
    for i in range(3):
        await say(api, f"more about herons {i}", long)
    long_pk = (await services.conversations.get(LOCAL, long)).id
    found = await retriever.in_conversation(long_pk, "herons")
    assert found and long_pk not in retriever._cache  # 8 rows: over the budget alone
    assert list(retriever._cache) == pks[1:] and retriever._cached_rows == 6


async def test_the_index_cache_holds_a_bounded_amount_of_text(opened) -> None:
    services, api = opened
    retriever = services.recall.retriever

    async def conversation(text: str) -> int:
        uuid = (await say(api, text))["conversationId"]
        pk = (await services.conversations.get(LOCAL, uuid)).id
        assert await retriever.in_conversation(pk, "heron")
        return pk

    def held() -> int:
        return sum(index.chars for _key, index, _said in retriever._cache.values())

    pks = [await conversation(f"the blue heron number {i} nests here") for i in range(3)]
    assert retriever._cached_chars == held() > 0
    retriever._cache_chars = held()  # full: the next conversation pushes the oldest out
    newest = await conversation("the blue heron number 3 nests here")
    assert pks[0] not in retriever._cache and newest in retriever._cache
    assert retriever._cached_chars == held() <= retriever._cache_chars

    kept = list(retriever._cache)
    words = " ".join(f"heron{i}" for i in range(400))  # ~3,000 characters
    long = await conversation(f"the heron said {words}")  # alone over the budget
    assert long not in retriever._cache and list(retriever._cache) == kept
    assert retriever._cached_chars == held()


async def test_a_long_conversations_index_is_built_off_the_event_loop(opened, monkeypatch) -> None:
    """Seconds of work at 10,000 messages: over BUILD_IN_THREAD_ROWS rows the index is
    built (and over ROWS_IN_THREAD its rows decoded) on a worker thread; it ranks the same
    as one built on the loop over the same rows and vectors."""
    import threading

    from lumina_app.recall import retriever as recall_retriever
    from lumina_app.storage.sql import recall_rows
    from tests.api.test_embed_worker import count
    from tests.api.test_recall import _until

    services, api = opened
    built_on: list[int] = []
    original = recall_retriever.UnitIndex

    class Recorded(original):
        def __init__(self, *args, **kwargs) -> None:
            built_on.append(threading.get_ident())
            super().__init__(*args, **kwargs)

    def new_retriever() -> recall_retriever.Retriever:
        """One with an empty cache, so each read builds its index."""
        kept = services.recall.retriever
        fresh = recall_retriever.Retriever(kept.db, kept.embedder, units=kept.units)
        fresh.choice = kept.choice
        return fresh

    monkeypatch.setattr(recall_retriever, "UnitIndex", Recorded)
    uuid = (await say(api, "the blue heron nests by the lake"))["conversationId"]
    pk = (await services.conversations.get(LOCAL, uuid)).id
    await say(api, "and the grey heron too", uuid)
    # every vector landed first: both reads rank the same rows and vectors (a vector
    # landing between them changed the order, which read CI's red run as a difference)
    await _until(lambda: count(services, recall_rows.V), lambda found: found >= 4)
    inline = await new_retriever().in_conversation(pk, "heron lake")
    assert built_on == [threading.get_ident()]  # four rows, under the threshold: inline
    monkeypatch.setattr(recall_retriever, "BUILD_IN_THREAD_ROWS", 2)
    monkeypatch.setattr(recall_rows, "ROWS_IN_THREAD", 2)
    threaded = await new_retriever().in_conversation(pk, "heron lake")
    assert len(built_on) == 2 and built_on[1] != threading.get_ident()
    assert inline and threaded == inline


async def test_a_turn_reads_only_what_changed_and_ranks_as_a_whole_read(
    opened, monkeypatch
) -> None:
    """A turn adds two rows to a conversation of thousands: its next recall reads the rows
    after those its index was fingerprinted through, and the vectors embedded since,
    not the whole conversation; a change below that (an item deleted, an answer
    regenerated) reads it whole again. Every answer equals a new retriever's."""
    from lumina_app.recall.retriever import Retriever
    from lumina_app.storage.sql import recall_rows
    from tests.api.test_embed_worker import count
    from tests.api.test_recall import _until

    services, api = opened
    retriever = services.recall.retriever
    whole = count_whole_reads(monkeypatch)

    async def recalled(pk, query: str) -> list:
        """Recall, and check it against a new retriever's over the same state (vectors
        land in the background: read again if any did before both were done)."""
        for _ in range(20):
            mine = await retriever.in_conversation(pk, query)
            reads = len(whole)
            fresh = Retriever(retriever.db, retriever.embedder, units=retriever.units)
            fresh.choice = retriever.choice
            theirs = await fresh.in_conversation(pk, query)
            del whole[reads:]  # the new retriever's own read
            model = retriever._cache[pk][0][0]
            after = (model, *await recall_rows.version(retriever.db, pk, model))
            if retriever._cache[pk][0] == fresh._cache[pk][0] == after:
                assert mine == theirs
                return mine
        raise AssertionError("the conversation kept changing")

    async def embedded(n: int) -> None:
        await _until(lambda: count(services, recall_rows.V), lambda found: found >= n)

    uuid = (await say(api, "the blue heron nests by the lake"))["conversationId"]
    pk = (await services.conversations.get(LOCAL, uuid)).id
    await say(api, "grey herons fish at dawn", uuid)
    await embedded(4)
    assert await recalled(pk, "heron lake") and whole == [pk]

    await say(api, "the lake freezes in winter", uuid)  # rows added, then their vectors
    assert await recalled(pk, "lake winter") and whole == [pk]
    await embedded(6)
    assert 5 in [h.seq for h in await recalled(pk, "freezes")] and whole == [pk]

    items = (await api.get(f"/v1/conversations/conv_{uuid}/items")).json()["data"]
    first = next(i for i in items if i["role"] == "user" and "nests" in json.dumps(i))
    assert (await api.delete(f"/v1/conversations/conv_{uuid}/items/{first['id']}")).is_success
    assert all(h.seq != 1 for h in await recalled(pk, "heron nests lake"))
    assert whole == [pk, pk]  # a row gone below the fingerprint: read whole

    resp = await api.post(f"/api/v1/conversations/{uuid}/regenerate", json={"stream": False})
    assert resp.status_code == 200, resp.text
    await recalled(pk, "lake winter")
    assert whole == [pk, pk, pk]  # the last answer replaced
    await say(api, "herons again", uuid)
    await recalled(pk, "herons")
    assert whole == [pk, pk, pk]


async def test_a_recall_while_an_answer_streams_leaves_it_to_the_next_read(
    api_factory, database, monkeypatch
) -> None:
    """Recall during a run (its tool, the recall route) finds the answer streaming: the
    index is fingerprinted through the row before it, so once the answer is final the
    next recall reads from there on, not the whole conversation again."""
    from tests.api.helpers import start_run, wait_for_text, wait_run

    services, api = await api_factory(database_url=database.url, demo_delay_ms=20)
    whole = count_whole_reads(monkeypatch)
    uuid = (await say(api, "the blue heron nests by the lake"))["conversationId"]
    pk = (await services.conversations.get(LOCAL, uuid)).id
    retriever = services.recall.retriever
    assert await retriever.in_conversation(pk, "heron") and len(whole) == 1
    run = await start_run(api, "where do herons nest?", uuid, agent="demo")
    await wait_for_text(api, uuid)
    during = await retriever.in_conversation(pk, "herons nest")
    assert {h.seq for h in during} == {1, 2, 3}  # the streaming answer is not said yet
    assert (await wait_run(api, run["runId"]))["status"] == "complete"
    after = await retriever.in_conversation(pk, "herons nest")
    assert {h.seq for h in after} == {1, 2, 3, 4} and len(whole) == 1
