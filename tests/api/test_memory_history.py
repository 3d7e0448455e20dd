"""Facts that change over time (issue #42), on every database: a newer statement about the
same thing keeps the old memory as history (``validUntil``, ``replacedBy``) and a new
current one; lists, searches and a run's context give the current one only; the history is
read with ``?history=true`` or ``/{id}/history``; another owner sees and changes neither."""

from __future__ import annotations

import pytest

from tests.api.helpers import say
from tests.api.test_memories import ALICE, BOB, context_of, create, known_text, memories
from tests.api.test_memories import opened as opened

OLD = "The user's dashboard API averages 400 ms."
NEW = "The user's dashboard API averages 250 ms after the caching change."


@pytest.fixture
def services(opened):
    return opened[0]


@pytest.fixture
def api(opened):
    return opened[1]


async def told(services, api, text: str) -> dict:
    """One turn with the shipped assistant (the demo model), its extraction applied."""
    run = await say(api, text, agent="assistant", headers=ALICE)
    await services.chat.extractor.wait()
    return run


async def history(api, memory_id: int, headers=ALICE):
    return await api.get(f"/api/v1/memories/{memory_id}/history", headers=headers)


async def assert_hidden_from_bob(api, *ids: int) -> None:
    """Every route says not found to another owner, and his lists hold none of it."""
    for memory_id in ids:
        url = f"/api/v1/memories/{memory_id}"
        assert (await api.get(url, headers=BOB)).status_code == 404
        assert (await history(api, memory_id, BOB)).status_code == 404
        edit = {"text": "The user's dashboard API averages 1 ms.", "supersede": True}
        assert (await api.patch(url, json=edit, headers=BOB)).status_code == 404
        assert (await api.patch(url, json={"text": "x"}, headers=BOB)).status_code == 404
        assert (await api.delete(url, headers=BOB)).status_code == 404
    assert await memories(api, BOB, history="true") == []
    assert await memories(api, BOB, status="all") == []


async def test_the_demo_extractor_keeps_the_replaced_measure_as_history(services, api) -> None:
    first = await told(services, api, "My dashboard API averages 400 ms.")
    [old] = await memories(api)
    assert old["text"] == OLD and old["validUntil"] is None and old["replacedBy"] is None
    assert old["validFrom"] == old["createdAt"] and old["conversationId"] == first["conversationId"]

    later = await told(services, api, "The dashboard API now averages 250 ms after the caching "
                       "change.")  # fmt: skip
    [new] = await memories(api)
    assert new["text"] == NEW and new["id"] != old["id"] and new["validUntil"] is None
    assert new["conversationId"] == later["conversationId"] and new["seq"] == 1
    closed = (await api.get(f"/api/v1/memories/{old['id']}", headers=ALICE)).json()
    assert closed["status"] == "superseded" and closed["text"] == OLD
    assert closed["replacedBy"] == new["id"] and closed["validUntil"] == new["validFrom"]
    assert closed["validFrom"] == old["validFrom"] < closed["validUntil"]

    [listed] = await memories(api, history="true")
    assert listed["id"] == new["id"] and [h["id"] for h in listed["history"]] == [old["id"]]
    assert listed["history"][0]["validUntil"] == closed["validUntil"]
    for any_version in (old["id"], new["id"]):
        chain = (await history(api, any_version)).json()["items"]
        assert [(m["text"], m["validUntil"] is None) for m in chain] == [(NEW, True), (OLD, False)]

    assert [m["id"] for m in await memories(api, q="dashboard API average")] == [new["id"]]
    run = await told(services, api, "What does my dashboard API average?")
    known = known_text(await context_of(api, run["runId"]))
    assert "250 ms" in known and "400 ms" not in known
    assert old["id"] not in (await context_of(api, run["runId"]))["memories"]
    await assert_hidden_from_bob(api, old["id"], new["id"])
    assert [m["id"] for m in await memories(api)] == [new["id"]]  # untouched by Bob


