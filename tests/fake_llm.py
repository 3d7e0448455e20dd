"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1.

It records every request body and streams a scripted answer; it can also fail with a
given status and message, or stream slowly (for stop and disconnect tests).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Script:
    chunks: list[str] = field(default_factory=lambda: ["Hello", " from", " the", " fake", " LLM."])
    delay: float = 0.0
    error_status: int | None = None
    error_message: str = "model overloaded"
    reasoning: list[str] = field(default_factory=list)


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script = Script()
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
                fake.requests.append(body)
                script = fake.script
                if script.error_status:
                    payload = json.dumps(
                        {"error": {"message": script.error_message, "type": "x"}}
                    ).encode()
                    self.send_response(script.error_status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for text in script.reasoning:
                        self._chunk({"reasoning_content": text})
                    for text in script.chunks:
                        if script.delay:
                            time.sleep(script.delay)
                        self._chunk({"content": text})
                    self._chunk({}, finish="stop")
                    usage = {
                        "prompt_tokens": 11,
                        "completion_tokens": len(script.chunks),
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

            def _send(self, data: dict) -> None:
                self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                self.wfile.flush()

        return Handler
