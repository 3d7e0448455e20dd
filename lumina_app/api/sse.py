"""Server-sent events: framing, keepalive comments, a send timeout for clients that stop
reading, and clean-up when the client goes away. Both route families frame through here.

An open stream costs the request's own task and little else (issue #4, idle memory per
stream): no pump task, queue or watcher task, no timeout object per frame. The subscription
yields ``None`` when a keepalive is due (:class:`Heartbeat`); the client hanging up (a
callback on ``receive()``) or not taking a send (the heartbeat's timer) cancels the task;
and the stream runs once FastAPI's routing has unwound, so the route's frames, Request and
exit stacks are not kept for as long as the stream is open.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from lumina_app.domain import (
    AnswerChunk,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStatus,
    SessionStarted,
    ToolCallFinished,
    ToolCallRequested,
)
from lumina_app.domain.heartbeat import HEARTBEAT, Heartbeat
from lumina_app.observability import metrics
from lumina_app.platform import fastapi as fastapi_patch
from lumina_app.platform import starlette as starlette_patch

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}
KEEPALIVE = b": keepalive\n\n"
# What Response.init_headers would build, built once; each response gets its own copy.
_RAW_HEADERS = starlette_patch.raw_headers(SSE_HEADERS, "text/event-stream; charset=utf-8")


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
    """Family A (Lumina v1): chunks, ``toolCall``/``toolResult`` between them, then
    done/error; thinking is not sent. A client reading only chunk and done sees no change."""
    payload = event.payload
    if isinstance(payload, SessionStarted):
        return {
            "conversationId": payload.conversation_uuid,
            "runId": payload.run_id,
            "scenario": payload.scenario.value,
        }
    if isinstance(payload, AnswerChunk):
        return {"chunk": payload.text}
    if isinstance(payload, ToolCallRequested):
        return {"toolCall": payload.wire()}
    if isinstance(payload, ToolCallFinished):
        return {"toolResult": payload.wire()}
    if isinstance(payload, RunFailed):
        return {"error": payload.message, "messageId": payload.message_id}
    if isinstance(payload, RunFinished) and payload.status is not RunStatus.FAILED:
        done: dict[str, Any] = {"done": True, "messageId": payload.message_id}
        if payload.status is not RunStatus.COMPLETE:
            done["status"] = payload.status.value
        return done
    return None


def v1_frames(event: RunEvent) -> bytes | None:
    """The v1 framing of one event; ``None`` for what v1 does not send."""
    payload = event.payload
    if isinstance(payload, AnswerChunk):  # most frames: byte-identical to frame(), no dumps()
        text = encode_basestring(payload.text)
        return f'id: {event.id}\ndata: {{"chunk": {text}}}\n\n'.encode()
    body = v1_payload(event)
    return None if body is None else frame(body, event_id=event.id)


def named_frames(event: RunEvent) -> bytes:
    """Family B: ``event: session | thinking | agent_output | tool_call | tool_result | error
    | result``."""
    return frame(event.data, event=event.type.value, event_id=event.id)


Framer = Callable[[RunEvent], bytes | None]

# Where a response streams from, best first: StreamsAfterRouting, outside the API's
# middleware; FastAPI's innermost middleware's exit stack (there for uploaded files), closed
# once the route has returned; in place, inside the route. The further out, the fewer frames
# and objects of the request are kept while the stream is open: measured under granian, the
# exit stack saves ~5 KB per idle stream over in place, StreamsAfterRouting ~3 KB more.
# FastAPI's exit stacks are spent by the time it streams (lumina_app/platform/fastapi.py).
_AFTER_ROUTING = "lumina.stream_after_routing"


class StreamsAfterRouting:
    """ASGI middleware, the outermost of the API's own but the connection cap: an
    :class:`EventStream` a route returns streams from here, once exception handling,
    FastAPI's exit stack and routing have unwound."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _AFTER_ROUTING in scope:  # an outer one streams
            await self.app(scope, receive, send)
            return
        scope[_AFTER_ROUTING] = None
        try:
            await self.app(scope, receive, send)
        except BaseException:
            stream = scope.pop(_AFTER_ROUTING)
            if stream is not None:  # the request failed on its way out: it never streams
                await stream.discard()
            raise
        stream = scope.pop(_AFTER_ROUTING)
        if stream is not None:  # with this layer's send: no inner wrapper per frame
            await stream.run(scope, receive, send)


