"""The seed's examples, byte for byte."""

import json


async def test_execute_stream_matches_the_seed_framing(api) -> None:
    created = await api.post("/api/v1/conversations", json={"agentId": "demo", "title": "t"})
    assert created.status_code == 201, created.text
    conv = created.json()["uuid"]
    resp = await api.post(
        "/api/v1/agents/demo/execute/stream", params={"task": "你好", "conversationId": conv}
    )
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["x-accel-buffering"] == "no"
    frames = resp.content.decode().split("\n\n")
    assert frames[-1] == ""
    data = [f.split("data: ", 1)[1] for f in frames[:-1]]
    assert json.loads(data[0])["conversationId"] == conv
    assert '"chunk": "' in data[1]
    assert "你好" in resp.content.decode()  # not \\u-escaped
    messages = (await api.get(f"/api/v1/conversations/{conv}/messages")).json()["items"]
    assert data[-1] == json.dumps({"done": True, "messageId": messages[-1]["id"]})
    assert [m["role"] for m in messages] == ["USER", "ASSISTANT"]
