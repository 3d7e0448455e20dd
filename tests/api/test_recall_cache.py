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
