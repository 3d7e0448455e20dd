"""Tools over HTTP: the v1 frames ``toolCall``/``toolResult`` and family B's ``tool_call``
/ ``tool_result`` byte for byte, replay with Last-Event-ID (also from another instance,
through Redis Streams), an agent's tools in its info, a broken tool config."""

from __future__ import annotations

import json
import sys

import pytest

from tests.api.helpers import assert_sse_response, error_of, frames, messages, parse_sse
from tests.conftest import write_agent
from tests.fake_llm import Call, Reply

CALL = Call("call_a", "calculator", '{"expression": "6 * 7"}')


@pytest.fixture
def tooled(data_dir, fake_llm) -> str:
    config = {
        "name": "Tooled",
        "provider": "openai",
        "base_url": fake_llm.base_url,
        "model": "fake-1",
        "tools": ["calculator"],
    }
    write_agent(data_dir / "agents", "tooled", config)
    fake_llm.script.chunks = ["你", "好"]
    fake_llm.script.replies = [Reply(chunks=["Let me check."], calls=[CALL])]
    return "tooled"


def duration_of(body: bytes) -> int:
    """The one thing in a tool stream that is not known in advance."""
    (result,) = [e.json for e in parse_sse(body) if "toolResult" in e.json or "isError" in e.json]
    return result.get("toolResult", result)["durationMs"]


def after(body: bytes, last_id: int) -> bytes:
    return b"".join(
        raw for raw, event in zip(frames(body), parse_sse(body), strict=True) if event.id > last_id
    )


async def test_v1_sends_tool_frames_between_the_chunks(api, tooled) -> None:
    resp = await api.post(f"/api/v1/agents/{tooled}/execute/stream", params={"task": "6*7?"})
    events = assert_sse_response(resp)
    conv, run = events[0].json["conversationId"], events[0].json["runId"]
    answer = (await messages(api, conv))[-1]
    ms = duration_of(resp.content)
    expected = (
        f'id: 1\ndata: {{"conversationId": "{conv}", "runId": "{run}", "scenario": "new"}}\n\n'
        'id: 2\ndata: {"chunk": "Let me check."}\n\n'
        'id: 3\ndata: {"toolCall": {"callId": "call_a", "name": "calculator", '
        '"arguments": "{\\"expression\\": \\"6 * 7\\"}"}}\n\n'
        'id: 4\ndata: {"toolResult": {"callId": "call_a", "name": "calculator", '
        f'"content": "42", "isError": false, "durationMs": {ms}}}}}\n\n'
        'id: 5\ndata: {"chunk": "你"}\n\n'
        'id: 6\ndata: {"chunk": "好"}\n\n'
        f'id: 7\ndata: {{"done": true, "messageId": {answer["id"]}}}\n\n'
    )
    assert resp.content == expected.encode()
    # A client that reads only chunk and done gets all the text and the final answer's id.
    chunks = "".join(e.json.get("chunk", "") for e in events)
    assert chunks == "Let me check.你好" and answer["content"] == "你好"


async def test_family_b_sends_tool_call_and_tool_result_events(api, tooled) -> None:
    resp = await api.post(f"/api/agent/{tooled}/chat", json={"message": "6*7?"})
    events = assert_sse_response(resp)
    assert [e.event for e in events] == [
        "session",
        "agent_output",
        "tool_call",
        "tool_result",
        "agent_output",
        "agent_output",
        "result",
    ]
    ms = duration_of(resp.content)
    assert frames(resp.content)[2:4] == [
        b'event: tool_call\nid: 3\ndata: {"callId": "call_a", "name": "calculator", '
        b'"arguments": "{\\"expression\\": \\"6 * 7\\"}"}\n\n',
        b'event: tool_result\nid: 4\ndata: {"callId": "call_a", "name": "calculator", '
        b'"content": "42", "isError": false, "durationMs": ' + str(ms).encode() + b"}\n\n",
    ]
    result = events[-1].json
    assert (result["status"], result["content"]) == ("complete", "你好")
    detail = await api.get(f"/api/agent/{tooled}/conversations/{result['conversationId']}")
    body = detail.json()
    assert body["meta"]["stats"] == {"messageCount": 4, "toolCallCount": 1}
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "assistant"]
    stored = await messages(api, result["conversationId"])
    assert stored[1]["meta"]["toolCalls"] == [
        {"id": "call_a", "name": "calculator", "arguments": '{"expression": "6 * 7"}'}
    ]
    assert stored[2]["role"] == "TOOL" and stored[2]["meta"]["toolCallId"] == "call_a"


