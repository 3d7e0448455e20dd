"""SSE while it is live: events arrive as they happen, a client that hangs up mid-stream
does not lose the answer, and reconnecting with Last-Event-ID continues exactly where
it stopped."""

from __future__ import annotations

from tests.api.helpers import LiveStream, messages, parse_sse, wait_run

CHUNKS = [f"part{i} " for i in range(12)]


def slow(fake_llm, delay: float = 0.08) -> None:
    fake_llm.script.chunks = CHUNKS
    fake_llm.script.delay = delay


async def test_events_arrive_before_the_run_ends(api_factory, fake_llm) -> None:
    services, api = await api_factory()
    slow(fake_llm)
    async with LiveStream(
        services, "POST", "/api/agent/tester/chat", json_body={"message": "hi"}
    ) as live:
        events = await live.wait_events(3)
        assert live.status == 200
        assert [e.event for e in events[:3]] == ["session", "agent_output", "agent_output"]
        run = (await api.get(f"/api/v1/runs/{events[0].json['runId']}")).json()
        assert run["status"] == "running"
        await live.wait_events(len(CHUNKS) + 2)
    assert live.events()[-1].event == "result"


async def test_hang_up_then_resume_with_last_event_id(api_factory, fake_llm) -> None:
    services, api = await api_factory()
    slow(fake_llm)
    async with LiveStream(services, "POST", "/api/v1/agents/tester/execute/stream?task=hi") as live:
        events = await live.wait_events(4)
        await live.hang_up()  # the client goes away mid-answer
    first = live.received[: live.received.rfind(b"\n\n") + 2]
    last_id = parse_sse(first)[-1].id
    run_id = events[0].json["runId"]
    conversation = events[0].json["conversationId"]

    resumed = await api.get(
        f"/api/v1/runs/{run_id}/stream",
        params={"format": "v1"},
        headers={"Last-Event-ID": str(last_id)},
    )
    assert resumed.status_code == 200
    replay = await api.get(f"/api/v1/runs/{run_id}/stream", params={"format": "v1"})
    assert first + resumed.content == replay.content  # no gap, no duplicate
    whole = parse_sse(replay.content)
    assert "".join(e.json.get("chunk", "") for e in whole) == "".join(CHUNKS)

    run = await wait_run(api, run_id)
    assert run["status"] == "complete" and run["content"] == "".join(CHUNKS)
    assert (await messages(api, conversation))[-1]["status"] == "complete"


async def test_with_cancel_on_disconnect_a_hang_up_interrupts(api_factory, fake_llm) -> None:
    services, api = await api_factory(cancel_on_disconnect=True)
    slow(fake_llm)
    async with LiveStream(services, "POST", "/api/v1/agents/tester/execute/stream?task=hi") as live:
        events = await live.wait_events(3)
        await live.hang_up()
    run = await wait_run(api, events[0].json["runId"])
    assert run["status"] == "interrupted"
    answer = (await messages(api, events[0].json["conversationId"]))[-1]
    assert answer["status"] == "interrupted"
    assert answer["content"] and answer["content"] != "".join(CHUNKS)