class EventStream(Response):
    """Streams a run's events as frames; a ``: keepalive`` comment when idle; drops a client
    that does not take a frame within ``send_timeout`` (the run itself is unaffected).
    ``on_close`` is called once when the stream is over, however it ends (or never starts)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: AsyncIterator[RunEvent | None],
        framer: Framer,
        *,
        keepalive: float,
        send_timeout: float,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        # Not Response.__init__: it would send "content-length: 0" (platform/starlette.py).
        starlette_patch.bare_init(self, _RAW_HEADERS)
        self.events = events
        self.framer = framer
        self.keepalive = keepalive
        self.send_timeout = send_timeout
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.asgi = scope, receive, send
        if _AFTER_ROUTING in scope:
            scope[_AFTER_ROUTING] = self
        elif not fastapi_patch.defer_to_exit_stack(scope, self._stream):
            await self._stream()

    async def run(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream through the given (outer) ``receive``/``send``."""
        self.asgi = scope, receive, send
        await self._stream()

    async def discard(self) -> None:
        """Close without streaming (the request failed after the route returned this)."""
        try:
            await self.events.aclose()
        finally:
            self._closed()

    def _closed(self) -> None:
        on_close, self.on_close = self.on_close, None
        if on_close is not None:
            on_close()

    async def _stream(self, failed: type[BaseException] | None = None, *_: object) -> bool:
        """The response; as an exit callback (returns False: suppresses nothing) it streams
        only if the request has not failed on its way out."""
        scope, receive, send = self.asgi
        if failed is not None:
            await self.discard()
            return False
        fastapi_patch.drop_spent_stacks(scope)  # else kept for as long as the stream is open
        task = asyncio.current_task()
        assert task is not None
        watch = _Watch(self.keepalive, self.send_timeout, receive, task)
        watch.reset()
        token = HEARTBEAT.set(watch)
        metrics.ACTIVE_STREAMS.inc()
        try:  # from the first send on: a client gone before the headers still closes it all
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            async for event in self.events:
                if not await self._send_event(send, event, watch):
                    return False  # the client went away (ASGI 2.4 servers say so on send)
            await self._send(send, b"", more=False, watch=watch)
        except asyncio.CancelledError:
            if watch.ended and not task.uncancel():
                return False  # it left or stopped reading: the subscription is closed below
            raise
        finally:
            metrics.ACTIVE_STREAMS.dec()
            watch.stop()
            HEARTBEAT.reset(token)
            try:
                await self.events.aclose()
            finally:
                self._closed()
        return False

    async def _send_event(self, send: Send, event: RunEvent | None, watch: _Watch) -> bool:
        # A frame of its own so that an idle stream does not hold on to its last frame.
        body = KEEPALIVE if event is None else self.framer(event)
        if body is None:
            return True  # not part of this family
        if not await self._send(send, body, more=True, watch=watch):
            return False
        watch.reset()
        return True

    @staticmethod
    async def _send(send: Send, body: bytes, *, more: bool, watch: _Watch) -> bool:
        watch.sending()
        try:
            await send({"type": "http.response.body", "body": body, "more_body": more})
        except OSError:
            return False
        watch.sent()
        return True


class _Watch(Heartbeat):
    """What ends a stream from outside its task, on the heartbeat's one timer (no task, no
    timeout object per frame): the client hanging up, heard through a done-callback on
    ``receive()`` (a plain future under granian; other servers get a small task for it),
    and a send the client does not take within ``send_timeout``. Either cancels the task."""

    __slots__ = ("ended", "receive", "send_timeout", "sending_since", "task", "waiter")

    def __init__(
        self, every: float, send_timeout: float, receive: Receive, task: asyncio.Task
    ) -> None:
        super().__init__(every)
        self.send_timeout = send_timeout
        self.sending_since: float | None = None
        self.receive = receive
        self.task: asyncio.Task | None = task
        self.ended = False
        self._listen()

    def sending(self) -> None:
        self.sending_since = now = self._loop.time()
        self._arm(now + self.send_timeout)

    def sent(self) -> None:
        self.sending_since = None

    def stop(self) -> None:
        super().stop()
        self.task = None
        # Granian's receive future keeps its callbacks once cancelled and is invisible to
        # the garbage collector, so the cycle watch -> waiter -> callback -> watch was
        # never freed: every stream left its watch, future and request protocol behind
        # for the life of the process (the soak's RSS slope, docs/PERFORMANCE.md).
        self.waiter.remove_done_callback(self._received)
        self.waiter.cancel()

    def _check(self) -> None:
        since = self.sending_since
        if since is not None and self._loop.time() - since >= self.send_timeout:
            self._timer = None
            self._end()  # it stopped reading; the run carries on
            return
        super()._check()
        if since is not None:
            self._arm(since + self.send_timeout)

    def _listen(self) -> None:
        self.waiter = asyncio.ensure_future(self.receive())
        self.waiter.add_done_callback(self._received)

    def _received(self, waiter: asyncio.Future) -> None:
        if self.task is None or waiter.cancelled():
            return  # the stream ended first
        if waiter.exception() is None and waiter.result()["type"] != "http.disconnect":
            self._listen()  # a request body message nobody read: keep listening
            return
        self._end()

    def _end(self) -> None:
        if self.task is not None:
            self.ended = True
            self.task.cancel()
