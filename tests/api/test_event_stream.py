"""EventStream driven by direct ASGI calls: what reaches the wire, and that the
subscription is closed however the stream ends (done, hang-up, a client that stops
reading, a gone client under ASGI 2.4, a request failing on its way out)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import httpx
import pytest
from fastapi import FastAPI, Request

from lumina_app.api import create_api
from lumina_app.api.sse import (
    KEEPALIVE,
    EventStream,
    StreamsAfterRouting,
    named_frames,
    v1_frames,
)
from lumina_app.composition import install, open_services
from lumina_app.storage.local.run_events import LocalRunEventLog
from tests.api.helpers import assert_sse_response
from tests.events import chunk, result, session, thinking
from tests.waits import wait_until

SESSION = session(1)


class Client:
    """receive/send of one request; ``gone`` makes receive() report the hang-up."""

    def __init__(self, *, send_error: type[Exception] | None = None) -> None:
        self.sent: list[dict] = []
        self.gone = asyncio.Event()
        self.stalled = False
        self.send_error = send_error
        self._asked = False

    async def receive(self) -> dict:
        if not self._asked:
            self._asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        if self.stalled:
            await asyncio.Event().wait()  # a client that stopped reading: never returns
        if self.send_error and message["type"] == "http.response.body":
            raise self.send_error("connection closed")
        self.sent.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])


class Subscription:
    """A log subscription that records being closed."""

    def __init__(self, log: LocalRunEventLog, run_id: str) -> None:
        self.closed = False
        self.events = self._follow(log, run_id)

    async def _follow(self, log: LocalRunEventLog, run_id: str):
        try:
            async for event in log.subscribe(run_id):
                yield event
        finally:
            self.closed = True


async def open_run(log: LocalRunEventLog) -> Subscription:
    await log.publish("run-1", SESSION)
    return Subscription(log, "run-1")


def stream(sub: Subscription, *, keepalive: float = 30, send_timeout: float = 30) -> EventStream:
    return EventStream(sub.events, v1_frames, keepalive=keepalive, send_timeout=send_timeout)


async def test_frames_keepalives_and_the_end_reach_the_client() -> None:
    log = LocalRunEventLog(retention=60)
    sub, client = await open_run(log), Client()
    task = asyncio.create_task(stream(sub, keepalive=0.05)(scope={}, **asgi(client)))
    first = v1_frames(SESSION) + KEEPALIVE
    await wait_until(lambda: client.body.startswith(first), "the session frame and a keepalive")
    await log.publish("run-1", thinking(2, "hmm"))  # not v1
    await log.publish("run-1", chunk(3, "你好"))
    await log.publish("run-1", result(4))
    await log.finish("run-1")
    await asyncio.wait_for(task, 2)

    start = client.sent[0]
    headers = dict(start["headers"])
    assert start["status"] == 200 and b"content-length" not in headers
    assert headers[b"cache-control"] == b"no-cache" and headers[b"x-accel-buffering"] == b"no"
    assert headers[b"content-type"] == b"text/event-stream; charset=utf-8"
    assert client.body.startswith(v1_frames(SESSION) + KEEPALIVE)
    assert client.body.endswith(
        'id: 3\ndata: {"chunk": "你好"}\n\nid: 4\ndata: {"done": true, "messageId": 7}\n\n'.encode()
    )
    assert client.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert sub.closed


async def test_a_hang_up_while_quiet_ends_the_stream_at_once() -> None:
    log = LocalRunEventLog(retention=60)
    sub, client = await open_run(log), Client()
    task = asyncio.create_task(stream(sub, keepalive=30)(scope={}, **asgi(client)))
    await wait_until(lambda: client.body == v1_frames(SESSION), "the session frame")
    client.gone.set()
    await asyncio.wait_for(task, 1)  # not at the next keepalive, 30 s away
    assert sub.closed and client.body == v1_frames(SESSION)
    assert not task.cancelled() and task.cancelling() == 0


@pytest.mark.parametrize("keepalive", [30, 0.03])  # the keepalive comes due meanwhile, or not
async def test_a_client_that_stops_reading_is_dropped_after_the_send_timeout(keepalive) -> None:
    log = LocalRunEventLog(retention=60)
    sub, client = await open_run(log), Client()
    response = stream(sub, keepalive=keepalive, send_timeout=0.15)
    task = asyncio.create_task(response(scope={}, **asgi(client)))
    await wait_until(lambda: client.body.startswith(v1_frames(SESSION)), "the session frame")
    client.stalled = True
    stalled = asyncio.get_running_loop().time()
    await log.publish("run-1", chunk(2, "x"))
    await asyncio.wait_for(task, 1)
    assert asyncio.get_running_loop().time() - stalled >= 0.15
    assert sub.closed and not task.cancelled()
    assert (await anext(log.subscribe("run-1", after=1))).id == 2  # the run is untouched


async def test_a_send_to_a_gone_client_ends_the_stream_quietly() -> None:
    """ASGI 2.4 servers raise OSError from send() once the client is gone."""
    log = LocalRunEventLog(retention=60)
    sub, client = await open_run(log), Client(send_error=OSError)
    await asyncio.wait_for(stream(sub)(scope={}, **asgi(client)), 1)
    assert sub.closed and [m["type"] for m in client.sent] == ["http.response.start"]


async def test_streams_after_the_route_unwinds_and_not_if_the_request_fails() -> None:
    """Inside FastAPI the response runs from its middleware exit stack; a request that
    fails on its way out sends nothing and still closes the subscription."""
    log = LocalRunEventLog(retention=60)
    sub, client = await open_run(log), Client()
    with pytest.raises(RuntimeError):
        async with AsyncExitStack() as stack:
            await stream(sub)({"fastapi_middleware_astack": stack}, **asgi(client))
            assert client.sent == []  # deferred until the stack closes
            raise RuntimeError("a failure after the route returned")
    assert client.sent == []
    with pytest.raises(StopAsyncIteration):  # closed before it ever started
        await anext(sub.events)

    sub, client = Subscription(log, "run-1"), Client()
    scope = {"fastapi_inner_astack": AsyncExitStack()}
    await log.publish("run-1", result(2))
    await log.finish("run-1")
    async with AsyncExitStack() as stack:
        scope["fastapi_middleware_astack"] = stack
        response = EventStream(sub.events, named_frames, keepalive=30, send_timeout=30)
        await response(scope, **asgi(client))
    assert client.body == named_frames(SESSION) + named_frames(result(2))
    assert "fastapi_inner_astack" not in scope  # not kept for the stream's lifetime
    assert sub.closed


async def test_fastapi_still_has_the_exit_stack_streams_run_from() -> None:
    """Without it streams still work, only in place (~5 KB more per idle stream): a FastAPI
    upgrade that renames the scope key must fail here, not quietly in bench/api.py."""
    app = FastAPI()

    @app.get("/keys")
    async def keys(request: Request) -> list[str]:
        return sorted(k for k in request.scope if k.startswith("fastapi_"))

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        seen = (await client.get("/keys")).json()
    assert {"fastapi_middleware_astack", "fastapi_inner_astack"} <= set(seen)


async def test_behind_streams_after_routing_it_streams_once_the_app_has_returned() -> None:
    log = LocalRunEventLog(retention=60)
    sub, client = await open_run(log), Client()
    done = result(2)
    await log.publish("run-1", done)
    await log.finish("run-1")
    order: list[str] = []

    async def api(scope, receive, send) -> None:  # a route's response, then the way out
        scope["fastapi_middleware_astack"] = AsyncExitStack()
        await stream(sub)(scope, receive, send)
        order.append(f"api returned, {len(client.sent)} messages sent")

    scope = {"type": "http"}
    await StreamsAfterRouting(api)(scope, **asgi(client))
    assert order == ["api returned, 0 messages sent"]
    assert client.body == v1_frames(SESSION) + v1_frames(done)
    assert sub.closed and set(scope) == {"type"}  # nothing of the request's is kept


async def test_the_api_behind_streams_after_routing_streams_and_resumes(
    settings_factory, fake_llm
) -> None:
    fake_llm.script.chunks = ["你", "好"]
    settings = settings_factory()
    services = await open_services(settings)
    install(services)
    app = create_api(settings)
    app.add_middleware(StreamsAfterRouting)
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50123))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as api:
            first = await api.post("/api/v1/agents/tester/execute/stream", params={"task": "x"})
            events = assert_sse_response(first)
            assert [e.json.get("chunk") for e in events[1:3]] == ["你", "好"]
            assert events[-1].json["done"] is True and "content-length" not in first.headers
            url = f"/api/v1/runs/{events[0].json['runId']}/stream"
            again = await api.get(url, params={"format": "v1"}, headers={"Last-Event-ID": "1"})
            assert again.content == first.content.split(b"\n\n", 1)[1]
    finally:
        install(None)
        await services.close()


def asgi(client: Client) -> dict:
    return {"receive": client.receive, "send": client.send}
