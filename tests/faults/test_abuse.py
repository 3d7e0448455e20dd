"""Hostile input against a real server (``reflex run --backend-only``, granian): huge bodies,
NUL bytes, invalid UTF-8, lone surrogates, huge arrays, deep nesting, 1 MB tasks.

Every request gets a fast (< 1 s) 4xx — a JSON ``{"error": …}`` whenever the app answers —
never a 5xx. After a first round (which allocates what a first error of each kind does),
three more leave the server's memory where it was (RSS growth < 5 MB: a server that
buffered the 10 MB bodies would grow by tens of MB), and /healthz says ok throughout.

Two requests never reach the app: granian refuses a request line with a raw NUL byte (400)
and a 1 MB query string (431) itself, with an empty body; they are checked for status and
speed only.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.faults.realserver import MB, settled_rss, start_server
from tests.server import AppServer

TEN_MB = 10 * MB
JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    started = start_server(tmp_path_factory.mktemp("abuse"), LUMINA_DEMO_DELAY_MS="0")
    yield started
    started.stop()


@dataclass
class Reply:
    status: int
    content_type: str
    body: bytes


def http(method: str, path: str, **kwargs) -> Callable[[httpx.Client], Reply]:
    """An httpx request; a callable ``content`` is called for a fresh body each time."""

    def send(client: httpx.Client) -> Reply:
        content = kwargs.get("content")
        fresh = {"content": content()} if callable(content) else {}
        resp = client.request(method, path, **{**kwargs, **fresh})
        return Reply(resp.status_code, resp.headers.get("content-type", ""), resp.content)

    return send


def raw(request_line: bytes, body: bytes = b"") -> Callable[[httpx.Client], Reply]:
    """A request httpx will not send (a raw NUL byte, a 1 MB URL), on a socket."""

    def send(client: httpx.Client) -> Reply:
        port = httpx.URL(str(client.base_url)).port
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            head = request_line + b"\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        head, _, content = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        found = re.search(rb"(?im)^content-type: *(.+?)\r?$", head)
        return Reply(status, found.group(1).decode() if found else "", content)

    return send


def ten_mb_chunks() -> Iterator[bytes]:
    yield b'{"task": "'
    for _ in range(TEN_MB // 65536):
        yield b"x" * 65536
    yield b'"}'


SYNC = "/api/v1/agents/assistant/execute/sync"
CHAT = "/api/agent/assistant/chat"
TEN_MB_BODY = b'{"task": "' + b"x" * TEN_MB + b'"}'
COMPACT_ARRAY = json.dumps([1] * 100_000, separators=(",", ":")).encode()  # 200 KB: parsed
SPACED_ARRAY = json.dumps([1] * 100_000).encode()  # 300 KB: over the 256 KB body limit
DEEP = b"[" * 100_000 + b"]" * 100_000
ONE_MB = "x" * MB

# (name, request, expected status, answered by the app with a JSON error (False: by granian))
CASES: list[tuple[str, Callable[[httpx.Client], Reply], int, bool]] = [
    (
        "10 MB body, Content-Length",
        http("POST", SYNC, content=TEN_MB_BODY, headers=JSON),
        413,
        True,
    ),
    ("10 MB body, chunked", http("POST", SYNC, content=ten_mb_chunks, headers=JSON), 413, True),
    ("NUL in JSON task", http("POST", SYNC, json={"task": "a\x00b"}), 422, True),
    ("NUL in JSON message", http("POST", CHAT, json={"message": "a\x00b"}), 422, True),
    (
        "NUL in JSON title",
        http("POST", "/api/v1/conversations", json={"agentId": "assistant", "title": "\x00"}),
        422,
        True,
    ),
    (
        "NUL in JSON agentId",
        http("POST", "/api/v1/conversations", json={"agentId": "a\x00"}),
        404,
        True,
    ),
    (
        "raw NUL byte inside a JSON string",
        http("POST", SYNC, content=b'{"task": "a\x00b"}', headers=JSON),
        422,
        True,
    ),
    ("NUL in query task", http("POST", SYNC, params={"task": "a\x00b"}), 422, True),
    (
        "NUL in query agentId",
        http("GET", "/api/v1/conversations", params={"agentId": "\x00"}),
        422,
        True,
    ),
    (
        "NUL in query q",
        http("GET", "/api/agent/assistant/conversations", params={"q": "\x00"}),
        422,
        True,
    ),
    (
        "NUL in query conversationId",
        http("POST", SYNC, params={"task": "x", "conversationId": "\x00"}),
        404,
        True,
    ),
    ("NUL in path", http("GET", "/api/v1/conversations/%00/messages"), 404, True),
    (
        "raw NUL byte in the request line",
        raw(b"GET /api/v1/conversations?q=a\x00b HTTP/1.1"),
        400,
        False,
    ),
    (
        "invalid UTF-8 body",
        http("POST", SYNC, content=b'{"task": "\xff\xfe\xc3("}', headers=JSON),
        422,
        True,
    ),
    (
        "invalid UTF-8 message",
        http("POST", CHAT, content=b'{"message": "\xc3\x28"}', headers=JSON),
        422,
        True,
    ),
    (
        "lone surrogate in task",
        http("POST", SYNC, content=b'{"task": "\\ud800"}', headers=JSON),
        422,
        True,
    ),
    (
        "lone surrogate in message",
        http("POST", CHAT, content=b'{"message": "\\udfff"}', headers=JSON),
        422,
        True,
    ),
    (
        "100,000-element array (200 KB)",
        http("POST", SYNC, content=COMPACT_ARRAY, headers=JSON),
        422,
        True,
    ),
    (
        "100,000-element array (300 KB)",
        http("POST", CHAT, content=SPACED_ARRAY, headers=JSON),
        413,
        True,
    ),
    (
        "100,000 levels of nesting",
        http("POST", "/api/v1/conversations", content=DEEP, headers=JSON),
        422,
        True,
    ),
    ("1 MB task in the body", http("POST", SYNC, json={"task": ONE_MB}), 413, True),
    ("1 MB message in the body", http("POST", CHAT, json={"message": ONE_MB}), 413, True),
    ("40 KB task in the query", http("POST", SYNC, params={"task": ONE_MB[:40_000]}), 413, True),
    ("1 MB task in the query", raw(f"POST {SYNC}?task={ONE_MB} HTTP/1.1".encode()), 431, False),
    ("unknown path under /api", http("GET", "/api/v1/nothing-here"), 404, True),
    ("unsupported method", http("PUT", "/api/v1/conversations/x"), 405, True),
]


@pytest.mark.slow
def test_hostile_input_gets_fast_4xx_and_costs_no_memory(server) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for path in (SYNC, "/api/v1/conversations"):
            client.post(path, json={"task": "warm"} if path == SYNC else {"agentId": "assistant"})
        timings: dict[str, list[float]] = {}
        dropped: list[str] = []  # requests whose kept-alive connection was gone
        before = 0
        for round_ in range(4):
            if round_ == 1:  # the first round warms what a first error allocates once
                before = settled_rss(server)
            for name, send, status, from_app in CASES:
                started = time.monotonic()
                try:
                    reply = send(client)
                except httpx.RemoteProtocolError:
                    # Once in a CI run the server's end of a kept-alive connection was gone
                    # when the next case was sent on it. A case that breaks the server
                    # breaks it in every round: one such drop is tolerated, not two.
                    dropped.append(name)
                    reply = send(client)
                took = time.monotonic() - started
                timings.setdefault(name, []).append(took)
                assert reply.status == status, (name, reply.status, reply.body[:200])
                assert took < 5.0, f"{name}: {took:.2f}s"  # never waits for a timeout
                if from_app:
                    assert reply.content_type.startswith("application/json"), name
                    error = json.loads(reply.body)["error"]
                    assert error["code"] and error["message"], name
            health = client.get("/healthz")
            assert health.status_code == 200 and health.json()["status"] == "ok"
        assert len(dropped) <= 1, f"connections dropped before {dropped}:\n{server.tail()}"
        grown = settled_rss(server) - before
        nothing = client.get("/api/v1/conversations", params={"agentId": "assistant"}).json()
        assert len(nothing["items"]) == 2, "no abusive request created a conversation"
    # Fast in most rounds: one stall of a loaded two-core machine (a plain 404 once took
    # 1.99 s in CI) is not the server's; a slow path is slow in every round.
    typical = {name: sorted(took)[2] for name, took in timings.items()}  # 3 of 4 under it
    slowest = max(typical, key=typical.__getitem__)
    print(
        f"abuse: {len(CASES)} cases x 4 rounds, slowest {slowest!r} {typical[slowest] * 1000:.0f}"
        f" ms (the second slowest of 4), RSS {grown / MB:+.1f} MB, dropped {dropped}"
    )
    assert typical[slowest] < 1.0, f"{slowest}: {typical[slowest]:.2f}s in 3 of 4 rounds"
    assert grown < 5 * MB, f"RSS grew {grown / MB:.1f} MB"


@pytest.mark.slow
def test_unknown_paths_and_methods_are_json_errors_on_the_real_server(server) -> None:
    """Reflex mounts its own app at "" behind the API's routes: what the API does not serve
    must still be the API's JSON 404/405, not Reflex's plain-text 404."""
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for method, path, allowed in [
            ("OPTIONS", "/api/v1/conversations", "GET, POST"),
            ("PUT", "/api/v1/conversations/x", "GET, PATCH, DELETE"),
            ("DELETE", "/api/agent/list", "GET"),
            ("POST", "/healthz", "GET"),
        ]:
            resp = client.request(method, path)
            assert resp.status_code == 405, (method, path, resp.text)
            assert resp.headers["allow"] == allowed
            assert resp.json()["error"]["code"] == "method_not_allowed"
        resp = client.get("/api/agent/demo/nothing")
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
        assert client.get("/ping").status_code == 200  # Reflex's own routes still answer


# -- the same edges in-process, on the backend strictest about text ------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
async def api_on(request: pytest.FixtureRequest, _databases, api_factory):
    database = _databases(request.param)
    database.truncate()
    _services, client = await api_factory(database_url=database.url)
    return client


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (SYNC.replace("assistant", "demo"), b'{"task": "a \\ud800 b"}'),
        ("/api/agent/demo/chat", b'{"message": "\\udc00"}'),
        (SYNC.replace("assistant", "demo"), b'{"task": "\xff\xfe\xc3("}'),
        ("/api/agent/demo/chat", b'{"message": "\xc3\x28"}'),
        ("/api/v1/conversations", DEEP),
    ],
    ids=["surrogate-task", "surrogate-message", "bad-utf8-task", "bad-utf8-message", "deep"],
)
async def test_text_no_database_can_store_is_422_not_500(api_on, path, body) -> None:
    resp = await api_on.post(path, content=body, headers=JSON)
    assert resp.status_code == 422, resp.text
    assert resp.json()["error"]["code"] == "invalid_input"
    assert (await api_on.get("/api/v1/conversations")).json()["items"] == []


async def test_unknown_paths_and_methods_in_process(api) -> None:
    resp = await api.request("OPTIONS", "/api/v1/conversations/x")
    assert resp.status_code == 405 and resp.headers["allow"] == "GET, PATCH, DELETE"
    assert (await api.get("/api/nothing")).json()["error"]["code"] == "not_found"
