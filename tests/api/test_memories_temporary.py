"""Temporary conversations (issue #27), on every database: nothing is read from long-term
memory (no "What you know" message, no memory tools) and nothing is written (the extractor
skips them); the flag is stored with the conversation; another owner's is a 404."""

from __future__ import annotations

import pytest

from tests.api.helpers import say
from tests.api.test_memories import ALICE, BOB, KNOWN, context_of, create, known_text, memories
from tests.api.test_memories import opened as opened  # the fixture


@pytest.fixture
def api(opened):
    return opened[1]


async def temporary_conversation(api, headers=ALICE) -> dict:
    resp = await api.post(
        "/api/v1/conversations", json={"agentId": "assistant", "temporary": True}, headers=headers
    )
    assert resp.status_code == 201, resp.text
    return resp.json()


async def test_the_flag_is_stored_and_shown_only_when_true(api) -> None:
    temp = await temporary_conversation(api)
    assert temp["temporary"] is True
    got = await api.get(f"/api/v1/conversations/{temp['uuid']}", headers=ALICE)
    assert got.status_code == 200 and got.json()["temporary"] is True
    normal = await api.post("/api/v1/conversations", json={"agentId": "assistant"}, headers=ALICE)
    assert normal.status_code == 201 and "temporary" not in normal.json()
    listed = (await api.get("/api/v1/conversations", headers=ALICE)).json()["items"]
    flags = {c["uuid"]: c.get("temporary") for c in listed}
    assert flags == {temp["uuid"]: True, normal.json()["uuid"]: None}
    for bad in ("yes", 1, None):
        resp = await api.post(
            "/api/v1/conversations", json={"agentId": "assistant", "temporary": bad}, headers=ALICE
        )
        assert resp.status_code == 422, (bad, resp.text)
    # A fork of a temporary conversation is temporary too.
    await say(api, "hello", temp["uuid"], agent="assistant", headers=ALICE)
    fork = await api.post(f"/api/v1/conversations/{temp['uuid']}/fork", json={}, headers=ALICE)
    assert fork.status_code == 201, fork.text
    assert fork.json()["temporary"] is True


async def test_nothing_said_in_a_temporary_conversation_is_remembered(opened, api) -> None:
    services = opened[0]
    temp = await temporary_conversation(api)
    await say(api, "My name is Ada and I live in Lyon", temp["uuid"], agent="assistant",
              headers=ALICE)  # fmt: skip
    run = await say(api, '/tool remember {"text": "The user has a cat named Miso."}',
                    temp["uuid"], agent="assistant", headers=ALICE)  # fmt: skip
    await services.chat.extractor.wait()
    assert await memories(api, status="all") == []
    tools = [m["content"] for m in (await context_of(api, run["runId"]))["messages"]
             if m["role"] == "tool"]  # fmt: skip
    assert tools == []  # the memory tools were not offered: the model could not call one
    # The same words in a normal conversation are remembered (tool and extractor work).
    run = await say(api, '/tool remember {"text": "The user has a cat named Miso."}',
                    agent="assistant", headers=ALICE)  # fmt: skip
    tools = [m["content"] for m in (await context_of(api, run["runId"]))["messages"]
             if m["role"] == "tool"]  # fmt: skip
    assert len(tools) == 1 and tools[0].startswith("Remembered"), tools
    await say(api, "My name is Ada", agent="assistant", headers=ALICE)
    await services.chat.extractor.wait()
    assert sorted(m["text"] for m in await memories(api)) == [
        "The user has a cat named Miso.",
        "The user's name is Ada.",
    ]


async def test_a_temporary_conversation_reads_no_memory(opened, api) -> None:
    await create(api, "The user's name is Alice.")
    normal = await say(api, "what's my name?", agent="assistant", headers=ALICE)
    assert "The user's name is Alice." in known_text(await context_of(api, normal["runId"]))
    assert "Alice" in normal["answer"]

    temp = await temporary_conversation(api)
    run = await say(api, "what's my name?", temp["uuid"], agent="assistant", headers=ALICE)
    context = await context_of(api, run["runId"])
    assert known_text(context) == "" and context["memories"] == []
    assert KNOWN not in str(context)
    assert "Alice" not in run["answer"] and "I remember about you" not in run["answer"]
    run = await say(api, '/tool memories {"query": "name"}', temp["uuid"], agent="assistant",
                    headers=ALICE)  # fmt: skip
    context = await context_of(api, run["runId"])
    assert "Alice" not in str(context["messages"])


async def test_another_owners_temporary_conversation_is_a_404(api) -> None:
    temp = await temporary_conversation(api)
    url = f"/api/v1/conversations/{temp['uuid']}"
    assert (await api.get(url, headers=BOB)).status_code == 404
    assert (await api.patch(url, json={"title": "x"}, headers=BOB)).status_code == 404
    resp = await api.post(
        "/api/v1/agents/assistant/execute/sync",
        json={"task": "hello", "conversationId": temp["uuid"]},
        headers=BOB,
    )
    assert resp.status_code == 404, resp.text
    assert (await api.delete(url, headers=BOB)).status_code == 404
    assert (await api.get(url, headers=ALICE)).json()["temporary"] is True


async def test_the_conversations_api_makes_one_with_metadata_temporary(opened, api) -> None:
    """OpenAI's shape has string metadata: ``{"temporary": "true"}`` makes a temporary
    conversation; a Responses turn in it reads and writes no memory."""
    services = opened[0]
    await create(api, "The user's name is Alice.")
    resp = await api.post(
        "/v1/conversations", json={"metadata": {"temporary": "true"}}, headers=ALICE
    )
    assert resp.status_code == 200, resp.text
    made = resp.json()
    assert made["metadata"] == {"temporary": "true"}
    uuid = made["id"].removeprefix("conv_")
    assert (await api.get(f"/api/v1/conversations/{uuid}", headers=ALICE)).json()["temporary"]

    turn = await api.post(
        "/v1/responses",
        json={"model": "assistant", "conversation": made["id"], "input": "My name is Ada"},
        headers=ALICE,
    )
    assert turn.status_code == 200, turn.text
    await services.chat.extractor.wait()
    assert [m["text"] for m in await memories(api)] == ["The user's name is Alice."]
    assert "Alice" not in str(turn.json()["output"])

    for bad in ("yes", "1", ""):
        resp = await api.post(
            "/v1/conversations", json={"metadata": {"temporary": bad}}, headers=ALICE
        )
        assert resp.status_code == 400 and "metadata.temporary" in resp.text, (bad, resp.text)
    changed = await api.post(
        f"/v1/conversations/{made['id']}", json={"metadata": {"temporary": "false"}}, headers=ALICE
    )
    assert changed.status_code == 400 and "temporary for good" in changed.text
    plain = await api.post("/v1/conversations", json={"metadata": {}}, headers=ALICE)
    assert "temporary" not in (await api.get(
        f"/api/v1/conversations/{plain.json()['id'].removeprefix('conv_')}", headers=ALICE
    )).json()  # fmt: skip
    assert (await api.get(f"/v1/conversations/{made['id']}", headers=BOB)).status_code == 404
