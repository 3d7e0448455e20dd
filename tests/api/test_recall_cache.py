"""The conversation indexes recall keeps between reads are bounded by the rows they hold
as well as by their count (a count alone let the cache grow with its conversations), and
a conversation over the whole budget is ranked without being kept; on every backend."""

from __future__ import annotations

import pytest

from lumina_app.domain import LOCAL
from tests.api.helpers import say


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


async def test_a_long_conversations_index_is_built_off_the_event_loop(opened, monkeypatch) -> None:
    """Seconds of work at 10,000 messages: over BUILD_IN_THREAD_ROWS rows the index is
    built (and over ROWS_IN_THREAD its rows decoded) on a worker thread; it ranks the same."""
    import threading

    from lumina_app.recall import retriever as recall_retriever
    from lumina_app.storage.sql import recall_rows

    services, api = opened
    built_on: list[int] = []
    original = recall_retriever.UnitIndex

    class Recorded(original):
        def __init__(self, *args, **kwargs) -> None:
            built_on.append(threading.get_ident())
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(recall_retriever, "UnitIndex", Recorded)
    uuid = (await say(api, "the blue heron nests by the lake"))["conversationId"]
    pk = (await services.conversations.get(LOCAL, uuid)).id
    retriever = services.recall.retriever
    inline = await retriever.in_conversation(pk, "heron lake")
    assert built_on == [threading.get_ident()]  # two rows: inline
    await say(api, "and the grey heron too", uuid)
    monkeypatch.setattr(recall_retriever, "BUILD_IN_THREAD_ROWS", 2)
    monkeypatch.setattr(recall_rows, "ROWS_IN_THREAD", 2)
    threaded = await retriever.in_conversation(pk, "heron lake")
    assert len(built_on) == 2 and built_on[1] != threading.get_ident()
    assert [h.seq for h in threaded][: len(inline)] == [h.seq for h in inline]