async def test_patch_supersedes_on_request_and_corrects_in_place_otherwise(api) -> None:
    made = await create(api, "The user's first sprint ends March 29th.")
    url = f"/api/v1/memories/{made['id']}"
    typo = await api.patch(url, json={"text": "The user's first sprint ends March 29."},
                           headers=ALICE)  # fmt: skip
    assert typo.status_code == 200 and typo.json()["id"] == made["id"]  # a correction
    assert typo.json()["validFrom"] == made["validFrom"] and typo.json()["validUntil"] is None
    assert (await history(api, made["id"])).json()["items"] == [typo.json()]

    moved = {"text": "The user's first sprint ends April 5.", "supersede": True, "pinned": True}
    resp = await api.patch(url, json=moved, headers=ALICE)
    assert resp.status_code == 200, resp.text
    new = resp.json()
    assert new["id"] != made["id"] and new["text"] == moved["text"] and new["pinned"]
    assert new["validUntil"] is None and new["conversationId"] is None  # added by hand
    closed = (await api.get(url, headers=ALICE)).json()
    assert closed["replacedBy"] == new["id"] and closed["validUntil"] == new["validFrom"]
    assert closed["text"] == "The user's first sprint ends March 29."

    assert [m["id"] for m in await memories(api)] == [new["id"]]
    assert [m["id"] for m in await memories(api, status="superseded")] == [made["id"]]
    run = await say(api, "When does my first sprint end?", agent="assistant", headers=ALICE)
    known = known_text(await context_of(api, run["runId"]))
    assert "April 5" in known and "March 29" not in known

    # An earlier version is not the one to replace; superseding needs the new text.
    again = {"text": "The user's first sprint ends May 1.", "supersede": True}
    for target, body in ((url, again), (f"/api/v1/memories/{new['id']}", {"supersede": True})):
        resp = await api.patch(target, json=body, headers=ALICE)
        assert resp.status_code == 422 and resp.json()["error"]["message"], resp.text
    await assert_hidden_from_bob(api, made["id"], new["id"])

    # Forgetting the current fact forgets what it used to be too.
    assert (await api.delete(f"/api/v1/memories/{new['id']}", headers=ALICE)).status_code == 204
    for gone in (made["id"], new["id"]):
        assert (await api.get(f"/api/v1/memories/{gone}", headers=ALICE)).status_code == 404
        assert (await history(api, gone)).status_code == 404
    assert await memories(api, status="active,superseded") == []


async def test_forgetting_an_earlier_version_keeps_the_rest_of_the_chain(api) -> None:
    one = await create(api, "The user's team holds 4 people.")
    two = await _superseded(api, one, "The user's team holds 5 people.")
    three = await _superseded(api, two, "The user's team holds 6 people.")
    chain = [m["id"] for m in (await history(api, one["id"])).json()["items"]]
    assert chain == [three["id"], two["id"], one["id"]]
    assert (await api.delete(f"/api/v1/memories/{two['id']}", headers=ALICE)).status_code == 204
    [current] = await memories(api, history="true")
    assert current["id"] == three["id"] and [h["id"] for h in current["history"]] == [one["id"]]


async def _superseded(api, memory: dict, text: str) -> dict:
    resp = await api.patch(f"/api/v1/memories/{memory['id']}",
                           json={"text": text, "supersede": True}, headers=ALICE)  # fmt: skip
    assert resp.status_code == 200, resp.text
    return resp.json()


async def test_the_update_memory_tool_keeps_history(api) -> None:
    # learnt in a conversation (one added by hand is the person's alone: #43)
    await say(api, '/tool remember {"text": "The user\'s build takes 12 minutes."}',
              agent="assistant", headers=ALICE)  # fmt: skip
    [made] = await memories(api)
    run = await say(api, f'/tool update_memory {{"id": {made["id"]}, "text": "The user\'s '
                    f'build takes 3 minutes."}}', agent="assistant", headers=ALICE)  # fmt: skip
    [new] = await memories(api, history="true")
    assert new["text"] == "The user's build takes 3 minutes." and new["id"] != made["id"]
    assert new["conversationId"] == run["conversationId"] and new["seq"] == 1
    assert [(h["id"], h["replacedBy"]) for h in new["history"]] == [(made["id"], new["id"])]
    assert new["history"][0]["validUntil"] == new["validFrom"]
    run = await say(api, '/tool memories {"query": "build minutes"}', agent="assistant",
                    headers=ALICE)  # fmt: skip
    tool = [m["content"] for m in (await context_of(api, run["runId"]))["messages"]
            if m["role"] == "tool"]  # fmt: skip
    assert tool == [f"[#{new['id']}] The user's build takes 3 minutes."]
    # Bob's tool cannot replace Alice's memory either.
    run = await say(api, f'/tool update_memory {{"id": {new["id"]}, "text": "x"}}',
                    agent="assistant", headers=BOB)  # fmt: skip
    results = [m["content"] for m in (await context_of(api, run["runId"], BOB))["messages"]
               if m["role"] == "tool"]  # fmt: skip
    assert results and all(f"no memory with id {new['id']}" in r for r in results), results
    await assert_hidden_from_bob(api, made["id"], new["id"])
