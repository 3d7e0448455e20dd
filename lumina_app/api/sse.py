"""Server-sent events: framing, keepalive comments, a send timeout for clients that stop
reading, and clean-up when the client goes away. Both route families frame through here."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from lumina_app.domain import EventType, RunEvent

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}
KEEPALIVE = b": keepalive\n\n"


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


def v1_frames(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        async for event in events:
            payload = v1_payload(event)
            if payload is not None:
                yield frame(payload, event_id=event.id)

    return _closing(gen(), events)


def named_frames(events: AsyncIterator[RunEvent]) -> AsyncIterator[bytes]:
    """Family B: ``event: session | thinking | agent_output | tool_call | error | result``."""

    async def gen() -> AsyncIterator[bytes]:
        async for event in events:
            yield frame(event.data, event=event.type.value, event_id=event.id)

    return _closing(gen(), events)


async def _closing(
    frames: AsyncIterator[bytes], source: AsyncIterator[RunEvent]
) -> AsyncIterator[bytes]:
    """Close the event source with the frames, so its clean-up runs when the client leaves."""
    try:
        async for chunk in frames:
            yield chunk
    finally:
        await source.aclose()


async def _wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class EventStream(Response):
    """Streams frames; a ``: keepalive`` comment when idle; drops a client that does not
    take a frame within ``send_timeout`` (the run itself is unaffected)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        frames: AsyncIterator[bytes],
        *,
        keepalive: float,
        send_timeout: float,
    ) -> None:
        # Not Response.__init__: it renders an empty body and so sends "content-length: 0",
        # which a real server (granian) obeys by ending the response before the first frame.
        self.status_code = 200
        self.background = None
        self.init_headers(SSE_HEADERS)
        self.frames = frames
        self.keepalive = keepalive
        self.send_timeout = send_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        # One pump task reads the frames; per frame there is only a queue hand-off (no task
        # per frame). A bounded queue is the back-pressure on a slow client.
        queue: asyncio.Queue = asyncio.Queue(maxsize=256)
        pump = asyncio.create_task(self._pump(queue))
        disconnected = asyncio.create_task(_wait_disconnect(receive))
        disconnected.add_done_callback(lambda _: _interrupt(pump, queue))
        finished = False
        try:
            while True:
                try:
                    async with asyncio.timeout(self.keepalive):
                        chunk = await queue.get()
                except TimeoutError:
                    chunk = KEEPALIVE
                if chunk is _GONE:
                    return
                if chunk is _END:
                    finished = True
                    break
                async with asyncio.timeout(self.send_timeout):
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except TimeoutError:
            return  # a client that stopped reading is dropped; the run carries on
        finally:
            disconnected.cancel()
            pump.cancel()
            await asyncio.wait([pump])  # let the generator unwind before closing it
            await self.frames.aclose()
            if finished:
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pump(self, queue: asyncio.Queue) -> None:
        async for chunk in self.frames:
            await queue.put(chunk)
        await queue.put(_END)


_END = object()
_GONE = object()


def _interrupt(pump: asyncio.Task, queue: asyncio.Queue) -> None:
    """The client went away: stop reading frames and wake the sender."""
    pump.cancel()
    while True:
        try:
            queue.put_nowait(_GONE)
            return
        except asyncio.QueueFull:
            queue.get_nowait()
