"""``LuminaStore``: LangGraph's ``BaseStore`` over Lumina's long-term memories, sync and
async: put, get, search (with a query, a prefix, a filter), delete, list_namespaces; the
items are memories on the REST list (the Memory page's source); owners stay apart."""

from __future__ import annotations

import secrets

import pytest
from langgraph.store.base import BaseStore
from lumina_client import Lumina
from lumina_client.langgraph import LuminaStore, item_of, memory_text

from tests.server import AppServer

pytestmark = pytest.mark.slow


@pytest.fixture
def store(server: AppServer):
    with Lumina(server.url, api_key="key-alice") as client:
        yield LuminaStore(client)


def test_put_get_search_delete_and_list_namespaces(store: LuminaStore, server: AppServer) -> None:
    assert isinstance(store, BaseStore)
    run = secrets.token_hex(3)
    ns = ("assistant", f"prefs{run}")
    store.put(ns, "food", {"text": "Loves sushi"})
    store.put(ns, "drink", {"kind": "tea", "sugar": 0})
    store.put(("assistant", f"work{run}", "jobs"), "now", {"text": "Works on compilers"})

    food = store.get(ns, "food")
    assert food is not None and food.value == {"text": "Loves sushi"} and food.namespace == ns
    assert store.get(ns, "drink").value == {"kind": "tea", "sugar": 0}
    assert store.get(ns, "missing") is None

    store.put(ns, "food", {"text": "Loves ramen"})  # the same key: updated, not added
    assert store.get(ns, "food").value == {"text": "Loves ramen"}
    assert len(store.search(ns)) == 2

    found = store.search(("assistant",), query="ramen")
    assert found[0].key == "food" and found[0].namespace == ns
    assert [i.key for i in store.search(ns, filter={"kind": "tea"})] == ["drink"]
    assert len(store.search(ns, limit=1)) == 1 and len(store.search(ns, offset=1)) == 1

    spaces = store.list_namespaces(prefix=("assistant",))
    assert ns in spaces and ("assistant", f"work{run}", "jobs") in spaces
    assert ("assistant", f"work{run}") in store.list_namespaces(max_depth=2)
    assert store.list_namespaces(suffix=("jobs",)) == [("assistant", f"work{run}", "jobs")]

    with Lumina(server.url, api_key="key-alice") as http:  # a memory like any other
        texts = [m.text for m in http.memories.list(agent="assistant")]
    assert f"[lg:prefs{run}/food] Loves ramen" in texts

    store.delete(ns, "food")
    assert store.get(ns, "food") is None
    store.put(ns, "drink", None)  # None deletes too
    assert store.search(ns) == []


def test_plain_memories_are_items_and_owners_stay_apart(
    store: LuminaStore, server: AppServer
) -> None:
    with Lumina(server.url, api_key="key-alice") as alice:
        plain = alice.memories.add(f"Has a dog {secrets.token_hex(2)}", agent="assistant")
    item = store.get(("assistant",), f"memory-{plain.id}")
    assert item is not None and item.value == {"text": plain.text}
    with Lumina(server.url, api_key="key-bob") as bob:
        bobs = LuminaStore(bob)
        assert bobs.get(("assistant",), f"memory-{plain.id}") is None
        assert all(i.key != f"memory-{plain.id}" for i in bobs.search(("assistant",)))


async def test_async_forms(store: LuminaStore) -> None:
    ns = ("assistant", f"async{secrets.token_hex(3)}")
    await store.aput(ns, "k", {"text": "Prefers async"})
    assert (await store.aget(ns, "k")).value == {"text": "Prefers async"}
    assert [i.key for i in await store.asearch(ns, query="async")] == ["k"]
    assert ns in await store.alist_namespaces(prefix=ns)
    await store.adelete(ns, "k")
    assert await store.aget(ns, "k") is None


@pytest.mark.unit
def test_the_text_mapping_round_trips() -> None:
    from lumina_client.models import Memory

    cases = [
        (("a", "x/y", "z"), "k: 1", {"text": "plain words"}),
        (("a",), "k", {"text": "{not json"}),
        (("a", "p"), "k", {"text": '{"looks": "like json"}'}),
        (("a", "p"), "k", {"n": 1, "nested": {"b": [1, 2]}}),
    ]
    for namespace, key, value in cases:
        text = memory_text(namespace, key, value)
        memory = Memory(
            id=1,
            agentId="a",
            text=text,
            status="active",
            pinned=False,
            createdAt="2026-01-01T00:00:00.000000Z",
            updatedAt="2026-01-01T00:00:00.000000Z",
        )
        item = item_of(memory)
        assert (item.namespace, item.key, item.value) == (namespace, key, value), text
