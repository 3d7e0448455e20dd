"""Family A execution: stream (query or JSON body), async execute + run status, sync, stop,
one run per conversation, and the 404s/422s/413s a client can provoke."""

from __future__ import annotations

import pytest

from tests.api.helpers import (
    MISSING_RUN,
    MISSING_UUID,
    assert_sse_response,
    error_of,
    messages,
    new_conversation,
    say,
    start_run,
    wait_for_text,
    wait_run,
)

SLOW = [f"w{i} " for i in range(40)]


def slow(fake_llm, delay: float = 0.05) -> None:
    fake_llm.script.chunks = SLOW
    fake_llm.script.delay = delay


def stream_answer(events) -> str:
    return "".join(e.json["chunk"] for e in events if "chunk" in e.json)


async def test_stream_with_query_params_continues_the_conversation(api, fake_llm) -> None:
    conv = await new_conversation(api, agent="tester")
    resp = await api.post(
        "/api/v1/agents/tester/execute/stream",
        params={"task": "hi", "conversationId": conv["uuid"]},
        headers={"Accept": "text/event-stream"},
    )
    events = assert_sse_response(resp)
    assert events[0].json["conversationId"] == conv["uuid"]
    assert stream_answer(events) == "Hello from the fake LLM."
    items = await messages(api, conv["uuid"])
    assert events[-1].json == {"done": True, "messageId": items[-1]["id"]}
    assert [m["content"] for m in items] == ["hi", "Hello from the fake LLM."]
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "user", "content": "hi"}


async def test_stream_with_a_json_body(api, fake_llm) -> None:
    conv = await new_conversation(api, agent="tester")
    await say(api, "first", conv["uuid"], agent="tester")
    resp = await api.post(
        "/api/v1/agents/tester/execute/stream",
        json={"task": "second", "conversationId": conv["uuid"]},
    )
    events = assert_sse_response(resp)
    assert events[0].json["conversationId"] == conv["uuid"]
    assert events[0].json["scenario"] == "continue"
    sent = fake_llm.requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first", "Hello from the fake LLM.", "second"]
    assert len(await messages(api, conv["uuid"])) == 4


@pytest.mark.parametrize("how", ["query", "body"])
async def test_stream_without_conversation_creates_one(api, how) -> None:
    kwargs = {"params": {"task": "new topic"}} if how == "query" else {"json": {"task": "new"}}
    resp = await api.post("/api/v1/agents/demo/execute/stream", **kwargs)
    events = assert_sse_response(resp)
    first = events[0].json
    assert first["scenario"] == "new" and first["runId"].startswith("run-")
    conv = (await api.get(f"/api/v1/conversations/{first['conversationId']}")).json()
    assert conv["agentId"] == "demo" and conv["messageCount"] == 2
    assert conv["title"] == ("new topic" if how == "query" else "new")


async def test_query_task_wins_over_the_body(api) -> None:
    resp = await api.post(
        "/api/v1/agents/demo/execute/sync", params={"task": "from query"}, json={"task": "body"}
    )
    items = await messages(api, resp.json()["conversationId"])
    assert items[0]["content"] == "from query"


async def test_execute_is_202_then_the_run_shows_its_result(api, fake_llm) -> None:
    conv = await new_conversation(api, agent="tester")
    resp = await api.post(
        "/api/v1/agents/tester/execute", params={"task": "q", "conversationId": conv["uuid"]}
    )
    assert resp.status_code == 202
    accepted = resp.json()
    assert accepted["conversationId"] == conv["uuid"]
    assert accepted["status"] == "running" and accepted["scenario"] == "new"
    run = await wait_run(api, accepted["runId"])
    items = await messages(api, conv["uuid"])
    assert run["status"] == "complete"
    assert run["content"] == "Hello from the fake LLM." == items[-1]["content"]
    assert run["messageId"] == items[-1]["id"] and run["turnId"] == items[-1]["turnId"]
    assert run["conversationId"] == conv["uuid"] and run["agentId"] == "tester"
    assert run["model"] == "fake-1" and run["error"] is None
    assert run["startedAt"] <= run["finishedAt"]


async def test_a_running_run_reports_running(api, fake_llm) -> None:
    slow(fake_llm)
    accepted = await start_run(api)
    run = (await api.get(f"/api/v1/runs/{accepted['runId']}")).json()
    assert run["status"] == "running" and run["finishedAt"] is None
    assert run["conversationId"] == accepted["conversationId"]
    await api.post(f"/api/v1/runs/{accepted['runId']}/stop")


async def test_execute_without_conversation_creates_one(api) -> None:
    accepted = (await api.post("/api/v1/agents/demo/execute", json={"task": "x"})).json()
    await wait_run(api, accepted["runId"])
    assert len(await messages(api, accepted["conversationId"])) == 2


async def test_sync_returns_the_answer_and_its_message_id(api, fake_llm) -> None:
    resp = await api.post("/api/v1/agents/tester/execute/sync", json={"task": "hello"})
    assert resp.status_code == 200
    result = resp.json()
    assert result["answer"] == "Hello from the fake LLM."
    assert result["status"] == "complete" and result["error"] is None
    assert result["usage"] == {"promptTokens": 11, "completionTokens": 5}
    items = await messages(api, result["conversationId"])
    assert result["messageId"] == items[-1]["id"]
    again = await say(api, "more", result["conversationId"], agent="tester")
    assert again["scenario"] == "continue" and again["conversationId"] == result["conversationId"]


