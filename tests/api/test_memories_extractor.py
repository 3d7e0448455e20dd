"""The long-term memory extractor with a real model (the local fake LLM): its request
lists what is known and the new exchange, its JSON reply drives add / update /
supersede, and a reply that is not that JSON changes nothing and is logged."""

from __future__ import annotations

import json
import logging

import pytest

from tests.api.helpers import say
from tests.conftest import write_agent
from tests.fake_llm import Reply

PROMPT = "You extract durable facts about the user as JSON."


@pytest.fixture
async def opened(api_factory, data_dir, fake_llm):
    config = {"name": "Keeper", "provider": "openai", "base_url": fake_llm.base_url,
              "model": "fake-1", "memory": {"longTerm": True}}  # fmt: skip
    write_agent(data_dir / "agents", "keeper", config, {"agent.md": "You help.",
                                                        "memory.md": PROMPT})  # fmt: skip
    return await api_factory()


def is_extraction(body: dict) -> bool:
    return body["messages"][0]["content"] == PROMPT


async def turn(services, api, fake_llm, text: str, reply: str) -> dict:
    """One chat turn whose extraction the fake model answers with ``reply``; the
    extractor's request."""
    seen: list[dict] = []

    def respond(body: dict) -> Reply | None:
        if not is_extraction(body):
            return None
        seen.append(body)
        return Reply(chunks=[reply])

    fake_llm.script.respond = respond
    await say(api, text, agent="keeper")
    await services.chat.extractor.wait()
    assert len(seen) == 1
    return seen[0]


async def texts(api, status: str = "active") -> dict[str, int]:
    resp = await api.get("/api/v1/memories", params={"status": status})
    return {m["text"]: m["id"] for m in resp.json()["items"]}


async def test_the_models_operations_are_applied(opened, fake_llm, caplog) -> None:
    services, api = opened
    add = {"operations": [
        {"op": "add", "text": "The user's name is Grace."},
        {"op": "add", "text": "The user likes Lisp."},
        {"op": "add", "text": "the user likes lisp"},  # the same fact: kept once
    ]}  # fmt: skip
    request = await turn(services, api, fake_llm, "I'm Grace, I like Lisp", json.dumps(add))
    asked = request["messages"][1]["content"]
    assert "Known memories:\n(none yet)" in asked and "USER: I'm Grace, I like Lisp" in asked
    assert "ASSISTANT: Hello from the fake LLM." in asked
    known = await texts(api)
    assert set(known) == {"The user's name is Grace.", "The user likes Lisp."}

    name, likes = known["The user's name is Grace."], known["The user likes Lisp."]
    change = {"operations": [
        {"op": "update", "id": likes, "text": "The user likes Lisp and Scheme."},
        {"op": "supersede", "id": name, "text": "The user's name is Grace H."},
        {"op": "update", "id": 987654, "text": "Not one of the known memories."},
        {"op": "none"},
    ]}  # fmt: skip
    fenced = "```json\n" + json.dumps(change) + "\n```"
    request = await turn(services, api, fake_llm, "Grace H. please; Scheme too", fenced)
    assert f"[{name}] The user's name is Grace." in request["messages"][1]["content"]
    known = await texts(api)
    assert set(known) == {"The user's name is Grace H.", "The user likes Lisp and Scheme."}
    # an update, like a supersede, keeps the old fact as history (issue #42)
    assert known["The user likes Lisp and Scheme."] != likes
    assert await texts(api, "superseded") == {
        "The user's name is Grace.": name,
        "The user likes Lisp.": likes,
    }

    with caplog.at_level(logging.WARNING, logger="lumina_app.agents.after_run.memory_extractor"):
        for bad in ("I think the user is Grace.", '{"operations": [{"op": "add"}]}',
                    '{"operations": [{"op": "supersede", "text": "no id"}]}'):  # fmt: skip
            await turn(services, api, fake_llm, "anything new?", bad)
    assert await texts(api) == known
    warned = [r.getMessage() for r in caplog.records if "not extracted" in r.getMessage()]
    assert len(warned) == 3 and all("reply was not usable" in w for w in warned)
    assert services.chat.extractor.failures == 3


async def test_a_failing_model_is_retried(opened, fake_llm, caplog) -> None:
    services, api = opened
    services.chat.extractor.retry_after = 0.01
    calls: list[int] = []

    def respond(body: dict) -> Reply | None:
        if not is_extraction(body):
            return None
        calls.append(1)
        if len(calls) <= 2:  # the first attempt and the SDK's own retry of it
            return Reply(error_status=503)
        return Reply(chunks=['{"operations": [{"op": "add", "text": "The user is a pilot."}]}'])

    fake_llm.script.respond = respond
    with caplog.at_level(logging.WARNING, logger="lumina_app.agents.after_run.memory_extractor"):
        run = await say(api, "I fly planes for a living", agent="keeper")
        await services.chat.extractor.wait()
    assert run["status"] == "complete"  # the answer never waited for it
    assert len(calls) == 3 and list(await texts(api)) == ["The user is a pilot."]
    assert any("attempt 1" in r.getMessage() for r in caplog.records)
