"""SSE as a client reads it: the seed's framing byte for byte, ids on every event, UTF-8
text, keepalives, and resuming a run with Last-Event-ID (no gap, no duplicate)."""

from __future__ import annotations

import json

import pytest

from tests.api.helpers import (
    assert_sse_response,
    frames,
    messages,
    new_conversation,
    parse_sse,
    start_run,
)


async def v1_stream(api, task: str, agent: str = "tester", conversation: str | None = None):
    params = {"task": task, **({"conversationId": conversation} if conversation else {})}
    resp = await api.post(f"/api/v1/agents/{agent}/execute/stream", params=params)
    return resp, assert_sse_response(resp)


async def test_v1_stream_is_the_seed_example_byte_for_byte(api, fake_llm) -> None:
    fake_llm.script.chunks = ["你", "好"]
    conv = (await new_conversation(api, agent="tester"))["uuid"]
    resp, events = await v1_stream(api, "你好", conversation=conv)
    run_id = events[0].json["runId"]
    message_id = (await messages(api, conv))[-1]["id"]
    expected = (
        f'id: 1\ndata: {{"conversationId": "{conv}", "runId": "{run_id}", "scenario": "new"}}\n\n'
        'id: 2\ndata: {"chunk": "你"}\n\n'
        'id: 3\ndata: {"chunk": "好"}\n\n'
        f'id: 4\ndata: {{"done": true, "messageId": {message_id}}}\n\n'
    )
    assert resp.content == expected.encode("utf-8")


async def test_v1_error_frame_carries_the_message_id(api, fake_llm) -> None:
    fake_llm.script.error_status = 400
    fake_llm.script.error_message = "model overloaded"
    _resp, events = await v1_stream(api, "hi")
    answer = (await messages(api, events[0].json["conversationId"]))[-1]
    assert answer["status"] == "failed"
    message_id = answer["id"]
    error = f'{{"error": "provider error 400: model overloaded", "messageId": {message_id}}}'
    assert events[-1].raw == f"id: {events[-1].id}\ndata: {error}\n\n".encode()
    assert not any("done" in e.json for e in events)


async def test_v1_error_after_partial_output_keeps_the_text(api) -> None:
    _resp, events = await v1_stream(api, "please /fail", agent="demo")
    partial = "".join(e.json.get("chunk", "") for e in events)
    answer = (await messages(api, events[0].json["conversationId"]))[-1]
    assert partial and answer["content"] == partial and answer["status"] == "failed"
    assert events[-1].json == {"error": events[-1].json["error"], "messageId": answer["id"]}
    assert "simulated provider failure" in events[-1].json["error"]


@pytest.mark.parametrize("route", ["v1", "chat"])
async def test_chinese_and_emoji_are_sent_as_utf8_not_escaped(api, fake_llm, route) -> None:
    pieces = ["你好", "，世界 ", "👋🏽", " café", "\n第二行"]
    fake_llm.script.chunks = pieces
    if route == "v1":
        resp, events = await v1_stream(api, "问候 🙂")
        got = [e.json["chunk"] for e in events if "chunk" in e.json]
        assert '{"chunk": "👋🏽"}'.encode() in resp.content
    else:
        resp = await api.post("/api/agent/tester/chat", json={"message": "问候 🙂"})
        events = assert_sse_response(resp)
        got = [e.json["text"] for e in events if e.event == "agent_output"]
        assert '{"text": "👋🏽"}'.encode() in resp.content
    assert got == pieces
    assert b"\\u" not in resp.content
    conv = events[0].json["conversationId"]
    assert (await api.get(f"/api/v1/conversations/{conv}")).json()["title"] == "问候 🙂"
    assert [m["content"] for m in await messages(api, conv)] == ["问候 🙂", "".join(pieces)]


async def test_every_frame_is_one_event_with_an_id(api, fake_llm) -> None:
    resp, events = await v1_stream(api, "x")
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    for raw in frames(resp.content):
        lines = raw.decode().rstrip("\n").split("\n")
        assert lines[0].startswith("id: ") and len(lines) == 2 and lines[1].startswith("data: ")


async def test_idle_streams_send_keepalive_comments(api_factory, fake_llm) -> None:
    _services, api = await api_factory(sse_keepalive_seconds=0.05)
    fake_llm.script.chunks = ["a", "b", "c"]
    fake_llm.script.delay = 0.15
    resp, events = await v1_stream(api, "x")
    assert b"\n\n: keepalive\n\n" in resp.content
    assert "".join(e.json.get("chunk", "") for e in events) == "abc"


def after(body: bytes, last_id: int) -> bytes:
    """The frames of a stream that come after the event ``last_id``."""
    return b"".join(
        raw for raw, event in zip(frames(body), parse_sse(body), strict=True) if event.id > last_id
    )


@pytest.mark.parametrize("with_thinking", [False, True])
async def test_resume_v1_replays_exactly_the_missed_frames(api, fake_llm, with_thinking) -> None:
    if with_thinking:
        fake_llm.script.reasoning = ["let me think"]  # ids the v1 framing skips
    resp, events = await v1_stream(api, "x")
    run_id = events[0].json["runId"]
    url = f"/api/v1/runs/{run_id}/stream"
    for event in events[:-1]:
        resumed = await api.get(
            url, params={"format": "v1"}, headers={"Last-Event-ID": str(event.id)}
        )
        assert_sse_response(resumed)
        assert resumed.content == after(resp.content, event.id)
    full = await api.get(url, params={"format": "v1"})
    assert full.content == resp.content
    by_query = await api.get(url, params={"format": "v1", "lastEventId": events[1].id})
    assert by_query.content == after(resp.content, events[1].id)
    end = await api.get(url, params={"format": "v1"}, headers={"Last-Event-ID": "999"})
    assert end.status_code == 200 and end.content == b""


async def test_resume_named_events_matches_the_chat_stream(api, fake_llm) -> None:
    fake_llm.script.reasoning = ["hmm"]
    resp = await api.post("/api/agent/tester/chat", json={"message": "x"})
    events = assert_sse_response(resp)
    run_id = events[0].json["runId"]
    for event in events[:-1]:
        resumed = await api.get(
            f"/api/v1/runs/{run_id}/stream", headers={"Last-Event-ID": str(event.id)}
        )
        assert resumed.content == after(resp.content, event.id)


async def test_resume_a_live_run_gets_the_missed_events_then_the_rest(api, fake_llm) -> None:
    fake_llm.script.chunks = [f"c{i} " for i in range(8)]
    fake_llm.script.delay = 0.03
    accepted = await start_run(api)
    url = f"/api/v1/runs/{accepted['runId']}/stream"
    live = await api.get(url, params={"format": "v1"}, headers={"Last-Event-ID": "1"})
    events = assert_sse_response(live)
    assert [e.id for e in events] == list(range(2, 2 + len(events)))
    answer = (await messages(api, accepted["conversationId"]))[-1]
    assert events[-1].json == {"done": True, "messageId": answer["id"]}
    assert "".join(e.json.get("chunk", "") for e in events) == answer["content"]
    replay = await api.get(url, params={"format": "v1"})
    assert after(replay.content, 1) == live.content
    assert json.loads(parse_sse(replay.content)[0].data)["runId"] == accepted["runId"]


async def test_bad_format_is_422(api) -> None:
    _resp, events = await v1_stream(api, "x", agent="demo")
    run_id = events[0].json["runId"]
    bad = await api.get(f"/api/v1/runs/{run_id}/stream", params={"format": "xml"})
    assert bad.status_code == 422
