"""Connection floods and stream hoarding against a real server (``reflex run --backend-only``,
granian with Lumina's limits, docs/SECURITY.md):

- 1,100 idle sockets and 1,100 slow-header sockets at once: a new client still gets
  /healthz and an API answer at once; the header timeout then closes every one of them
  (dripping a header byte does not extend it), and an idle keep-alive connection too, while
  an SSE stream and the UI's websocket are not affected by it;
- requests that stay in the app (slow bodies here; streams, websockets) stop at
  LUMINA_MAX_CONNECTIONS - LUMINA_CONNECTION_RESERVE with a 503, and /healthz still answers;
- at most LUMINA_MAX_STREAMS_PER_OWNER open streams per owner, over all three stream routes:
  the next gets 429 + Retry-After and starts no run; a slot frees when a stream ends (client
  gone, run stopped); a failed stream request (409) holds none; another owner is unaffected.

Before these limits, 1,100 idle sockets kept /healthz from answering for as long as they
stayed open (over 60 s measured), and 1,100 slow-header sockets for ~30 s.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.api.helpers import bearer, parse_sse
from tests.faults.realserver import start_server
from tests.server import AppServer

pytestmark = pytest.mark.slow

SOCKETS = 1100
HEADER_TIMEOUT = 4.0
BOUND = 1.5
"""Seconds a new client may take while flooded. Unflooded, /healthz takes ~40-70 ms here;
1.5 s leaves room for a loaded 2-core machine, yet is well under HEADER_TIMEOUT (so the
answer cannot come from the server having dropped the flood first), and far under what it
took before the limits (~30 s, or no answer at all)."""


@pytest.fixture(scope="module")
def flooded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """Default connection cap; a short header timeout; a demo model at a word a second."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * SOCKETS + 256
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"needs {need} open files, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    server = start_server(
        tmp_path_factory.mktemp("floods"),
        LUMINA_HEADER_READ_TIMEOUT_SECONDS=str(HEADER_TIMEOUT),
        LUMINA_DEMO_DELAY_MS="1000",
        LUMINA_SSE_KEEPALIVE_SECONDS="0.5",
    )
    yield server
    server.stop()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def connect(server: AppServer, count: int, first: bytes = b"") -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        if first:
            sock.sendall(first)
        socks.append(sock)
    return socks