@pytest.mark.parametrize("family", ["v1", "named"])
async def test_replay_after_a_reconnect_includes_the_tool_events(
    api_factory, tooled, family
) -> None:
    services, api = await api_factory()
    if family == "v1":
        resp = await api.post(f"/api/v1/agents/{tooled}/execute/stream", params={"task": "x"})
    else:
        resp = await api.post(f"/api/agent/{tooled}/chat", json={"message": "x"})
    events = assert_sse_response(resp)
    url = f"/api/v1/runs/{events[0].json['runId']}/stream"
    params = {"format": "v1"} if family == "v1" else {}
    for event in events[:-1]:
        resumed = await api.get(url, params=params, headers={"Last-Event-ID": str(event.id)})
        assert resumed.content == after(resp.content, event.id)
    # Another instance reads the same run from the Redis event log, decoded by type.
    _other, elsewhere = await api_factory()
    replay = await elsewhere.get(url, params=params, headers={"Last-Event-ID": "1"})
    assert replay.content == after(resp.content, 1)
    assert services.events is not _other.events


async def test_info_lists_the_tools_and_why_some_are_unavailable(api, data_dir, tmp_path) -> None:
    write_agent(
        data_dir / "agents",
        "toolsy",
        {
            "name": "Toolsy",
            "tools": ["current_time", "calculator"],
            "mcpServers": {"nowhere": {"command": str(tmp_path / "missing")}},
        },
    )
    info = await api.get("/api/agent/toolsy/info")
    assert info.status_code == 200
    tools = info.json()["tools"]
    assert [(t["name"], t["source"], t["available"]) for t in tools] == [
        ("current_time", "builtin", True),
        ("calculator", "builtin", True),
        ("*", "mcp:nowhere", False),
    ]
    assert tools[0]["reason"] is None and tools[0]["description"].startswith("The current date")
    assert tools[2]["reason"].startswith("MCP server 'nowhere' failed to start: ")
    # The agent works without the server's tools.
    chat = await api.post("/api/agent/toolsy/chat", json={"message": "what time is it?"})
    events = assert_sse_response(chat)
    assert [e.event for e in events if e.event.startswith("tool")] == ["tool_call", "tool_result"]
    assert events[-1].json["status"] == "complete"


async def test_a_broken_tool_config_makes_the_agent_unavailable(api, data_dir) -> None:
    write_agent(
        data_dir / "agents",
        "misconfigured",
        {"name": "M", "mcpServers": {"x": {"command": sys.executable, "env": {"K": 1}}}},
    )
    listed = {a["id"]: a for a in (await api.get("/api/agent/list")).json()}
    reason = "config.json: mcpServers.x.env must be an object of strings"
    assert (listed["misconfigured"]["available"], listed["misconfigured"]["error"]) == (
        False,
        reason,
    )
    info = (await api.get("/api/agent/misconfigured/info")).json()
    assert (info["available"], info["error"], info["tools"]) == (False, reason, [])
    resp = await api.post("/api/agent/misconfigured/chat", json={"message": "hi"})
    error = error_of(resp, 409)
    assert error["code"] == "agent_unavailable" and reason in error["message"]


async def test_the_openapi_schema_names_the_tool_events_and_info(api) -> None:
    schema = (await api.get("/openapi.json")).json()
    chat = schema["paths"]["/api/agent/{agent_id}/chat"]["post"]["responses"]["200"]
    assert "tool_result" in chat["description"]
    info = schema["components"]["schemas"]["AgentInfoOut"]
    assert "tools" in info["properties"]
    assert json.dumps(schema["components"]["schemas"]["ToolOut"]).count("mcp:<server>") == 1


async def test_a_tool_conversation_exports_and_mirrors(api_factory, tooled) -> None:
    services, api = await api_factory(archive_mirror=True)
    resp = await api.post(f"/api/agent/{tooled}/chat", json={"message": "6*7?"})
    conv = assert_sse_response(resp)[-1].json["conversationId"]
    exported = await api.get(f"/api/v1/conversations/{conv}/export", params={"format": "json"})
    assert [m["role"] for m in exported.json()["history"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert exported.json()["meta"]["stats"]["toolCallCount"] == 1
    for fmt in ("md", "archive"):
        assert (
            await api.get(f"/api/v1/conversations/{conv}/export", params={"format": fmt})
        ).status_code == 200
    assert await services.mirror.drain()  # the live mirror wrote the folder as well
    folder = services.settings.agents_dir / tooled / "conversations" / conv
    history = json.loads((folder / "history.json").read_text())
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
