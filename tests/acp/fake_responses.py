"""A stand-in model server on 127.0.0.1 speaking the OpenAI Responses API (streamed), for
a real third-party ACP agent (codex-acp) in tests: it records every request and answers
with how many user messages it was sent and the first of them."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of each user message in a Responses request's ``input``."""
    texts = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                texts.append(content)
            else:
                texts.append("".join(p.get("text", "") for p in content or []))
    return texts


# What an agent adds as user messages of its own (its environment, AGENTS.md).
_AGENT_CONTEXT = ("<environment_context", "<user_instructions", "# AGENTS.md")


def person_texts(body: dict[str, Any]) -> list[str]:
    """The user messages that came from the person (through Lumina), not the agent."""
    return [t for t in user_texts(body) if not t.lstrip().startswith(_AGENT_CONTEXT)]


class FakeResponses:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeResponses:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: dict[str, Any]) -> str:
        users = person_texts(body)
        first = users[0] if users else ""
        return f"I was sent {len(users)} user messages; the first ended: {first[-40:]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return

            def do_GET(self) -> None:  # /models and the like: nothing to list
                body = json.dumps({"object": "list", "data": [], "models": []}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append({"path": self.path, **body})
                if not self.path.rstrip("/").endswith("/responses"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                text = fake.answer(body)
                rid, mid = f"resp_{len(fake.requests)}", f"msg_{len(fake.requests)}"
                item = {
                    "type": "message",
                    "id": mid,
                    "role": "assistant",
                    "status": "in_progress",
                    "content": [],
                }
                self._event("response.created", {"response": {"id": rid, "status": "in_progress"}})
                self._event("response.output_item.added", {"output_index": 0, "item": item})
                for word in text.split(" "):
                    self._event(
                        "response.output_text.delta",
                        {
                            "item_id": mid,
                            "output_index": 0,
                            "content_index": 0,
                            "delta": word + " ",
                        },
                    )
                done = {
                    **item,
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
                self._event("response.output_item.done", {"output_index": 0, "item": done})
                self._event(
                    "response.completed",
                    {
                        "response": {
                            "id": rid,
                            "status": "completed",
                            "output": [done],
                            "usage": {
                                "input_tokens": 10,
                                "output_tokens": len(text.split()),
                                "total_tokens": 10 + len(text.split()),
                                "input_tokens_details": {"cached_tokens": 0},
                                "output_tokens_details": {"reasoning_tokens": 0},
                            },
                        }
                    },
                )
                self.close_connection = True

            def _event(self, kind: str, data: dict[str, Any]) -> None:
                payload = json.dumps({"type": kind, **data})
                self.wfile.write(f"event: {kind}\ndata: {payload}\n\n".encode())
                self.wfile.flush()

        return Handler