async def test_sync_reports_a_provider_failure(api, fake_llm) -> None:
    fake_llm.script.error_status = 400
    fake_llm.script.error_message = "context too long"
    result = (await api.post("/api/v1/agents/tester/execute/sync", json={"task": "x"})).json()
    assert result["status"] == "failed"
    assert "context too long" in result["error"]
    items = await messages(api, result["conversationId"])
    assert items[-1]["status"] == "failed" and items[-1]["id"] == result["messageId"]


async def test_stop_keeps_the_partial_answer(api, fake_llm) -> None:
    slow(fake_llm)
    accepted = await start_run(api)
    partial = await wait_for_text(api, accepted["conversationId"])
    resp = await api.post(f"/api/v1/runs/{accepted['runId']}/stop")
    assert resp.status_code == 200
    run = resp.json()
    assert run["status"] == "stopped"
    assert run["content"].startswith(partial) and run["content"] != "".join(SLOW)
    answer = (await messages(api, accepted["conversationId"]))[-1]
    assert answer["status"] == "stopped" and answer["content"] == run["content"]
    again = await api.post(f"/api/v1/runs/{accepted['runId']}/stop")
    assert again.status_code == 200 and again.json() == run
    # the conversation is free again
    fake_llm.script.delay = 0
    assert (await say(api, "next", accepted["conversationId"], agent="tester"))["answer"]


async def test_stopped_stream_ends_with_done_and_the_status(api, fake_llm) -> None:
    slow(fake_llm)
    accepted = await start_run(api)
    await wait_for_text(api, accepted["conversationId"])
    await api.post(f"/api/v1/runs/{accepted['runId']}/stop")
    resp = await api.get(f"/api/v1/runs/{accepted['runId']}/stream", params={"format": "v1"})
    events = assert_sse_response(resp)
    answer = (await messages(api, accepted["conversationId"]))[-1]
    assert events[-1].json == {"done": True, "messageId": answer["id"], "status": "stopped"}
    assert stream_answer(events) == answer["content"]


@pytest.mark.parametrize("run_id", [MISSING_RUN, "run-x", "nope", "run-" + "0" * 40])
async def test_unknown_runs_are_404(api, run_id) -> None:
    for method, suffix in [("GET", ""), ("GET", "/stream"), ("POST", "/stop")]:
        resp = await api.request(method, f"/api/v1/runs/{run_id}{suffix}")
        assert error_of(resp, 404)["code"] == "not_found"


async def test_a_busy_conversation_is_409_with_the_running_run(api, fake_llm) -> None:
    slow(fake_llm)
    accepted = await start_run(api)
    conv = accepted["conversationId"]
    attempts = [
        api.post("/api/v1/agents/tester/execute", json={"task": "b", "conversationId": conv}),
        api.post("/api/v1/agents/tester/execute/sync", json={"task": "b", "conversationId": conv}),
        api.post(
            "/api/v1/agents/tester/execute/stream", params={"task": "b", "conversationId": conv}
        ),
        api.post("/api/agent/tester/chat", json={"message": "b", "conversationId": conv}),
    ]
    for attempt in attempts:
        error = error_of(await attempt, 409)
        assert error["code"] == "conversation_busy"
        assert error["runId"] == accepted["runId"]
    await api.post(f"/api/v1/runs/{accepted['runId']}/stop")
    assert next(m["content"] for m in await messages(api, conv)) == "go"
    assert len(await messages(api, conv)) == 2


EXECUTE_ROUTES = ["execute", "execute/sync", "execute/stream"]


@pytest.mark.parametrize("route", EXECUTE_ROUTES)
async def test_unknown_agent_is_404(api, route) -> None:
    resp = await api.post(f"/api/v1/agents/nobody/{route}", json={"task": "x"})
    assert error_of(resp, 404)["code"] == "not_found"
    assert (await api.get("/api/v1/conversations")).json()["items"] == []


@pytest.mark.parametrize("route", EXECUTE_ROUTES)
@pytest.mark.parametrize("conversation", [MISSING_UUID, "abc", "x" * 64])
async def test_unknown_conversation_is_404(api, route, conversation) -> None:
    for kwargs in (
        {"params": {"task": "x", "conversationId": conversation}},
        {"json": {"task": "x", "conversationId": conversation}},
    ):
        resp = await api.post(f"/api/v1/agents/demo/{route}", **kwargs)
        assert error_of(resp, 404)["code"] == "not_found"
    assert (await api.get("/api/v1/conversations")).json()["items"] == []


@pytest.mark.parametrize("route", EXECUTE_ROUTES)
async def test_another_agents_conversation_is_404(api, route) -> None:
    conv = await new_conversation(api, agent="tester")
    resp = await api.post(
        f"/api/v1/agents/demo/{route}", json={"task": "x", "conversationId": conv["uuid"]}
    )
    error_of(resp, 404)
    assert await messages(api, conv["uuid"]) == []


@pytest.mark.parametrize("route", EXECUTE_ROUTES)
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"json": {}},
        {"json": {"task": ""}},
        {"json": {"task": "   "}},
        {"params": {"task": ""}},
        {"json": {"task": "a\x00b"}},
        {"json": {"task": 5}},
        {"json": {"task": "x", "extra": 1}},
        {"json": ["task"]},
    ],
)
async def test_invalid_tasks_are_422(api, route, kwargs) -> None:
    resp = await api.post(f"/api/v1/agents/demo/{route}", **kwargs)
    assert error_of(resp, 422)["code"] == "invalid_input"
    assert (await api.get("/api/v1/conversations")).json()["items"] == []
