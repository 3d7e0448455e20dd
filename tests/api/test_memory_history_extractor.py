"""Facts that change over time (issue #42) as the app writes them after a turn with a real
model (the local stand-in, ``tests/fake_llm.py``), on every database: the model's
``update`` of a known memory keeps the old fact as history, the next extraction and the
next run are given the current fact only, and another owner sees and changes neither."""

from __future__ import annotations

import json

import pytest

from tests.api.helpers import bearer, say
from tests.api.test_memories import context_of, known_text, memories
from tests.conftest import write_agent
from tests.fake_llm import Reply

PROMPT = "You extract durable facts about the user as JSON."
ALICE, BOB = bearer("ka"), bearer("kb")
OLD = "The user's dashboard API averages 400 ms."
NEW = "The dashboard API of the user now averages 250 ms (after the caching change)."


@pytest.fixture
async def opened(api_factory, database, data_dir, fake_llm):
    config = {"name": "Keeper", "provider": "openai", "base_url": fake_llm.base_url,
              "model": "fake-1", "memory": {"longTerm": True}}  # fmt: skip
    write_agent(data_dir / "agents", "keeper", config, {"agent.md": "You help.",
                                                        "memory.md": PROMPT})  # fmt: skip
    return await api_factory(database_url=database.url, api_keys="alice:ka,bob:kb")


async def turn(opened, fake_llm, text: str, operations: list[dict], headers=ALICE):
    """(the run, the extractor's request): one turn whose extraction the stand-in model
    answers with ``operations``."""
    services, api = opened
    seen: list[dict] = []

    def respond(body: dict) -> Reply | None:
        if body["messages"][0]["content"] != PROMPT:
            return None
        seen.append(body)
        return Reply(chunks=[json.dumps({"operations": operations})])

    fake_llm.script.respond = respond
    run = await say(api, text, agent="keeper", headers=headers)
    await services.chat.extractor.wait()
    assert len(seen) == 1
    return run, seen[0]["messages"][1]["content"]


async def test_the_models_update_keeps_the_old_fact_as_history(opened, fake_llm) -> None:
    api = opened[1]
    first, _ = await turn(opened, fake_llm, "My dashboard API averages 400 ms.",
                          [{"op": "add", "text": OLD}])  # fmt: skip
    [old] = await memories(api)
    assert old["text"] == OLD and old["validUntil"] is None

    later, asked = await turn(opened, fake_llm, "It now averages 250 ms after caching.",
                              [{"op": "update", "id": old["id"], "text": NEW}])  # fmt: skip
    assert f"[{old['id']}] {OLD}" in asked
    [new] = await memories(api, history="true")
    assert new["text"] == NEW and new["id"] != old["id"] and new["validUntil"] is None
    assert new["conversationId"] == later["conversationId"] and new["seq"] == 1
    [was] = new["history"]
    assert (was["id"], was["text"], was["status"]) == (old["id"], OLD, "superseded")
    assert was["replacedBy"] == new["id"] and was["validUntil"] == new["validFrom"]
    assert was["validFrom"] == old["validFrom"] and was["conversationId"] == first["conversationId"]

    # The next extraction and the next run know the current fact only.
    run, asked = await turn(opened, fake_llm, "What does it average?", [{"op": "none"}])
    assert NEW in asked and OLD not in asked
    context = await context_of(api, run["runId"])
    assert NEW in known_text(context) and OLD not in known_text(context)
    assert context["memories"] == [new["id"]]

    # Bob: not found on every route, and his model cannot replace Alice's memory.
    for memory_id in (old["id"], new["id"]):
        url = f"/api/v1/memories/{memory_id}"
        assert (await api.get(url, headers=BOB)).status_code == 404
        assert (await api.get(f"{url}/history", headers=BOB)).status_code == 404
        edit = {"text": "hacked", "supersede": True}
        assert (await api.patch(url, json=edit, headers=BOB)).status_code == 404
    _run, asked = await turn(opened, fake_llm, "Mine is 9 ms.",
                             [{"op": "update", "id": new["id"], "text": "Hacked."}],
                             headers=BOB)  # fmt: skip
    assert "(none yet)" in asked
    assert await memories(api, BOB, status="all") == []
    assert [m["text"] for m in await memories(api)] == [NEW]
