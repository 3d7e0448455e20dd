"""``Idempotency-Key``: a retry gets the first response and creates nothing; the same key
with another request is a 422; a failed first attempt lets a retry through."""

from __future__ import annotations

import asyncio

import pytest

from tests.api.helpers import assert_sse_response, error_of, messages, new_conversation
from tests.waits import wait_until


def key(value: str = "k-1") -> dict[str, str]:
    return {"Idempotency-Key": value}


async def conversation_ids(api) -> list[str]:
    return [c["uuid"] for c in (await api.get("/api/v1/conversations")).json()["items"]]


async def test_create_conversation_retry_returns_the_first(api) -> None:
    body = {"agentId": "demo", "title": "once"}
    first = await api.post("/api/v1/conversations", json=body, headers=key())
    again = await api.post("/api/v1/conversations", json=body, headers=key())
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert await conversation_ids(api) == [first.json()["uuid"]]
    other = await api.post("/api/v1/conversations", json=body, headers=key("k-2"))
    assert other.json()["uuid"] != first.json()["uuid"]


EXECUTIONS = [
    ("/api/v1/agents/demo/execute", 202, "task"),
    ("/api/v1/agents/demo/execute/sync", 200, "task"),
    ("/api/v1/agents/demo/execute/stream", 200, "task"),
    ("/api/agent/demo/chat", 200, "message"),
]


@pytest.mark.parametrize("route, status, field", EXECUTIONS)
@pytest.mark.parametrize("with_conversation", [False, True])
async def test_execution_retry_returns_the_first_response(
    api, route, status, field, with_conversation
) -> None:
    body = {field: "only once"}
    if with_conversation:
        body["conversationId"] = (await new_conversation(api))["uuid"]
    first = await api.post(route, json=body, headers=key())
    assert first.status_code == status, first.text
    if status == 202:  # let the run finish before the retry
        run_id = first.json()["runId"]
        await api.get(f"/api/v1/runs/{run_id}/stream")
    again = await api.post(route, json=body, headers=key())
    assert again.status_code == status
    if first.headers["content-type"].startswith("text/event-stream"):
        assert_sse_response(again)
    assert again.content == first.content
    convs = await conversation_ids(api)
    assert len(convs) == 1
    assert next(m["content"] for m in await messages(api, convs[0])) == "only once"
    assert len(await messages(api, convs[0])) == 2


@pytest.mark.parametrize("route, status, field", EXECUTIONS)
async def test_same_key_with_another_request_is_422(api, route, status, field) -> None:
    first = await api.post(route, json={field: "one"}, headers=key())
    assert first.status_code == status
    for other in (
        {field: "two"},
        {field: "one", "conversationId": (await conversation_ids(api))[0]},
    ):
        resp = await api.post(route, json=other, headers=key())
        assert "Idempotency-Key" in error_of(resp, 422)["message"]
    assert len(await conversation_ids(api)) == 1


async def test_a_key_is_bound_to_its_route(api) -> None:
    await api.post("/api/v1/agents/demo/execute/sync", json={"task": "x"}, headers=key())
    resp = await api.post("/api/v1/agents/demo/execute", json={"task": "x"}, headers=key())
    error_of(resp, 422)
    resp = await api.post("/api/v1/conversations", json={"agentId": "demo"}, headers=key())
    error_of(resp, 422)


async def test_a_failed_first_attempt_lets_the_retry_through(api) -> None:
    resp = await api.post("/api/v1/conversations", json={"agentId": "nobody"}, headers=key())
    error_of(resp, 404)
    resp = await api.post(
        "/api/v1/agents/demo/execute/sync",
        json={"task": "x", "conversationId": "00000000-0000-4000-8000-000000000000"},
        headers=key("k-2"),
    )
    error_of(resp, 404)
    ok = await api.post("/api/v1/conversations", json={"agentId": "demo"}, headers=key())
    assert ok.status_code == 201
    ok = await api.post(
        "/api/v1/agents/demo/execute/sync",
        json={"task": "x", "conversationId": ok.json()["uuid"]},
        headers=key("k-2"),
    )
    assert ok.status_code == 200


async def test_an_overlong_key_is_422(api) -> None:
    resp = await api.post("/api/v1/conversations", json={"agentId": "demo"}, headers=key("k" * 256))
    error_of(resp, 422)
    assert await conversation_ids(api) == []


async def test_a_retry_while_the_first_is_still_running_is_409(api, fake_llm) -> None:
    fake_llm.script.chunks = [f"w{i} " for i in range(40)]
    fake_llm.script.delay = 0.03
    body = {"task": "slow"}
    first = asyncio.ensure_future(
        api.post("/api/v1/agents/tester/execute/sync", json=body, headers=key())
    )
    await wait_until(lambda: conversation_ids(api), "the first request to commit its question")
    resp = await api.post("/api/v1/agents/tester/execute/sync", json=body, headers=key())
    assert error_of(resp, 409)["code"] == "in_progress"
    done = await first
    assert done.status_code == 200 and done.json()["answer"] == "".join(fake_llm.script.chunks)
    again = await api.post("/api/v1/agents/tester/execute/sync", json=body, headers=key())
    assert again.json() == done.json()


@pytest.mark.parametrize(
    "route, body",
    [
        ("/api/v1/agents/demo/execute/stream", {"task": "hello"}),
        ("/api/agent/demo/chat", {"message": "hello"}),
    ],
)
async def test_a_retried_stream_with_last_event_id_resumes(api, route, body) -> None:
    first = await api.post(route, json=body, headers=key())
    events = assert_sse_response(first)
    cut = events[2].id
    again = await api.post(route, json=body, headers={**key(), "Last-Event-ID": str(cut)})
    resumed = assert_sse_response(again)
    assert [e.raw for e in resumed] == [e.raw for e in events if e.id > cut]
    assert len(await conversation_ids(api)) == 1
    # without an Idempotency-Key it is a new request: Last-Event-ID does not apply
    fresh = await api.post(route, json=body, headers={"Last-Event-ID": str(cut)})
    assert assert_sse_response(fresh)[0].id == 1
    assert len(await conversation_ids(api)) == 2
