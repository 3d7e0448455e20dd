"""Long-term memories through the REST API (issue #27), on every database: kept,
listed, edited, pinned, deleted; written by the demo model's extractor after a run and
used by the next conversation; another owner's ids a 404 on every route and tool."""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest

from tests.api.helpers import bearer, say
from tests.conftest import ROOT
from tests.waits import wait_until

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
KNOWN = "What you know about this person:"


@pytest.fixture
async def opened(api_factory, database, data_dir):
    """(services, client): the shipped ``assistant`` (long-term memory on), two owners."""
    shutil.copytree(ROOT / "data/agents/assistant", data_dir / "agents/assistant")
    return await api_factory(database_url=database.url, api_keys=KEYS)


@pytest.fixture
def api(opened):
    return opened[1]


async def memories(api, headers=ALICE, **params) -> list[dict]:
    resp = await api.get("/api/v1/memories", params=params, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


async def remembered(api, count: int, headers=ALICE, **params) -> list[dict]:
    """The memories once the background extractor has written ``count`` of them."""
    for _ in range(200):
        found = await memories(api, headers, **params)
        if len(found) >= count:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"expected {count} memories, have {found}")


def extractions(extractor) -> list[str]:
    """The questions whose extraction has finished from now on (the extractor wrapped)."""
    done: list[str] = []
    extract = extractor.extract

    async def recording(turn):
        ops = await extract(turn)
        done.append(turn.question)
        return ops

    extractor.extract = recording
    return done


