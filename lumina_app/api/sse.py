"""Server-sent events: framing, keepalive comments, a send timeout for clients that stop
reading, and clean-up when the client goes away. Both route families frame through here.

An open stream is the request's own task and nothing else: no pump task, no queue, no
watcher task. The subscription yields ``None`` when a keepalive is due (:class:`Heartbeat`),
the client hanging up cancels the task from a callback on ``receive()``, and the stream runs
after FastAPI's routing has unwound, so the route's frames are not kept for its lifetime.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from lumina_app.domain import EventType, RunEvent
from lumina_app.storage.run_events import HEARTBEAT, Heartbeat

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}
KEEPALIVE = b": keepalive\n\n"
# What Response.init_headers would build, built once; each response gets its own copy.
_RAW_HEADERS = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SSE_HEADERS.items()]
_RAW_HEADERS.append((b"content-type", b"text/event-stream; charset=utf-8"))


def frame(data: Any, *, event: str | None = None, event_id: int | None = None) -> bytes:
    """One SSE message; JSON is sent as UTF-8 text (``"你"``, not ``"\\u4f60"``)."""
    lines = []
    if event:
        lines.append(f"event: {event}")
    if event_id is not None:
        lines.append(f"id: {event_id}")
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    lines.extend(f"data: {line}" for line in payload.split("\n"))
    return ("\n".join(lines) + "\n\n").encode()


def v1_payload(event: RunEvent) -> dict[str, Any] | None:
    """Family A (Lumina v1): chunks, then done/error; thinking and tool calls are not sent."""
    data = event.data
    if event.type is EventType.SESSION:
        return {
            "conversationId": data["conversationId"],
            "runId": data["runId"],
            "scenario": data["scenario"],
        }
    if event.type is EventType.DELTA:
        return {"chunk": data["text"]}
    if event.type is EventType.ERROR:
        return {"error": data["message"], "messageId": data["messageId"]}
    if event.type is EventType.RESULT and data["status"] != "failed":
        done: dict[str, Any] = {"done": True, "messageId": data["messageId"]}
        if data["status"] != "complete":
            done["status"] = data["status"]
        return done
    return None


def v1_frames(event: RunEvent) -> bytes | None:
    """The v1 framing of one event; ``None`` for what v1 does not send."""
    payload = v1_payload(event)
    return None if payload is None else frame(payload, event_id=event.id)


def named_frames(event: RunEvent) -> bytes:
    """Family B: ``event: session | thinking | agent_output | tool_call | error | result``."""
    return frame(event.data, event=event.type.value, event_id=event.id)


Framer = Callable[[RunEvent], bytes | None]

# FastAPI's innermost middleware closes this exit stack once the route has returned (it is
# there for uploaded files). Streaming from it, not from inside the route, frees the routing
# frames, the Request and the route's own exit stacks for as long as the stream is open
# (a few KB per idle stream). Where there is no such stack, the stream runs in place.
_FASTAPI_STACK = "fastapi_middleware_astack"
_ROUTE_STACKS = ("fastapi_inner_astack", "fastapi_function_astack")


class EventStream(Response):
    """Streams a run's events as frames; a ``: keepalive`` comment when idle; drops a client
    that does not take a frame within ``send_timeout`` (the run itself is unaffected)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncIterator[RunEvent | None],
        framer: Framer,
        *,
        keepalive: float,
        send_timeout: float,
    ) -> None:
        # Not Response.__init__: it renders an empty body and so sends "content-length: 0",
        # which a real server (granian) obeys by ending the response before the first frame.
        self.status_code = 200
        self.background = None
        self.raw_headers = list(_RAW_HEADERS)
        self.events = events
        self.framer = framer
        self.keepalive = keepalive
        self.send_timeout = send_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.asgi = scope, receive, send
        stack = scope.get(_FASTAPI_STACK)
        if stack is None:
            await self._stream()
        else:
            stack.push_async_exit(self._stream)

    async def _stream(self, failed: type[BaseException] | None = None, *_: object) -> bool:
        """The response; as an exit callback (returns False: suppresses nothing) it streams
        only if the request has not failed on its way out."""
        scope, receive, send = self.asgi
        if failed is not None:
            await self.events.aclose()
            return False
        for key in _ROUTE_STACKS:  # closed by now; the scope would keep them for the stream
            scope.pop(key, None)
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        heartbeat = Heartbeat(self.keepalive)
        heartbeat.reset()
        token = HEARTBEAT.set(heartbeat)
        task = asyncio.current_task()
        assert task is not None
        hangup = _Hangup(receive, task)
        try:
            async for event in self.events:
                if not await self._send_event(send, event, heartbeat):
                    return False  # a client that stopped reading is dropped; the run goes on
            await self._send(send, b"", more=False)
        except asyncio.CancelledError:
            if hangup.heard and not task.uncancel():
                return False  # the client left: the subscription is closed below
            raise
        finally:
            hangup.stop()
            HEARTBEAT.reset(token)
            await self.events.aclose()
        return False

    async def _send_event(self, send: Send, event: RunEvent | None, heartbeat: Heartbeat) -> bool:
        # A frame of its own so that an idle stream does not hold on to its last frame.
        body = KEEPALIVE if event is None else self.framer(event)
        if body is None:
            return True  # not part of this family
        if not await self._send(send, body, more=True):
            return False
        heartbeat.reset()
        return True

    async def _send(self, send: Send, body: bytes, *, more: bool) -> bool:
        message: Message = {"type": "http.response.body", "body": body, "more_body": more}
        try:
            async with asyncio.timeout(self.send_timeout):
                await send(message)
        except OSError:  # TimeoutError: it stopped reading; else (ASGI 2.4) it is gone
            return False
        return True


class _Hangup:
    """Cancels the streaming task when the client goes away. Granian's ``receive()`` is a
    future, so this is one callback and no task; other servers get a small task for it."""

    __slots__ = ("heard", "receive", "task", "waiter")

    def __init__(self, receive: Receive, task: asyncio.Task) -> None:
        self.receive = receive
        self.task: asyncio.Task | None = task
        self.heard = False
        self._listen()

    def _listen(self) -> None:
        self.waiter = asyncio.ensure_future(self.receive())
        self.waiter.add_done_callback(self._received)

    def _received(self, waiter: asyncio.Future) -> None:
        if self.task is None or waiter.cancelled():
            return  # the stream ended first
        if waiter.exception() is None and waiter.result()["type"] != "http.disconnect":
            self._listen()  # a request body message nobody read: keep listening
            return
        self.heard = True
        self.task.cancel()

    def stop(self) -> None:
        self.task = None
        self.waiter.cancel()
