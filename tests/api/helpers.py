"""Small factories and an SSE reader shared by the API tests."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from lumina_app.api import create_api
from lumina_app.composition import Services

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ISO_MS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
MISSING_UUID = "00000000-0000-4000-8000-000000000000"
MISSING_RUN = "run-0000000000000000"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def client_for(services: Services, host: str, **kwargs: Any) -> httpx.AsyncClient:
    """Another client on the same services, calling from ``host``."""
    transport = httpx.ASGITransport(app=create_api(services.settings), client=(host, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://testserver", **kwargs)


def openai_sdk(client: httpx.AsyncClient, key: str) -> Any:
    """The real async ``openai`` SDK on the in-process app ``client`` calls, as ``key``."""
    import openai

    http = httpx.AsyncClient(transport=client._transport, base_url="http://testserver", timeout=30)
    return openai.AsyncOpenAI(
        base_url="http://testserver/v1", api_key=key, max_retries=0, http_client=http
    )


@contextmanager
def fake_model_server(
    workdir: Path, keys: str, fake_url: str, agents: dict[str, dict[str, Any]]
) -> Iterator[Any]:
    """A running backend (in-process hot window, ``keys``) with ``agents`` (id → config
    beside the provider block) on the stand-in model at ``fake_url``."""
    from tests.conftest import write_agent
    from tests.server import AppServer

    started = AppServer(
        workdir, backend_only=True, env={"LUMINA_REDIS_URL": "", "LUMINA_API_KEYS": keys}
    )
    started.prepare()
    model = {"provider": "openai", "base_url": fake_url, "model": "fake-1"}
    for agent_id, config in agents.items():
        write_agent(started.data_dir / "agents", agent_id, {**model, **config}, {})
    started.start()
    try:
        yield started
    finally:
        started.stop()


# -- SSE ---------------------------------------------------------------------------------


@dataclass
class Event:
    id: int | None
    event: str | None
    data: str
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.data)


def frames(body: bytes) -> list[bytes]:
    """The stream cut into messages, each with its ``\\n\\n``; comments included."""
    assert body.endswith(b"\n\n"), body[-80:]
    return [part + b"\n\n" for part in body[:-2].split(b"\n\n")]


def parse_sse(body: bytes) -> list[Event]:
    """Events in order; comment-only messages (keepalives) are left out."""
    events = []
    for raw in frames(body):
        fields: dict[str, list[str]] = {}
        for line in raw.decode("utf-8").rstrip("\n").split("\n"):
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields.setdefault(name, []).append(value)
        if not fields:
            continue
        event_id = fields.get("id", [None])[-1]
        events.append(
            Event(
                id=int(event_id) if event_id is not None else None,
                event=fields.get("event", [None])[-1],
                data="\n".join(fields.get("data", [])),
                raw=raw,
            )
        )
    return events


def assert_sse_response(resp: httpx.Response) -> list[Event]:
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["x-accel-buffering"] == "no"
    events = parse_sse(resp.content)
    ids = [e.id for e in events]
    assert None not in ids, "every event carries an id"
    assert ids == sorted(set(ids)), "ids increase"
    return events


def error_of(resp: httpx.Response, status: int) -> dict[str, Any]:
    """Assert an error response's status and JSON shape; return its ``error`` object."""
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    return error


# -- factories ---------------------------------------------------------------------------


async def new_conversation(
    api: httpx.AsyncClient, agent: str = "demo", title: str | None = "t", **kwargs: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"agentId": agent}
    if title is not None:
        body["title"] = title
    resp = await api.post("/api/v1/conversations", json=body, **kwargs)
    assert resp.status_code == 201, resp.text
    return resp.json()


async def say(
    api: httpx.AsyncClient,
    task: str,
    conversation: str | None = None,
    agent: str = "demo",
    **kwargs: Any,
) -> dict[str, Any]:
    """One finished turn through execute/sync."""
    body: dict[str, Any] = {"task": task}
    if conversation:
        body["conversationId"] = conversation
    resp = await api.post(f"/api/v1/agents/{agent}/execute/sync", json=body, **kwargs)
    assert resp.status_code == 200, resp.text
    return resp.json()


