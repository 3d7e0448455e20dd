"""Family B, per-agent routes: agents, their conversations (meta.json shape), chat over SSE
with named events, delete; another agent's conversation is not found."""

from __future__ import annotations

import json

import pytest

from tests.api.helpers import (
    ISO_MS_Z,
    MISSING_UUID,
    assert_sse_response,
    error_of,
    messages,
    new_conversation,
    say,
)
from tests.conftest import write_agent


async def chat(api, message: str, agent: str = "tester", conversation: str | None = None):
    body = {"message": message, **({"conversationId": conversation} if conversation else {})}
    return assert_sse_response(await api.post(f"/api/agent/{agent}/chat", json=body))


async def test_list_and_info(api, data_dir) -> None:
    write_agent(data_dir / "agents", "broken", {"name": "Broken", "provider": "nope"})
    agents = (await api.get("/api/agent/list")).json()
    assert [a["id"] for a in agents] == ["broken", "demo", "tester"]
    by_id = {a["id"]: a for a in agents}
    assert by_id["tester"] == {
        "id": "tester",
        "name": "Tester",
        "description": "",
        "available": True,
        "error": None,
        "provider": "openai",
        "model": "fake-1",
    }
    assert by_id["demo"]["provider"] == "demo" and by_id["demo"]["available"]
    assert not by_id["broken"]["available"] and "provider" in by_id["broken"]["error"]
    info = await api.get("/api/agent/tester/info")
    assert info.status_code == 200 and info.json() == {**by_id["tester"], "tools": []}


async def test_a_broken_agent_cannot_chat(api, data_dir) -> None:
    write_agent(data_dir / "agents", "broken", {"name": "Broken", "temperature": 9})
    resp = await api.post("/api/agent/broken/chat", json={"message": "hi"})
    assert error_of(resp, 409)["code"] == "agent_unavailable"


@pytest.mark.parametrize(
    "path",
    [
        "/api/agent/nobody/info",
        "/api/agent/nobody/conversations",
        f"/api/agent/nobody/conversations/{MISSING_UUID}",
        "/api/agent/..%2Fdemo/info",
    ],
)
async def test_unknown_agent_is_404(api, path) -> None:
    assert error_of(await api.get(path), 404)["code"] == "not_found"


async def test_unknown_agent_chat_is_404_and_creates_nothing(api) -> None:
    resp = await api.post("/api/agent/nobody/chat", json={"message": "hi"})
    error_of(resp, 404)
    assert (await api.get("/api/v1/conversations")).json()["items"] == []


async def test_chat_streams_named_events(api, fake_llm) -> None:
    fake_llm.script.chunks = ["Hi", " there"]
    events = await chat(api, "hello")
    assert [e.event for e in events] == ["session", "agent_output", "agent_output", "result"]
    session, result = events[0].json, events[-1].json
    conv = session["conversationId"]
    items = await messages(api, conv)
    assert session["messageId"] == items[0]["turnId"] == items[1]["turnId"]
    assert session["runId"].startswith("run-") and session["scenario"] == "new"
    assert [e.json for e in events[1:3]] == [{"text": "Hi"}, {"text": " there"}]
    assert result["messageId"] == items[1]["id"] and result["status"] == "complete"
    assert result["content"] == "Hi there" == items[1]["content"]
    assert result["runId"] == session["runId"] and result["conversationId"] == conv
    for raw, event in zip(
        (e.raw for e in events), ("session", "agent_output", "agent_output", "result"), strict=True
    ):
        assert raw.startswith(f"event: {event}\nid: ".encode())


async def test_chat_continues_a_conversation(api, fake_llm) -> None:
    first = await chat(api, "one")
    conv = first[0].json["conversationId"]
    second = await chat(api, "two", conversation=conv)
    assert second[0].json["conversationId"] == conv
    assert second[0].json["scenario"] == "continue"
    assert second[0].json["messageId"] != first[0].json["messageId"]
    assert [m["content"] for m in await messages(api, conv)][::2] == ["one", "two"]


async def test_chat_sends_thinking_when_the_model_reasons(api, fake_llm) -> None:
    fake_llm.script.reasoning = ["Let me ", "think."]
    events = await chat(api, "why?")
    kinds = [e.event for e in events]
    assert kinds[:3] == ["session", "thinking", "thinking"]
    assert [e.json["text"] for e in events if e.event == "thinking"] == ["Let me ", "think."]
    assert kinds.index("agent_output") > 2 and kinds[-1] == "result"
    answer = (await messages(api, events[0].json["conversationId"]))[-1]
    assert answer["meta"]["thinking"] == "Let me think."


async def test_chat_provider_failure_sends_error_then_result(api, fake_llm) -> None:
    fake_llm.script.error_status = 400
    fake_llm.script.error_message = "bad request: quota"
    events = await chat(api, "hi")
    assert [e.event for e in events] == ["session", "error", "result"]
    answer = (await messages(api, events[0].json["conversationId"]))[-1]
    assert events[1].json == {
        "message": "provider error 400: bad request: quota",
        "messageId": answer["id"],
    }
    assert events[2].json["status"] == "failed" and events[2].json["messageId"] == answer["id"]
    assert answer["status"] == "failed"


