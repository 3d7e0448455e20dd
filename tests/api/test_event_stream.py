"""EventStream driven by direct ASGI calls: what reaches the wire, and that the
subscription is closed however the stream ends (done, hang-up, a client that stops
reading, a gone client under ASGI 2.4, a request failing on its way out)."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest

from lumina_app.api.sse import KEEPALIVE, EventStream, named_frames, v1_frames
from lumina_app.domain import EventType, RunEvent
from lumina_app.storage.run_events import LocalRunEventLog

SESSION = RunEvent(1, EventType.SESSION, {"conversationId": "c", "runId": "r", "scenario": "new"})


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
    await asyncio.sleep(0.12)
    await log.publish("run-1", RunEvent(2, EventType.THINKING, {"text": "hmm"}))  # not v1
    await log.publish("run-1", RunEvent(3, EventType.DELTA, {"text": "你好"}))
    await log.publish(
        "run-1", RunEvent(4, EventType.RESULT, {"status": "complete", "messageId": 7})
    )
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
    await asyncio.sleep(0.05)
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
    await asyncio.sleep(0.02)
    client.stalled = True
    stalled = asyncio.get_running_loop().time()
    await log.publish("run-1", RunEvent(2, EventType.DELTA, {"text": "x"}))
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
    await log.publish("run-1", RunEvent(2, EventType.RESULT, {"status": "complete"}))
    await log.finish("run-1")
    async with AsyncExitStack() as stack:
        scope["fastapi_middleware_astack"] = stack
        response = EventStream(sub.events, named_frames, keepalive=30, send_timeout=30)
        await response(scope, **asgi(client))
    assert client.body == named_frames(SESSION) + named_frames(
        RunEvent(2, EventType.RESULT, {"status": "complete"})
    )
    assert "fastapi_inner_astack" not in scope  # not kept for the stream's lifetime
    assert sub.closed


def asgi(client: Client) -> dict:
    return {"receive": client.receive, "send": client.send}
