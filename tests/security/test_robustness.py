"""Robustness found on the way (issue #12): ids checked to their very end, Last-Event-ID
parsed strictly and bounded on both replay paths, idempotency claims that outlive a crash,
and a 413 shaped like every other error."""

from __future__ import annotations

import asyncio
import json

import pytest

from lumina_app.agents.registry import is_valid_agent_id
from lumina_app.api.errors import error_response
from lumina_app.composition import open_services
from tests.api.helpers import assert_sse_response, error_of
from tests.conftest import write_agent

# -- ids end where the id ends -----------------------------------------------------------


@pytest.mark.parametrize("agent_id", ["demo\n", "demo\r\n", "\ndemo", "de\nmo"])
def test_an_agent_id_with_a_newline_is_not_an_agent_id(agent_id) -> None:
    assert is_valid_agent_id("demo")
    assert not is_valid_agent_id(agent_id)


async def test_an_agent_folder_named_with_a_trailing_newline_is_not_served(
    api_factory, data_dir
) -> None:
    """``$`` also matches before a final newline: a folder ``demo\\n`` (say, unpacked from
    a tarball) was listed, served and given conversations under that id."""
    write_agent(data_dir / "agents", "demo\n", {"name": "Newline"})
    _services, api = await api_factory()
    assert [a["id"] for a in (await api.get("/api/agent/list")).json()] == ["demo", "tester"]
    error_of(await api.get("/api/agent/demo%0A/info"), 404)
    error_of(await api.get("/api/agent/demo%0A/conversations"), 404)
    resp = await api.post("/api/v1/conversations", json={"agentId": "demo\n"})
    error_of(resp, 404)
    resp = await api.post("/api/agent/demo%0A/chat", json={"message": "hi"})
    error_of(resp, 404)
    assert (await api.get("/api/v1/conversations")).json()["items"] == []


# -- Last-Event-ID: strict, bounded, prompt --------------------------------------------

BEYOND = [
    str(2**64 - 1),  # Redis's largest stream id: XREAD from it blocked until the key expired
    str(2**64),  # no longer a stream id: XREAD failed with a traceback mid-stream
    "9" * 20,  # the longest accepted
]
MALFORMED = ["1_0", "+3", "-1", "3.0", "0x10", "abc", "1 2", "9" * 21, "١٠"]


async def finished_run(api, agent: str = "tester") -> tuple[str, bytes]:
    resp = await api.post(f"/api/v1/agents/{agent}/execute/stream", params={"task": "hi"})
    events = assert_sse_response(resp)
    return events[0].json["runId"], resp.content


@pytest.mark.parametrize("value", MALFORMED)
async def test_a_malformed_last_event_id_is_422(api, value) -> None:
    run_id, _ = await finished_run(api)
    url = f"/api/v1/runs/{run_id}/stream"
    if value.isascii():
        error = error_of(await api.get(url, headers={"Last-Event-ID": value}), 422)
        assert "Last-Event-ID" in error["message"]
    error = error_of(await api.get(url, params={"lastEventId": value}), 422)
    assert "Last-Event-ID" in error["message"]


async def test_last_event_id_is_read_as_written(api) -> None:
    """``int()`` read ``1_0`` as 10; leading zeros are still plain digits."""
    run_id, whole = await finished_run(api)
    url = f"/api/v1/runs/{run_id}/stream"
    assert (await api.get(url, params={"format": "v1"}, headers={"Last-Event-ID": "0"})).content
    resumed = await api.get(url, params={"format": "v1"}, headers={"Last-Event-ID": "001"})
    assert resumed.status_code == 200 and resumed.content == whole.split(b"\n\n", 1)[1]
    for empty in ({"Last-Event-ID": ""}, {}):  # no id: the whole stream
        resp = await api.get(url, params={"format": "v1"}, headers=empty)
        assert resp.content == whole


@pytest.mark.parametrize("value", BEYOND)
async def test_last_event_id_beyond_a_finished_in_process_run_ends_at_once(api, value) -> None:
    run_id, _ = await finished_run(api)
    async with asyncio.timeout(5):
        resp = await api.get(f"/api/v1/runs/{run_id}/stream", headers={"Last-Event-ID": value})
    assert resp.status_code == 200 and resp.content == b""