def closed_by_server(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


@contextlib.contextmanager
def dripping(socks: list[socket.socket], every: float) -> Iterator[None]:
    """Each socket sends one more header byte every ``every`` seconds."""
    stop = threading.Event()

    def drip() -> None:
        while not stop.wait(every):
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.send(b"x")

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def timed_get(url: str, **kwargs: object) -> tuple[float, httpx.Response]:
    """A GET on a fresh connection (a new client), and how long it took."""
    started = time.monotonic()
    response = httpx.get(url, timeout=30, **kwargs)  # type: ignore[arg-type]
    return time.monotonic() - started, response


def read_response(sock: socket.socket) -> bytes:
    """One HTTP/1.1 response with a Content-Length, leaving the connection open."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head


def test_idle_and_slow_header_floods_do_not_stop_a_new_client(flooded: AppServer) -> None:
    idle = connect(flooded, SOCKETS)
    slow = connect(flooded, SOCKETS, first=b"GET / HTTP/1.1\r\nHost: x\r\n")
    opened = time.monotonic()
    try:
        with dripping(slow, every=1.0):
            took = {}
            for path in ("/healthz", "/api/v1/conversations"):
                took[path], response = timed_get(flooded.url + path)
                assert response.status_code == 200, response.text
            still_open = sum(not closed_by_server(s) for s in idle + slow)
            print(
                f"flooded: {still_open} sockets open; "
                + ", ".join(f"{path} in {seconds * 1000:.0f} ms" for path, seconds in took.items())
            )
            assert still_open == 2 * SOCKETS  # served while the whole flood was there
            assert max(took.values()) < BOUND, took

            deadline = opened + HEADER_TIMEOUT + 3
            while not all(closed_by_server(s) for s in idle + slow):
                assert time.monotonic() < deadline, "the header timeout did not close them"
                time.sleep(0.1)
            print(f"all {2 * SOCKETS} closed by the server {time.monotonic() - opened:.1f} s in")
    finally:
        for sock in idle + slow:
            sock.close()


def test_an_idle_keep_alive_connection_is_closed_after_the_timeout(flooded: AppServer) -> None:
    with socket.create_connection(("127.0.0.1", flooded.port), timeout=HEADER_TIMEOUT + 3) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_response(s).startswith(b"HTTP/1.1 200")
        answered = time.monotonic()
        assert s.recv(1) == b""  # the server closed it
        idle = time.monotonic() - answered
    assert HEADER_TIMEOUT - 0.5 < idle < HEADER_TIMEOUT + 1.5, idle


def test_a_stream_outlives_the_header_timeout(flooded: AppServer) -> None:
    """The timeout is for reading a request head, not for a response still streaming."""
    seen: list[float] = []
    with (
        httpx.Client(base_url=flooded.url, timeout=30) as client,
        client.stream("POST", "/api/agent/assistant/chat", json={"message": "x /long"}) as resp,
    ):
        assert resp.status_code == 200
        started = time.monotonic()
        for _piece in resp.iter_raw():
            seen.append(time.monotonic() - started)
            if seen[-1] > HEADER_TIMEOUT + 1.5:
                break
    assert seen[-1] > HEADER_TIMEOUT + 1.5, seen  # still receiving frames after the timeout


def test_the_ui_websocket_still_upgrades(flooded: AppServer) -> None:
    """HTTP/1.1 only (no HTTP/2 sniffing) keeps websocket upgrades: Reflex's /_event."""
    with socket.create_connection(("127.0.0.1", flooded.port), timeout=5) as sock:
        sock.sendall(
            b"GET /_event/?EIO=4&transport=websocket HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
        assert sock.recv(65536).startswith(b"HTTP/1.1 101")


# -- caps inside the app -------------------------------------------------------------------

STREAMS_PER_OWNER = 3
CONNECTIONS, RESERVE = 48, 16
ALICE, BOB = bearer("ka"), bearer("kb")


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """Two owners; small caps; a demo model that never gets to its first word."""
    server = start_server(
        tmp_path_factory.mktemp("keyed"),
        LUMINA_API_KEYS="alice:ka,bob:kb",
        LUMINA_MAX_STREAMS_PER_OWNER=str(STREAMS_PER_OWNER),
        LUMINA_MAX_CONNECTIONS=str(CONNECTIONS),
        LUMINA_CONNECTION_RESERVE=str(RESERVE),
        LUMINA_DEMO_DELAY_MS="600000",
    )
    yield server
    server.stop()


EXECUTE_STREAM = "/api/v1/agents/assistant/execute/stream"
CHAT = "/api/agent/assistant/chat"


@dataclass
class OpenStream:
    response: httpx.Response
    pieces: Iterator[bytes]  # kept: dropping the iterator would close the connection
    session: dict


def open_stream(
    streams: contextlib.ExitStack, client: httpx.Client, method: str, url: str, **kwargs: object
) -> OpenStream:
    """A stream kept open (until ``streams`` closes), with its session event read."""
    response = streams.enter_context(client.stream(method, url, **kwargs))  # type: ignore[arg-type]
    assert response.status_code == 200, response.read()
    pieces = response.iter_raw()
    return OpenStream(response, pieces, parse_sse(next(pieces))[0].json)


def conversations(client: httpx.Client) -> int:
    return len(client.get("/api/v1/conversations", params={"limit": 100}).json()["items"])


def stream_request(
    streams: contextlib.ExitStack, client: httpx.Client, method: str, url: str, **kwargs: object
) -> httpx.Response:
    """A stream route's answer: a stream stays open (unread) until ``streams`` closes."""
    response = streams.enter_context(client.stream(method, url, **kwargs))  # type: ignore[arg-type]
    if response.status_code != 200:
        response.read()
    return response


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == "5"
    assert response.json()["error"]["code"] == "too_many_streams"


def test_streams_per_owner_are_capped_over_all_stream_routes(keyed: AppServer) -> None:
    with (
        httpx.Client(base_url=keyed.url, headers=ALICE, timeout=10) as alice,
        httpx.Client(base_url=keyed.url, headers=BOB, timeout=10) as bob,
        contextlib.ExitStack() as streams,
    ):
        first = open_stream(streams, alice, "POST", EXECUTE_STREAM, json={"task": "1"})
        # A stream request that fails (409: that conversation is busy) holds no slot.
        busy = {"task": "again", "conversationId": first.session["conversationId"]}
        for _ in range(STREAMS_PER_OWNER):
            assert alice.post(EXECUTE_STREAM, json=busy).status_code == 409
        second = open_stream(streams, alice, "POST", CHAT, json={"message": "2"})
        run = alice.post("/api/v1/agents/assistant/execute", json={"task": "3"}).json()["runId"]
        held = [open_stream(streams, alice, "GET", f"/api/v1/runs/{run}/stream")]

        before = conversations(alice)
        assert_refused(stream_request(streams, alice, "POST", EXECUTE_STREAM, json={"task": "4"}))
        assert_refused(stream_request(streams, alice, "POST", CHAT, json={"message": "4"}))
        assert_refused(stream_request(streams, alice, "GET", f"/api/v1/runs/{run}/stream"))
        assert conversations(alice) == before  # the refused ones started no run

        held.append(open_stream(streams, bob, "POST", EXECUTE_STREAM, json={"task": "bob's"}))

        first.response.close()  # the client goes: its slot frees once the server hears it
        assert_slot_frees(
            lambda: stream_request(streams, alice, "POST", EXECUTE_STREAM, json={"task": "5"})
        )

        # The run ends (stopped): its stream ends, and with it the slot.
        assert_refused(stream_request(streams, alice, "POST", CHAT, json={"message": "6"}))
        alice.post(f"/api/v1/runs/{second.session['runId']}/stop").raise_for_status()
        assert b"event: result" in b"".join(second.pieces)
        assert_slot_frees(
            lambda: stream_request(streams, alice, "POST", CHAT, json={"message": "7"})
        )


def assert_slot_frees(attempt: Callable[[], httpx.Response], within: float = 3) -> None:
    """The server hears a stream end at once; allow for the round trip."""
    deadline = time.monotonic() + within
    while (response := attempt()).status_code == 429:
        assert time.monotonic() < deadline, "the slot was not given back"
        time.sleep(0.1)
    assert response.status_code == 200, response.text


def slow_body(server: AppServer) -> socket.socket:
    """A POST whose body never comes: it stays inside the app."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(
        b"POST /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ka\r\n"
        b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
    )
    return sock


def test_the_app_keeps_a_reserve_for_health_checks(keyed: AppServer) -> None:
    held = [slow_body(keyed) for _ in range(CONNECTIONS - RESERVE)]
    try:
        deadline = time.monotonic() + 5
        while (
            refused := timed_get(keyed.url + "/api/v1/conversations", headers=BOB)[1]
        ).status_code != 503:
            assert time.monotonic() < deadline, refused.text
            time.sleep(0.1)
        assert refused.headers["retry-after"] == "1"
        assert refused.headers["connection"] == "close"
        assert refused.json()["error"]["code"] == "overloaded"
        took, health = timed_get(keyed.url + "/healthz")
        assert health.status_code == 200 and took < BOUND, (health.status_code, took)
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5
    while timed_get(keyed.url + "/api/v1/conversations", headers=BOB)[1].status_code != 200:
        assert time.monotonic() < deadline, "the cap was not given back"
        time.sleep(0.1)