@pytest.mark.parametrize(
    "body",
    [{}, {"message": ""}, {"message": 1}, {"message": "x", "extra": 1}, {"message": "\x00"}],
)
async def test_chat_rejects_invalid_bodies(api, body) -> None:
    error_of(await api.post("/api/agent/demo/chat", json=body), 422)


@pytest.mark.parametrize("conversation", [MISSING_UUID, "not-a-uuid"])
async def test_chat_to_an_unknown_conversation_is_404(api, conversation) -> None:
    resp = await api.post(
        "/api/agent/demo/chat", json={"message": "hi", "conversationId": conversation}
    )
    error_of(resp, 404)


async def test_conversations_are_listed_per_agent_in_meta_json_shape(api) -> None:
    older = await new_conversation(api, agent="demo", title="older")
    newer = await new_conversation(api, agent="demo", title="newer")
    await new_conversation(api, agent="tester", title="not mine")
    await say(api, "x", older["uuid"])
    page = (await api.get("/api/agent/demo/conversations")).json()
    assert page["nextCursor"] is None
    metas = page["conversations"]
    assert [m["conversationId"] for m in metas] == [older["uuid"], newer["uuid"]]
    meta = metas[0]
    assert set(meta) == {
        "conversationId",
        "agentId",
        "title",
        "createdAt",
        "updatedAt",
        "status",
        "stats",
    }
    assert meta["agentId"] == "demo" and meta["title"] == "older"
    assert ISO_MS_Z.match(meta["createdAt"]) and ISO_MS_Z.match(meta["updatedAt"])
    assert meta["status"] == "completed"
    assert meta["stats"] == {"messageCount": 2, "toolCallCount": 0}


async def test_agent_conversations_page_with_a_cursor(api) -> None:
    made = [(await new_conversation(api, agent="demo", title=str(i)))["uuid"] for i in range(3)]
    first = (await api.get("/api/agent/demo/conversations", params={"limit": 2})).json()
    rest = (
        await api.get(
            "/api/agent/demo/conversations", params={"limit": 2, "after": first["nextCursor"]}
        )
    ).json()
    ids = [m["conversationId"] for m in first["conversations"] + rest["conversations"]]
    assert ids == made[::-1] and rest["nextCursor"] is None
    error_of(await api.get("/api/agent/demo/conversations", params={"limit": 101}), 422)


async def test_conversation_detail_is_meta_plus_messages(api) -> None:
    conv = await new_conversation(api, agent="demo", title="detail")
    turn = await say(api, "what is 2+2? 🤔", conv["uuid"])
    resp = await api.get(f"/api/agent/demo/conversations/{conv['uuid']}")
    assert resp.status_code == 200
    detail = resp.json()
    assert detail["meta"]["conversationId"] == conv["uuid"]
    assert detail["meta"]["stats"] == {"messageCount": 2, "toolCallCount": 0}
    assert ISO_MS_Z.match(detail["meta"]["createdAt"])
    user, answer = detail["messages"]
    assert (user["role"], user["content"]) == ("user", "what is 2+2? 🤔")
    assert (answer["role"], answer["content"]) == ("assistant", turn["answer"])
    assert user["messageId"] == answer["messageId"] and user["messageId"].startswith("msg-")
    assert answer["id"] == turn["messageId"] and [user["seq"], answer["seq"]] == [1, 2]
    assert ISO_MS_Z.match(user["timestamp"]) and answer["status"] == "complete"
    assert detail["nextAfter"] is None
    paged = await api.get(
        f"/api/agent/demo/conversations/{conv['uuid']}", params={"limit": 1, "after": 0}
    )
    assert [m["seq"] for m in paged.json()["messages"]] == [1] and paged.json()["nextAfter"] == 1


async def test_another_agents_conversation_is_404(api) -> None:
    conv = await new_conversation(api, agent="demo")
    await say(api, "x", conv["uuid"])
    url = f"/api/agent/tester/conversations/{conv['uuid']}"
    error_of(await api.get(url), 404)
    error_of(await api.delete(url), 404)
    resp = await api.post(
        "/api/agent/tester/chat", json={"message": "x", "conversationId": conv["uuid"]}
    )
    error_of(resp, 404)
    assert len(await messages(api, conv["uuid"])) == 2  # untouched


async def test_delete(api) -> None:
    conv = await new_conversation(api, agent="demo")
    await say(api, "x", conv["uuid"])
    url = f"/api/agent/demo/conversations/{conv['uuid']}"
    resp = await api.delete(url)
    assert resp.status_code == 204
    error_of(await api.get(url), 404)
    error_of(await api.delete(url), 404)
    assert (await api.get("/api/agent/demo/conversations")).json()["conversations"] == []


async def test_result_event_is_valid_json_per_line(api) -> None:
    """The demo answer has newlines and Markdown: still one data line per event."""
    events = await chat(api, "show /markdown", agent="demo")
    for event in events:
        assert event.raw.count(b"\ndata: ") == 1
        json.loads(event.data)
    assert "你好" in events[-1].json["content"]