@pytest.fixture
async def published(settings_factory, fake_llm):
    """A run that finished on another instance: here it is only in Redis Streams."""
    fake_llm.script.chunks = ["a", "b", "c"]
    one = await open_services(settings_factory())
    try:
        run = await one.chat.start(agent_id="tester", message="hello")
        seen = [e async for e in one.chat.follow(run)]
        await one.events.flush()
    finally:
        await one.close()
    return run.run_id, seen


@pytest.mark.parametrize("value", ["last", *BEYOND])
async def test_last_event_id_beyond_a_finished_run_read_from_redis_ends_at_once(
    api_factory, published, value
) -> None:
    """Also the last id itself: what an EventSource sends when it reconnects after the end."""
    run_id, seen = published
    services, api = await api_factory(run_buffer_ttl_seconds=300)
    assert not await services.events.local.known(run_id)  # read from Redis, not this process
    value = str(seen[-1].id) if value == "last" else value
    async with asyncio.timeout(5):  # not the buffer's TTL
        resp = await api.get(f"/api/v1/runs/{run_id}/stream", headers={"Last-Event-ID": value})
    assert resp.status_code == 200 and resp.content == b""
    resumed = await api.get(
        f"/api/v1/runs/{run_id}/stream", headers={"Last-Event-ID": str(seen[1].id)}
    )
    assert [e.id for e in assert_sse_response(resumed)] == [e.id for e in seen[2:]]


async def test_last_event_id_beyond_a_live_run_read_from_redis_ends_with_the_run(
    settings_factory, fake_llm
) -> None:
    """A live run's stream followed with an id it has not reached: nothing comes, and the
    stream ends as soon as the run does (not at the next block timeout, not at the TTL)."""
    fake_llm.script.chunks = [f"p{i} " for i in range(10)]
    fake_llm.script.delay = 0.05
    one = await open_services(settings_factory())
    two = await open_services(settings_factory(), recover=False)
    two.events.block_ms = 5000
    try:
        run = await one.chat.start(agent_id="tester", message="hello")
        await asyncio.sleep(0.1)
        await one.events.flush()
        stream = await two.chat.open_stream(run.run_id, after=2**64 + 5, owner="")
        follower = asyncio.ensure_future(anext(stream, "ended"))
        await run.done.wait()
        await one.events.flush()
        ended = asyncio.get_running_loop().time()
        async with asyncio.timeout(2):
            assert await follower == "ended"
        assert asyncio.get_running_loop().time() - ended < 1
    finally:
        await one.close()
        await two.close()


# -- one error shape, 413 included --------------------------------------------------------


async def chunks(data: bytes, size: int = 300):
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
async def test_a_413_is_rendered_like_every_other_error(api_factory, streamed) -> None:
    """The declared-length 413 was written by hand: ``{"error": {"code": ...}}`` with
    json.dumps's spaces and no content-length, unlike every other error."""
    _services, api = await api_factory(max_body_bytes=1024)
    body = json.dumps({"agentId": "demo", "title": "x" * 2000}).encode()
    too_large = await api.post(
        "/api/v1/conversations",
        content=chunks(body) if streamed else body,
        headers={"Content-Type": "application/json"},
    )
    error = error_of(too_large, 413)
    assert error == {"code": "too_large", "message": "request body exceeds 1024 bytes"}
    expected = error_response(413, "too_large", error["message"])
    assert too_large.content == expected.body  # compact JSON, as JSONResponse renders it
    assert too_large.headers["content-length"] == str(len(expected.body))
    if not streamed:  # refused before reading: the unread body cannot be drained
        assert too_large.headers["connection"] == "close"
    not_found = await api.get("/api/agent/nobody/info")
    invalid = await api.get("/api/v1/conversations", params={"limit": 0})
    for other, status in ((not_found, 404), (invalid, 422)):
        error_of(other, status)
        assert too_large.headers["content-type"] == other.headers["content-type"]
        assert other.content == error_response(status, **other.json()["error"]).body
    assert (await api.get("/api/v1/conversations")).json()["items"] == []
