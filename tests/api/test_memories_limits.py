"""Memories at scale (#43, finding 4), on every database: an owner's memories are capped
(``LUMINA_MAX_MEMORIES_PER_OWNER``) wherever they are made — REST, the memory tools, the
extractor — with the limit named; one owner's concurrent cold turns read and build their
memory index once; the extractor applies at most ``MAX_OPERATIONS`` operations a turn."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil

import pytest
import sqlalchemy as sa

from lumina_app.agents.after_run.memory_extractor import MAX_OPERATIONS
from lumina_app.domain import utcnow
from lumina_app.storage.sql import memories as rows
from lumina_app.storage.sql.models import memories as T
from tests.api.helpers import bearer, say
from tests.conftest import ROOT, write_agent
from tests.fake_llm import Reply

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
SETTING = "LUMINA_MAX_MEMORIES_PER_OWNER"
EXTRACTOR = "lumina_app.agents.after_run.memory_extractor"


@pytest.fixture
async def capped(api_factory, database, data_dir):
    """(services, client): the shipped ``assistant``, two owners, three memories each."""
    shutil.copytree(ROOT / "data/agents/assistant", data_dir / "agents/assistant")
    return await api_factory(database_url=database.url, api_keys=KEYS, max_memories_per_owner=3)


async def add(api, text: str, headers=ALICE):
    return await api.post(
        "/api/v1/memories", json={"agentId": "assistant", "text": text}, headers=headers
    )


async def active(api, headers=ALICE) -> list[str]:
    resp = await api.get("/api/v1/memories", headers=headers)
    assert resp.status_code == 200, resp.text
    return [m["text"] for m in resp.json()["items"]]


def tool_results(context: dict) -> list[str]:
    return [m["content"] for m in context["messages"] if m["role"] == "tool"]


async def test_the_cap_refuses_with_the_limit_named_everywhere(capped, caplog) -> None:
    services, api = capped
    for i in range(3):
        assert (await add(api, f"The user owns {i + 2} bikes.")).status_code == 201
    over = await add(api, "The user likes figs.")
    assert over.status_code == 429, over.text
    said = over.json()["error"]
    assert said["code"] == "quota_exceeded" and SETTING in said["message"]
    assert "the limit is 3" in said["message"]
    assert (await add(api, "The user owns 2 bikes.")).status_code == 200  # known: no new row
    assert (await add(api, "The user likes figs.", headers=BOB)).status_code == 201  # per owner

    first = (await api.get("/api/v1/memories", headers=ALICE)).json()["items"][0]["id"]
    changed = await api.patch(  # a fact that changed keeps the old as history: one more row
        f"/api/v1/memories/{first}",
        json={"text": "The user owns 9 bikes.", "supersede": True},
        headers=ALICE,
    )
    assert changed.status_code == 429 and SETTING in changed.json()["error"]["message"]

    run = await say(api, '/tool remember {"text": "The user likes figs."}', agent="assistant",
                    headers=ALICE)  # fmt: skip
    context = (await api.get(f"/api/v1/runs/{run['runId']}/context", headers=ALICE)).json()
    [result] = tool_results(context)
    assert SETTING in result and "the limit is 3" in result

    with caplog.at_level(logging.WARNING, logger=EXTRACTOR):
        for name in ("Ada", "Grace"):  # the demo extractor: "my name is …" → add
            done = await say(api, f"Hello, I live in Lyon and my name is {name}.",
                             agent="assistant", headers=ALICE)  # fmt: skip
            assert done["status"] == "complete"  # a run never fails for it
            await services.chat.extractor.wait()
    assert len(await active(api)) == 3
    full = [r for r in caplog.records if "nothing more kept" in r.getMessage()]
    assert len(full) == 1 and SETTING in full[0].getMessage()  # warned once

    resp = await api.delete(f"/api/v1/memories/{first}", headers=ALICE)
    assert resp.status_code == 204
    assert (await add(api, "The user likes figs.")).status_code == 201  # room again


async def test_concurrent_cold_turns_build_the_index_once(api_factory, database, data_dir,
                                                          monkeypatch) -> None:  # fmt: skip
    shutil.copytree(ROOT / "data/agents/assistant", data_dir / "agents/assistant")
    services, api = await api_factory(database_url=database.url, api_keys=KEYS)
    store = services.memories.store
    now = utcnow()
    row = {"owner": "alice", "agent_id": "assistant", "status": "active", "pinned": False}
    stamps = {"created_at": now, "updated_at": now, "valid_from": now}
    many = [{**row, **stamps, "text": f"The user visited city number {i}."} for i in range(2000)]
    async with store.db.begin() as conn:
        await conn.execute(sa.insert(T), many)
    full_reads: list[tuple] = []
    read = rows.with_vectors

    async def counted(db, **kwargs):
        full_reads.append((kwargs["owner"], kwargs["agent_id"]))
        await asyncio.sleep(0.05)  # a slow read: the other turns arrive while it runs
        return await read(db, **kwargs)

    monkeypatch.setattr(rows, "with_vectors", counted)
    runs = await asyncio.gather(
        *(say(api, f"Which city did I visit, {i}?", agent="assistant", headers=ALICE)
          for i in range(4))
    )  # fmt: skip
    assert all(run["status"] == "complete" for run in runs)
    assert full_reads == [("alice", "assistant")]  # one read, one build, four turns
    context = (await api.get(f"/api/v1/runs/{runs[3]['runId']}/context", headers=ALICE)).json()
    assert len(context["memories"]) == 10  # each turn got the owner's memories
    assert not store._building  # nothing left behind


@pytest.fixture
async def keeper(api_factory, database, data_dir, fake_llm):
    config = {"name": "Keeper", "provider": "openai", "base_url": fake_llm.base_url,
              "model": "fake-1", "memory": {"longTerm": True}}  # fmt: skip
    write_agent(data_dir / "agents", "keeper", config,
                {"agent.md": "You help.", "memory.md": "Extract facts as JSON."})  # fmt: skip
    return await api_factory(database_url=database.url)


async def test_the_extractor_applies_at_most_max_operations_a_turn(keeper, fake_llm,
                                                                   caplog) -> None:  # fmt: skip
    services, api = keeper
    ops = [{"op": "add", "text": f"The user has visited {i} museums."} for i in range(130)]

    def respond(body: dict) -> Reply | None:
        if body["messages"][0]["content"] != "Extract facts as JSON.":
            return None
        return Reply(chunks=[json.dumps({"operations": ops})])

    fake_llm.script.respond = respond
    with caplog.at_level(logging.WARNING, logger=EXTRACTOR):
        await say(api, "I like museums", agent="keeper")
        await services.chat.extractor.wait()
    kept = await active(api, headers={})
    assert len(kept) == MAX_OPERATIONS == 20
    assert any("130 operations from one turn" in r.getMessage() for r in caplog.records)
