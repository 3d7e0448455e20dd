"""Whose memories agents may change (#43, findings 6 and 7), on every database: a pinned
memory, or one the person added by hand, is left as it is by the memory tools'
``update_memory`` and ``forget`` (they answer that only the person can change it) and by
the extractor; someone else's memory id is "not found", never "pinned"; the memories
learnt in a deleted conversation, or from a deleted message, are kept, unlinked and marked
"learnt in a conversation since deleted"."""

from __future__ import annotations

import shutil

import pytest

from lumina_app.memory.memory_rules import SOURCE_DELETED
from tests.api.helpers import bearer, say
from tests.conftest import ROOT

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
ONLY = "only the person can change or forget it"


@pytest.fixture
async def opened(api_factory, database, data_dir):
    shutil.copytree(ROOT / "data/agents/assistant", data_dir / "agents/assistant")
    return await api_factory(database_url=database.url, api_keys=KEYS)


async def listed(api, headers=ALICE) -> dict[int, dict]:
    resp = await api.get("/api/v1/memories", headers=headers)
    assert resp.status_code == 200, resp.text
    return {m["id"]: m for m in resp.json()["items"]}


async def tool(api, call: str, headers=ALICE) -> str:
    """One turn whose question is a tool call (the demo model runs it); the tool's answer."""
    run = await say(api, call, agent="assistant", headers=headers)
    resp = await api.get(f"/api/v1/runs/{run['runId']}/context", headers=headers)
    [result] = [m["content"] for m in resp.json()["messages"] if m["role"] == "tool"]
    return result


async def test_pinned_and_hand_written_memories_are_the_persons(opened) -> None:
    services, api = opened
    hand = {"agentId": "assistant", "text": "The user's name is Ada."}
    resp = await api.post("/api/v1/memories", json=hand, headers=ALICE)
    by_hand = resp.json()
    assert by_hand["origin"] is None and by_hand["conversationId"] is None
    said = await tool(api, '/tool remember {"text": "The user keeps bees."}')
    learnt = next(m for m in (await listed(api)).values() if m["text"] == "The user keeps bees.")
    assert learnt["conversationId"] and "Remembered" in said
    pin = await api.patch(f"/api/v1/memories/{learnt['id']}", json={"pinned": True},
                          headers=ALICE)  # fmt: skip
    assert pin.status_code == 200
    before = await listed(api)

    for memory, why in ((by_hand, "added by hand"), (learnt, "pinned")):
        answer = await tool(api, f'/tool update_memory {{"id": {memory["id"]}, '
                                 f'"text": "The user is someone else."}}')  # fmt: skip
        assert ONLY in answer and why in answer, answer
        answer = await tool(api, f'/tool forget {{"id": {memory["id"]}}}')
        assert ONLY in answer and why in answer, answer
    # the demo extractor reads "my name is …" as a newer name: not over a hand-written one
    await say(api, "Hello, my name is Grace.", agent="assistant", headers=ALICE)
    await services.chat.extractor.wait()
    after = await listed(api)
    assert {i: after[i] for i in before} == before  # untouched, still current
    assert "The user's name is Grace." not in [m["text"] for m in after.values()]

    # Bob hears "not found" for Alice's ids, never whether they are pinned
    for memory in (by_hand, learnt):
        answer = await tool(api, f'/tool forget {{"id": {memory["id"]}}}', headers=BOB)
        assert answer == f"Error: no memory with id {memory['id']}", answer
        resp = await api.delete(f"/api/v1/memories/{memory['id']}", headers=BOB)
        assert resp.status_code == 404

    # the person changes them as before
    resp = await api.patch(f"/api/v1/memories/{by_hand['id']}", headers=ALICE,
                           json={"text": "The user's name is Ada L."})  # fmt: skip
    assert resp.status_code == 200 and resp.json()["text"] == "The user's name is Ada L."
    assert (await api.delete(f"/api/v1/memories/{learnt['id']}", headers=ALICE)).status_code == 204


async def test_a_deleted_conversations_memories_stay_marked(opened) -> None:
    _services, api = opened
    await tool(api, '/tool remember {"text": "The user sails a dinghy."}')
    [memory] = (await listed(api)).values()
    conversation = memory["conversationId"]
    assert conversation
    kept = await say(api, '/tool remember {"text": "The user rows too."}', agent="assistant",
                     headers=ALICE)  # fmt: skip

    resp = await api.delete(f"/api/v1/conversations/{conversation}", headers=ALICE)
    assert resp.status_code == 204
    now = await listed(api)
    marked = now[memory["id"]]
    assert marked["text"] == "The user sails a dinghy." and marked["status"] == "active"
    assert marked["conversationId"] is None and marked["seq"] is None
    assert marked["origin"] == SOURCE_DELETED
    other = next(m for m in now.values() if m["text"] == "The user rows too.")
    assert other["conversationId"] == kept["conversationId"] and other["origin"] is None
    # a marked memory is no longer "by hand": the tools may change it again
    answer = await tool(api, f'/tool update_memory {{"id": {memory["id"]}, '
                             '"text": "The user sails a keelboat."}')  # fmt: skip
    assert "Updated" in answer, answer


async def test_a_deleted_messages_memories_stay_marked(opened) -> None:
    _services, api = opened
    first = await say(api, '/tool remember {"text": "The user plays the oboe."}',
                      agent="assistant", headers=ALICE)  # fmt: skip
    conversation = first["conversationId"]
    await say(api, '/tool remember {"text": "The user plays the harp."}', conversation,
              agent="assistant", headers=ALICE)  # fmt: skip
    resp = await api.get(f"/api/v1/conversations/{conversation}/messages", headers=ALICE)
    question = next(m for m in resp.json()["items"] if m["seq"] == 1)
    resp = await api.delete(
        f"/v1/conversations/conv_{conversation}/items/msg_{question['id']}", headers=ALICE
    )
    assert resp.status_code == 200, resp.text
    by_text = {m["text"]: m for m in (await listed(api)).values()}
    oboe, harp = by_text["The user plays the oboe."], by_text["The user plays the harp."]
    assert (oboe["conversationId"], oboe["origin"]) == (None, SOURCE_DELETED)
    assert harp["conversationId"] == conversation and harp["origin"] is None
