"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1.

It records every request body and streams a scripted answer; it can also fail with a
given status and message, or stream slowly (for stop and disconnect tests). Scripted
``replies`` (one per request, then the default answer) may call tools, streamed the way
the OpenAI API does: id and name in a call's first delta, its arguments split over
several deltas, several calls (different indexes) interleaved, ``finish_reason``
``tool_calls``. ``respond`` computes a reply from the request (a summarizer stand-in);
requests ``hold`` matches wait until ``release`` is set (a summary still being written).

A new conversation's title request (marked with Lumina's ``X-Lumina-Purpose: title``
header) is answered apart: recorded in ``title_requests``, not ``requests``, and answered
from ``Script.titles`` (then ``Script.title``, by default an empty reply: no proposal), so
it never consumes a scripted reply and ``requests`` holds the model turns only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lumina_app.agents.definitions.titling import PURPOSE, PURPOSE_HEADER


@dataclass
class Call:
    """A tool call the fake model makes."""

    id: str
    name: str
    arguments: str = "{}"


@dataclass
class Reply:
    """One scripted answer: text chunks and/or tool calls."""

    chunks: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    error_status: int | None = None  # fail this request with the script's error message


@dataclass
class Script:
    chunks: list[str] = field(default_factory=lambda: ["Hello", " from", " the", " fake", " LLM."])
    delay: float = 0.0
    error_status: int | None = None
    error_message: str = "model overloaded"
    reasoning: list[str] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)  # consumed one per request
    always: Reply | None = None  # answered to every request once ``replies`` ran out
    respond: Callable[[dict], Reply | None] | None = None  # a reply made from the request
    hold: Callable[[dict], bool] | None = None  # such requests wait for ``FakeLLM.release``
    titles: list[str | int] = field(default_factory=list)  # title replies (an int: that error)
    title: str = ""  # the title reply once ``titles`` ran out (empty: the model proposes none)
    title_delay: float = 0.0  # before a title reply (a model slower than the timeout)


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.embedding_requests: list[dict] = []  # POST /v1/embeddings bodies
        self.title_requests: list[dict] = []  # title proposals (not model turns)
        self.script = Script()
        self.release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/embeddings"):
                    fake.embedding_requests.append(body)
                    self._send_json({"data": [
                        {"index": i, "embedding": fake_embedding(text)}
                        for i, text in enumerate(body["input"])
                    ]})  # fmt: skip
                    return
                if self.headers.get(PURPOSE_HEADER) == PURPOSE:
                    self._title(body)
                    return
                fake.requests.append(body)
                script = fake.script
                if script.hold is not None and script.hold(body):
                    fake.release.wait(30)
                reply = script.respond(body) if script.respond is not None else None
                if reply is None:
                    reply = script.replies.pop(0) if script.replies else script.always
                status = reply.error_status if reply is not None else None
                if status or script.error_status:
                    payload = json.dumps(
                        {"error": {"message": script.error_message, "type": "x"}}
                    ).encode()
                    self.send_response(status or script.error_status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                chunks = script.chunks if reply is None else reply.chunks
                calls = [] if reply is None else reply.calls
                if reply is not None and reply is script.always:  # fresh ids every time
                    n = len(fake.requests)
                    calls = [Call(f"{c.id}_{n}", c.name, c.arguments) for c in calls]
                try:
                    for text in script.reasoning:
                        self._chunk({"reasoning_content": text})
                    for text in chunks:
                        if script.delay:
                            time.sleep(script.delay)
                        self._chunk({"content": text})
                    for delta in _call_deltas(calls):
                        self._chunk({"tool_calls": [delta]})
                    self._chunk({}, finish="tool_calls" if calls else "stop")
                    usage = {
                        "prompt_tokens": 11,
                        "completion_tokens": len(chunks),
                        "total_tokens": 0,
                    }
                    self._send(
                        {
                            "id": "x",
                            "object": "chat.completion.chunk",
                            "created": 0,
                            "model": body.get("model"),
                            "choices": [],
                            "usage": usage,
                        }
                    )
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _title(self, body: dict) -> None:
                fake.title_requests.append(body)
                script = fake.script
                reply = script.titles.pop(0) if script.titles else script.title
                time.sleep(script.title_delay)
                if isinstance(reply, int):
                    error = {"error": {"message": script.error_message, "type": "x"}}
                    self._send_json(error, status=reply)
                    return
                message = {"role": "assistant", "content": reply}
                self._send_json({
                    "id": "t", "object": "chat.completion", "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                })  # fmt: skip

            def _chunk(self, delta: dict, finish: str | None = None) -> None:
                self._send(
                    {
                        "id": "x",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": "fake",
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    }
                )

            def _send_json(self, data: dict, status: int = 200) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send(self, data: dict) -> None:
                self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                self.wfile.flush()

        return Handler


def fake_embedding(text: str, dims: int = 16) -> list[float]:
    """A bag of words hashed into ``dims`` buckets: texts sharing words point alike."""
    vector = [0.0] * dims
    for word in text.lower().split():
        vector[sum(map(ord, word.strip(".,?!"))) % dims] += 1.0
    return vector


def _call_deltas(calls: list[Call]) -> list[dict]:
    """Tool-call deltas as OpenAI streams them: each call's id, type and name first (with
    empty arguments), then its arguments in pieces, the calls' pieces interleaved."""
    deltas = [
        {
            "index": i,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        for i, call in enumerate(calls)
    ]
    pieces = [[c.arguments[j : j + 7] for j in range(0, len(c.arguments), 7)] for c in calls]
    for round_ in range(max((len(p) for p in pieces), default=0)):
        deltas.extend(
            {"index": i, "function": {"arguments": p[round_]}}
            for i, p in enumerate(pieces)
            if round_ < len(p)
        )
    return deltas
