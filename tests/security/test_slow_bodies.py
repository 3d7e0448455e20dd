"""Slow request bodies against a real server (``reflex run --backend-only``, granian, one
worker; docs/SECURITY.md, issue 24):

- a body dripping a byte now and then gets 408 (JSON, ``Connection: close``) at
  LUMINA_BODY_READ_TIMEOUT_SECONDS, however often it drips, and its slot is given back;
  a body that is slow but whole in time is answered as usual, and so is a stream that
  lasts longer than the deadline;
- one address holds at most LUMINA_MAX_REQUESTS_PER_ADDRESS open requests: the next from
  it gets 429, another address is served;
- /healthz says ``degraded`` while the app is nearly at its connection cap (>= 90 %).

Before, headers plus ``Content-Length: 1000`` and a byte every 2 s held a request for as
long as the client liked: 1,050 of them on the sign-in route made every other request 503
while /healthz said ``ok``.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.faults.realserver import start_server
from tests.server import AppServer

pytestmark = pytest.mark.slow

BODY_TIMEOUT = 4.0
MARGIN = 1.5
PER_ADDRESS = 6
CONNECTIONS, RESERVE = 48, 16  # the app's cap: 32 requests, so degraded from 29 (90 %)
NEARLY_FULL = 29


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = start_server(
        tmp_path_factory.mktemp("slow-bodies"),
        LUMINA_BODY_READ_TIMEOUT_SECONDS=str(BODY_TIMEOUT),
        LUMINA_MAX_REQUESTS_PER_ADDRESS=str(PER_ADDRESS),
        LUMINA_MAX_CONNECTIONS=str(CONNECTIONS),
        LUMINA_CONNECTION_RESERVE=str(RESERVE),
    )
    yield server
    server.stop()


def slow_body(server: AppServer, path: str = "/api/v1/auth/login", *, source: str = "127.0.0.1"):
    """A POST announcing 1,000 bytes of which only the first arrives, from ``source`` (any
    127.0.0.0/8 address reaches the server's 127.0.0.1 and is seen as itself)."""
    sock = socket.create_connection(
        ("127.0.0.1", server.port), timeout=5, source_address=(source, 0)
    )
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n{".encode()
    )
    return sock


def client_from(server: AppServer, source: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=source)
    return httpx.Client(base_url=server.url, transport=transport, timeout=10)


def read_until_closed(
    sock: socket.socket, *, drip_every: float, within: float
) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, sending one more body
    byte every ``drip_every`` s meanwhile; and when the response began (s from now)."""
    sock.settimeout(drip_every)
    started = time.monotonic()
    data, answered = b"", None
    while time.monotonic() - started < within:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            with contextlib.suppress(OSError):
                sock.send(b" ")
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        answered = answered or time.monotonic() - started
        data += chunk
    else:
        pytest.fail(f"the connection was still open after {within} s: {data!r}")
    assert answered is not None, "closed without an answer"
    return data, answered


def parse(response: bytes) -> tuple[str, dict[str, str], dict]:
    head, _, body = response.partition(b"\r\n\r\n")
    status, *lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return status, headers, json.loads(body)


def wait_for(attempt, done, within: float, what: str):
    deadline = time.monotonic() + within
    while not done(result := attempt()):
        assert time.monotonic() < deadline, f"{what}: still {result}"
        time.sleep(0.05)
    return result


def test_a_slow_body_gets_408_at_the_deadline_however_often_it_drips(server: AppServer) -> None:
    login = slow_body(server)
    gateway = slow_body(server, "/v1/chat/completions")
    try:
        data, answered = read_until_closed(login, drip_every=0.5, within=BODY_TIMEOUT + 5)
        status, headers, body = parse(data)
        assert status == "HTTP/1.1 408 Request Timeout", data
        assert headers["connection"] == "close"
        assert body["error"]["code"] == "request_timeout"
        assert f"not received within {BODY_TIMEOUT:g} s" in body["error"]["message"]
        assert BODY_TIMEOUT - 0.5 < answered < BODY_TIMEOUT + MARGIN, answered

        data, _ = read_until_closed(gateway, drip_every=0.5, within=MARGIN)
        status, headers, body = parse(data)
        assert status.startswith("HTTP/1.1 408") and headers["connection"] == "close"
        assert body["error"]["code"] == "request_timeout"  # in OpenAI's shape there
        assert body["error"]["type"] == "invalid_request_error"
    finally:
        login.close()
        gateway.close()


def test_a_slow_body_that_is_whole_in_time_is_answered(server: AppServer) -> None:
    payload = b'{"apiKey": "not-a-key"}'
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(payload)
        )
        for piece in (payload[:8], payload[8:16], payload[16:]):
            time.sleep(0.3)  # the point: a body that drips in, whole before the deadline
            sock.sendall(piece)
        data, _ = read_until_closed(sock, drip_every=5, within=5)
    status, _headers, body = parse(data)
    assert status != "HTTP/1.1 408 Request Timeout" and status.split()[1] < "500", data
    assert body["error"]["code"] != "request_timeout"


def test_a_stream_outlives_the_body_deadline(server: AppServer) -> None:
    """The deadline is for the body: an answer still streaming after it goes on."""
    with (
        httpx.Client(base_url=server.url, timeout=30) as client,
        client.stream("POST", "/api/agent/assistant/chat", json={"message": "x /long"}) as resp,
    ):
        assert resp.status_code == 200
        started = time.monotonic()
        for _piece in resp.iter_raw():
            if time.monotonic() - started > BODY_TIMEOUT + 1:
                break
        else:
            pytest.fail("the stream ended before the body deadline had passed")


def test_one_address_cannot_hold_more_than_its_share(server: AppServer) -> None:
    held = [slow_body(server, source="127.0.0.2") for _ in range(PER_ADDRESS)]
    opened = time.monotonic()
    try:
        with client_from(server, "127.0.0.2") as same, client_from(server, "127.0.0.1") as other:
            refused = wait_for(
                lambda: same.get("/api/v1/conversations"),
                lambda r: r.status_code == 429,
                within=BODY_TIMEOUT / 2,
                what="the address's next request",
            )
            assert refused.headers["retry-after"] == "1"
            assert refused.headers["connection"] == "close"
            assert refused.json()["error"] == {
                "code": "too_many_requests",
                "message": f"too many open requests from this address (at most {PER_ADDRESS})",
            }
            assert other.get("/api/v1/conversations").status_code == 200
            assert time.monotonic() - opened < BODY_TIMEOUT  # all while the six were held

            # The deadline gives the slots back with nothing done by the client.
            for sock in held:
                data, _ = read_until_closed(sock, drip_every=5, within=BODY_TIMEOUT + MARGIN)
                assert data.startswith(b"HTTP/1.1 408"), data
            assert same.get("/api/v1/conversations").status_code == 200
    finally:
        for sock in held:
            sock.close()


def health(server: AppServer) -> tuple[int, str, str, str]:
    resp = httpx.get(server.url + "/healthz", timeout=5)
    body = resp.json()
    return resp.status_code, body["status"], body["database"], body["hotWindow"]


def test_healthz_says_degraded_near_the_connection_cap(server: AppServer) -> None:
    assert health(server) == (200, "ok", "ok", "ok")
    sources = [f"127.0.0.{3 + i // PER_ADDRESS}" for i in range(NEARLY_FULL)]
    held = [slow_body(server, source=source) for source in sources]
    try:
        degraded = wait_for(
            lambda: health(server),
            lambda h: h[1] == "degraded",
            within=BODY_TIMEOUT / 2,
            what="/healthz with 29 of 32 requests in",
        )
        assert degraded == (200, "degraded", "ok", "ok")  # still answered: not down
        held.pop().close()  # 28 of 32: under 90 %
        wait_for(lambda: health(server), lambda h: h[1] == "ok", BODY_TIMEOUT / 2, "/healthz")
    finally:
        for sock in held:
            sock.close()