async def context_of(api, run_id: str, headers=ALICE) -> dict:
    resp = await api.get(f"/api/v1/runs/{run_id}/context", headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()


def known_text(context: dict) -> str:
    found = [m["content"] for m in context["messages"]
             if m["role"] == "system" and m["content"].startswith(KNOWN)]  # fmt: skip
    assert len(found) <= 1
    return found[0] if found else ""


async def create(api, text: str, headers=ALICE, **extra) -> dict:
    body = {"agentId": "assistant", "text": text, **extra}
    resp = await api.post("/api/v1/memories", json=body, headers=headers)
    assert resp.status_code in (200, 201), resp.text
    return resp.json()


async def test_a_memory_is_kept_listed_edited_pinned_and_deleted(api) -> None:
    made = await create(api, "The user is allergic to peanuts.")
    assert made["status"] == "active" and made["agentId"] == "assistant"
    assert made["pinned"] is False and made["conversationId"] is None
    again = await api.post(
        "/api/v1/memories",
        json={"agentId": "assistant", "text": "the user is  allergic to peanuts"},
        headers=ALICE,
    )
    assert again.status_code == 200 and again.json()["id"] == made["id"]  # no duplicate
    assert [m["id"] for m in await memories(api)] == [made["id"]]

    resp = await api.patch(
        f"/api/v1/memories/{made['id']}",
        json={"text": "The user is allergic to peanuts and cashews.", "pinned": True},
        headers=ALICE,
    )
    assert resp.status_code == 200, resp.text
    edited = resp.json()
    assert edited["text"] == "The user is allergic to peanuts and cashews." and edited["pinned"]
    assert edited["updatedAt"] >= made["updatedAt"]
    got = await api.get(f"/api/v1/memories/{made['id']}", headers=ALICE)
    assert got.json() == edited

    found = await memories(api, q="cashews")
    assert [m["id"] for m in found] == [made["id"]]
    assert await memories(api, q="zebra") == []

    assert (await api.delete(f"/api/v1/memories/{made['id']}", headers=ALICE)).status_code == 204
    assert (await api.get(f"/api/v1/memories/{made['id']}", headers=ALICE)).status_code == 404
    assert await memories(api) == []
    deleted = await memories(api, status="deleted")
    assert [m["id"] for m in deleted] == [made["id"]]


async def test_bad_input_is_a_clear_4xx(api) -> None:
    cases = [
        ({"agentId": "assistant", "text": ""}, 422),
        ({"agentId": "assistant", "text": "x" * 501}, 422),
        ({"agentId": "assistant", "text": "a\x00b"}, 422),
        ({"agentId": "assistant", "text": "   "}, 422),
        ({"agentId": "assistant", "text": "ok", "extra": 1}, 422),
        ({"agentId": "assistant", "text": "ok", "pinned": "yes"}, 422),
        ({"agentId": "nobody", "text": "ok"}, 404),
    ]
    for body, status in cases:
        resp = await api.post("/api/v1/memories", json=body, headers=ALICE)
        assert resp.status_code == status, (body, resp.text)
        assert resp.json()["error"]["message"]
    for params in ({"status": "forgotten"}, {"agentId": "nobody"}):
        resp = await api.get("/api/v1/memories", params=params, headers=ALICE)
        assert resp.status_code in (404, 422), resp.text
    for bad in ("abc", "0", "-1", "1e3", "99999999999999999999"):
        assert (await api.get(f"/api/v1/memories/{bad}", headers=ALICE)).status_code == 404
    made = await create(api, "The user likes tea.")
    resp = await api.patch(f"/api/v1/memories/{made['id']}", json={"text": ""}, headers=ALICE)
    assert resp.status_code == 422


async def test_another_owners_memories_are_a_404_everywhere(api) -> None:
    """Bob knows Alice's memory id: every route and every memory tool says not found,
    and her memory is untouched."""
    mine = await create(api, "The user's name is Alice.")
    url = f"/api/v1/memories/{mine['id']}"
    assert (await api.get(url, headers=BOB)).status_code == 404
    assert (await api.patch(url, json={"text": "hacked"}, headers=BOB)).status_code == 404
    assert (await api.patch(url, json={"pinned": True}, headers=BOB)).status_code == 404
    assert (await api.delete(url, headers=BOB)).status_code == 404
    assert await memories(api, BOB) == []
    assert await memories(api, BOB, q="Alice") == []
    assert await memories(api, BOB, status="all") == []
    forgot = await api.post("/api/v1/memories/forget", headers=BOB)
    assert forgot.status_code == 200 and forgot.json() == {"forgotten": 0}
    for call in (
        f'/tool forget {{"id": {mine["id"]}}}',
        f'/tool update_memory {{"id": {mine["id"]}, "text": "The user is Bob."}}',
    ):
        run = await say(api, call, agent="assistant", headers=BOB)
        ctx = await context_of(api, run["runId"], BOB)
        results = [m["content"] for m in ctx["messages"] if m["role"] == "tool"]
        assert results and all(f"no memory with id {mine['id']}" in r for r in results), results
    run = await say(api, '/tool memories {"query": "name"}', agent="assistant", headers=BOB)
    results = [m["content"] for m in (await context_of(api, run["runId"], BOB))["messages"]
               if m["role"] == "tool"]  # fmt: skip
    assert results == ["You remember nothing about the user yet."]
    # Bob's runs were never given Alice's memory, and her run's context is not his to read.
    assert KNOWN not in json.dumps(ctx)
    run = await say(api, "hello", agent="assistant", headers=ALICE)
    assert (await api.get(f"/api/v1/runs/{run['runId']}/context", headers=BOB)).status_code == 404
    assert "The user's name is Alice." in known_text(await context_of(api, run["runId"]))
    assert (await api.get(url, headers=ALICE)).json()["text"] == "The user's name is Alice."


async def test_the_memory_tools_keep_what_the_model_is_told(api) -> None:
    run = await say(api, '/tool remember {"text": "The user has a cat named Miso."}',
                    agent="assistant", headers=ALICE)  # fmt: skip
    [made] = await memories(api, q="cat")
    assert made["text"] == "The user has a cat named Miso."
    assert made["conversationId"] == run["conversationId"] and made["seq"] == 1
    run = await say(api, f'/tool update_memory {{"id": {made["id"]}, "text": "The user has '
                    f'two cats."}}', agent="assistant", headers=ALICE)  # fmt: skip
    [now] = await memories(api)  # a new current memory; the old one is its history (#42)
    assert now["text"] == "The user has two cats." and now["id"] != made["id"]
    assert (await api.get(f"/api/v1/memories/{made['id']}", headers=ALICE)).json()[
        "replacedBy"] == now["id"]  # fmt: skip
    run = await say(api, '/tool memories {"query": "cats"}', agent="assistant", headers=ALICE)
    tool = [m["content"] for m in (await context_of(api, run["runId"]))["messages"]
            if m["role"] == "tool"]  # fmt: skip
    assert tool == [f"[#{now['id']}] The user has two cats."]
    await say(api, f'/tool forget {{"id": {now["id"]}}}', agent="assistant", headers=ALICE)
    assert await memories(api) == []


async def test_what_is_said_in_one_conversation_is_known_in_the_next(opened, api) -> None:
    """The demo model's extractor end to end: a name and a project told in conversation 1
    are memories; conversation 2's context holds them and its answer uses them; "call me"
    supersedes the name; a deleted memory is never used again."""
    first = await say(api, "My name is Ada and I work on graph databases", agent="assistant",
                      headers=ALICE)  # fmt: skip
    found = await remembered(api, 2)
    assert sorted(m["text"] for m in found) == [
        "The user works on graph databases.",
        "The user's name is Ada.",
    ]
    assert {m["conversationId"] for m in found} == {first["conversationId"]}
    assert {m["seq"] for m in found} == {1}

    second = await say(api, "what's my name?", agent="assistant", headers=ALICE)
    assert second["conversationId"] != first["conversationId"]
    context = await context_of(api, second["runId"])
    assert "- The user's name is Ada." in known_text(context)
    assert sorted(context["memories"]) == sorted(m["id"] for m in found)
    assert "Ada" in second["answer"] and "I remember about you" in second["answer"]

    await say(api, "actually call me Ada L.", second["conversationId"], agent="assistant",
              headers=ALICE)  # fmt: skip
    for _ in range(200):
        names = [m for m in await memories(api) if "name" in m["text"]]
        if names and names[0]["text"] == "The user's name is Ada L.":
            break
        await asyncio.sleep(0.05)
    assert [m["text"] for m in names] == ["The user's name is Ada L."]
    [old] = await memories(api, status="superseded")
    assert old["text"] == "The user's name is Ada." and old["supersededBy"] == names[0]["id"]
    # Said again: nothing new (no duplicate of the same fact), once that turn's extraction
    # has been applied (not merely once the answer is in: the extractor runs after it).
    extracted = extractions(opened[0].chat.extractor)
    await say(api, "My name is Ada L.", agent="assistant", headers=ALICE)
    await wait_until(lambda: "My name is Ada L." in extracted, "that turn's extraction")
    assert len(await memories(api)) == 2

    resp = await api.delete(f"/api/v1/memories/{names[0]['id']}", headers=ALICE)
    assert resp.status_code == 204
    third = await say(api, "what's my name?", agent="assistant", headers=ALICE)
    context = await context_of(api, third["runId"])
    assert "Ada" not in known_text(context) and names[0]["id"] not in context["memories"]
    assert "graph databases" in known_text(context)


async def test_forget_everything(api) -> None:
    await create(api, "The user likes tea.")
    await create(api, "The user lives in Oslo.")
    await create(api, "The user is Bob.", BOB)
    resp = await api.post("/api/v1/memories/forget", params={"agentId": "assistant"},
                          headers=ALICE)  # fmt: skip
    assert resp.status_code == 200 and resp.json() == {"forgotten": 2}
    assert await memories(api) == []
    assert [m["text"] for m in await memories(api, BOB)] == ["The user is Bob."]
    run = await say(api, "hello", agent="assistant", headers=ALICE)
    assert known_text(await context_of(api, run["runId"])) == ""


async def test_the_search_index_cache_is_bounded_by_the_memories_it_holds(opened) -> None:
    """The owners' search indexes kept between reads hold at most so many memories in all
    (a count of owners alone let 256 owners of 100,000 imported memories hold gigabytes);
    the least recently searched go first, and one alone over it ranks without being kept.
    Every search answers the same whether its index was kept or not."""
    services, api = opened
    store = services.memories.store
    for text in ("Alice keeps bees", "Alice rows on the lake", "Alice grows tomatoes"):
        await create(api, text)
    for text in ("Bob keeps goats", "Bob sails"):
        await create(api, text, headers=BOB)
    alice = [m["id"] for m in await memories(api, q="bees lake")]
    bob = [m["id"] for m in await memories(api, headers=BOB, q="goats")]
    assert len(store._cache) == 2 and alice and bob  # both kept: 5 memories

    store._cache.clear()
    store._cache_memories = 4  # room for bob's two or alice's three, not both
    assert [m["id"] for m in await memories(api, q="bees lake")] == alice
    assert [m["id"] for m in await memories(api, headers=BOB, q="goats")] == bob
    assert [owner for owner, _agent in store._cache] == ["bob"]  # alice, least recent, went
    assert [m["id"] for m in await memories(api, q="bees lake")] == alice
    assert [owner for owner, _agent in store._cache] == ["alice"]

    await create(api, "Bob plays chess", headers=BOB)
    store._cache_memories = 2  # bob's index: 3 memories, alone over
    found = await memories(api, headers=BOB, q="goats chess")
    assert {m["text"] for m in found[:2]} == {"Bob keeps goats", "Bob plays chess"}
    assert "bob" not in [owner for owner, _agent in store._cache]  # ranked, not kept