async def messages(api: httpx.AsyncClient, conversation: str, **kwargs: Any) -> list[dict]:
    resp = await api.get(
        f"/api/v1/conversations/{conversation}/messages", params={"limit": 100}, **kwargs
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


async def start_run(
    api: httpx.AsyncClient,
    task: str = "go",
    conversation: str | None = None,
    agent: str = "tester",
    **kwargs: Any,
) -> dict[str, Any]:
    """Start a run in the background (execute, 202)."""
    body: dict[str, Any] = {"task": task}
    if conversation:
        body["conversationId"] = conversation
    resp = await api.post(f"/api/v1/agents/{agent}/execute", json=body, **kwargs)
    assert resp.status_code == 202, resp.text
    return resp.json()


async def wait_run(
    api: httpx.AsyncClient, run_id: str, within: float = 10, **kwargs: Any
) -> dict[str, Any]:
    """Poll GET /runs/{id} until the run is no longer running."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        resp = await api.get(f"/api/v1/runs/{run_id}", **kwargs)
        assert resp.status_code == 200, resp.text
        if resp.json()["status"] != "running":
            return resp.json()
        assert asyncio.get_running_loop().time() < deadline, "run did not finish"
        await asyncio.sleep(0.02)


async def wait_for_text(
    api: httpx.AsyncClient, conversation: str, within: float = 10, **kwargs: Any
) -> str:
    """Wait until the streaming answer has some text flushed to the store."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        items = await messages(api, conversation, **kwargs)
        answer = items[-1]
        if answer["role"] == "ASSISTANT" and answer["content"]:
            return answer["content"]
        assert asyncio.get_running_loop().time() < deadline, "no text was flushed"
        await asyncio.sleep(0.02)


class LiveStream:
    """Drives the ASGI app directly so a test can read an SSE response while it is being
    produced and hang up mid-stream (httpx's ASGITransport buffers whole responses)."""

    def __init__(
        self,
        services: Services,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.app = create_api(services.settings)
        self.method, self.path = method, path
        self.body = json.dumps(json_body).encode() if json_body is not None else b""
        self.headers = headers or {}
        self.status: int | None = None
        self.received = b""
        self._changed = asyncio.Event()
        self._gone = asyncio.Event()
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> LiveStream:
        path, _, query = self.path.partition("?")
        headers = [(k.lower().encode(), v.encode()) for k, v in self.headers.items()]
        headers.append((b"host", b"testserver"))
        if self.body:
            headers.append((b"content-type", b"application/json"))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 40001),
            "server": ("testserver", 80),
        }
        sent_body = False

        async def receive() -> dict:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": self.body, "more_body": False}
            await self._gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                self.status = message["status"]
            elif message["type"] == "http.response.body":
                self.received += message.get("body", b"")
            self._changed.set()

        self.task = asyncio.create_task(self.app(scope, receive, send))
        return self

    def events(self) -> list[Event]:
        complete = self.received[: self.received.rfind(b"\n\n") + 2]
        return parse_sse(complete) if complete else []

    async def wait_events(self, count: int, within: float = 10) -> list[Event]:
        async with asyncio.timeout(within):
            while len(self.events()) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.events()

    async def hang_up(self) -> None:
        self._gone.set()
        assert self.task is not None
        async with asyncio.timeout(5):
            await self.task

    async def __aexit__(self, *exc: object) -> None:
        if self.task is not None and not self.task.done():
            await self.hang_up()


def count_whole_reads(monkeypatch: Any) -> list[int]:
    """The conversations recall reads whole from now on (``recall_rows.conversation_rows``),
    one entry per read: a turn's recall should read only what changed."""
    from lumina_app.storage.sql import recall_rows

    whole: list[int] = []
    read_whole = recall_rows.conversation_rows

    async def counted(*args: Any, **kwargs: Any) -> Any:
        whole.append(args[1])
        return await read_whole(*args, **kwargs)

    monkeypatch.setattr(recall_rows, "conversation_rows", counted)
    return whole
