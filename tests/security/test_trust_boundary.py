"""The doors, tried from outside on real servers: a foreign Host, other origins (CORS
preflights, simple cross-site POSTs, the UI socket's handshake), a raw Socket.IO client
without a session, sign-in sessions, a same-host proxy with loopback trust off, and the
start-up refusals."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.sidebar import SidebarState
from tests.faults.realserver import start_server
from tests.security.socketio import HandshakeRefused, RawSocket, text_of
from tests.server import AppServer
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.slow

EVIL = "http://evil.example"
KEYS = "alice:key-alice-0123456789,bob:key-bob-0123456789"
ALICE = {"Authorization": "Bearer key-alice-0123456789"}


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = start_server(tmp_path_factory.mktemp("open"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    server = start_server(tmp_path_factory.mktemp("keyed"), LUMINA_API_KEYS=KEYS)
    yield server
    server.stop()


def conversations(server: AppServer, headers: dict | None = None) -> list[dict]:
    resp = httpx.get(f"{server.url}/api/v1/conversations", headers=headers or {})
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


# -- Host ---------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example", "evil.example:3000", "127.0.0.1.nip.io"])
def test_a_foreign_host_gets_nothing(open_server: AppServer, host: str) -> None:
    """DNS rebinding: a page on another name pointed at this machine."""
    for path in ("/api/agent/list", "/api/v1/conversations", "/"):
        resp = httpx.get(open_server.url + path, headers={"Host": host})
        assert resp.status_code == 403, (path, resp.status_code)
        assert "not served here" in resp.json()["error"]["message"]
    assert upgrade_status(open_server, host=host) != 101  # nor the UI's socket


def upgrade_status(server: AppServer, *, host: str, origin: str | None = None) -> int:
    """The status line's code for a websocket upgrade of the UI socket, raw."""
    request = (
        "GET /_event/?EIO=4&transport=websocket&token=t HTTP/1.1\r\n"
        f"Host: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        + (f"Origin: {origin}\r\n" if origin else "")
        + "\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(request.encode())
        head = sock.recv(4096).decode("latin-1")
    return int(head.split(" ", 2)[1])


# -- Origin and cross-site requests -------------------------------------------------------


def test_a_cors_preflight_from_another_origin_is_refused(open_server: AppServer) -> None:
    resp = httpx.options(
        f"{open_server.url}/api/v1/conversations",
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert resp.status_code >= 400
    assert "access-control-allow-origin" not in resp.headers  # the browser stops here


def test_another_origin_can_neither_read_nor_write(open_server: AppServer) -> None:
    foreign = {"Origin": EVIL}
    read = httpx.get(f"{open_server.url}/api/v1/conversations", headers=foreign)
    assert read.status_code == 403 and "access-control-allow-origin" not in read.headers
    for post in (
        # what a form or a no-cors fetch on another site sends: no preflight
        {"params": {"task": "csrf"}},
        {"data": {"task": "csrf"}},
        {"content": b"task=csrf", "headers": {"Content-Type": "text/plain"}},
        {"json": {"task": "csrf"}},  # not sendable cross-site without a preflight anyway
    ):
        headers = {**foreign, **post.pop("headers", {})}
        resp = httpx.post(
            f"{open_server.url}/api/v1/agents/assistant/execute", headers=headers, **post
        )
        assert resp.status_code == 403, resp.text
    assert conversations(open_server) == []


def test_a_browser_post_without_json_is_refused_even_from_the_same_origin(
    open_server: AppServer,
) -> None:
    own = {"Origin": open_server.url, "Sec-Fetch-Site": "same-origin"}
    url = f"{open_server.url}/api/v1/agents/assistant/execute"
    refused = httpx.post(url, params={"task": "x"}, headers=own)
    assert refused.status_code == 403
    assert "JSON body" in refused.json()["error"]["message"]
    assert httpx.post(url, json={"task": "x"}, headers=own).status_code == 202
    with_header = httpx.post(url, params={"task": "y"}, headers={**own, "X-Requested-With": "x"})
    assert with_header.status_code == 202
    # A script (no browser headers at all) keeps the seed's query-string form.
    assert httpx.post(url, params={"task": "z"}).status_code == 202
    assert len(conversations(open_server)) == 3


def test_responses_are_not_sniffed_or_framed(open_server: AppServer) -> None:
    for path in ("/api/agent/list", "/"):
        resp = httpx.get(open_server.url + path)
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert resp.headers["x-frame-options"] == "DENY"


def test_the_ui_socket_refuses_another_origin(open_server: AppServer) -> None:
    with pytest.raises(HandshakeRefused):
        RawSocket(open_server.url, origin=EVIL)
    RawSocket(open_server.url, origin=open_server.url).close()  # its own origin is fine


# -- the UI socket without a session ------------------------------------------------------


def event(state: type, handler: str) -> str:
    return f"{state.get_full_name()}.{handler}"


def test_a_socket_without_a_session_runs_no_event(keyed_server: AppServer) -> None:
    """Keys configured: a loopback socket with a stolen conversation id and no session
    gets no data, starts nothing, and is sent to /login."""
    secret = "the launch codes are 0000"
    made = httpx.post(
        f"{keyed_server.url}/api/v1/agents/assistant/execute/sync",
        json={"task": secret},
        headers=ALICE,
    ).json()
    conv = made["conversationId"]
    sock = RawSocket(keyed_server.url, origin=keyed_server.url)
    try:
        path = f"/chat/assistant/{conv}"
        sock.emit("reflex___state____state.hydrate", path=path)
        sock.emit(event(ChatState, "load"), path=path)
        sock.emit(event(SidebarState, "refresh"), path=path)
        sock.emit(event(SidebarState, "set_search"), {"value": "launch"}, path=path)
        sock.emit(event(ChatState, "send"), {"form": {"message": "exfiltrate"}}, path=path)
        sock.emit(event(SidebarState, "confirm_delete"), path=path)
        updates = sock.updates(3.0)
    finally:
        sock.close()
    sent = text_of(updates)
    assert secret not in sent  # neither the title (the first message) nor the messages
    assert '"messages_rx_state_": [{' not in sent  # no message list, no conversation list
    assert '"conversations_rx_state_": [{' not in sent
    assert "/login" in sent  # told where to go
    assert len(conversations(keyed_server, ALICE)) == 1  # nothing sent, nothing deleted
    listed = httpx.get(
        f"{keyed_server.url}/api/v1/conversations/{conv}/messages", headers=ALICE
    ).json()["items"]
    assert next(m["content"] for m in listed) == secret and len(listed) == 2


def test_a_signed_in_socket_acts_as_its_owner_only(keyed_server: AppServer) -> None:
    bob_conv = httpx.post(
        f"{keyed_server.url}/api/v1/conversations",
        json={"agentId": "assistant", "title": "bob's diary"},
        headers={"Authorization": "Bearer key-bob-0123456789"},
    ).json()["uuid"]
    login = httpx.post(
        f"{keyed_server.url}/api/v1/auth/login",
        json={"apiKey": "key-alice-0123456789"},
        headers={"Origin": keyed_server.url},
    )
    assert login.status_code == 200, login.text
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    token = cookie.split(";")[0]
    sock = RawSocket(keyed_server.url, origin=keyed_server.url, cookie=token)
    try:
        path = f"/chat/assistant/{bob_conv}"
        sock.emit("reflex___state____state.hydrate", path=path)
        sock.emit(event(ChatState, "load"), path=path)
        updates = text_of(sock.updates(3.0))
    finally:
        sock.close()
    assert "bob's diary" not in updates
    assert "does not exist" in updates  # bob's conversation is simply not found for alice
    assert "alice" in updates  # signed in as alice
    assert "/login" not in updates

    logout = httpx.post(
        f"{keyed_server.url}/api/v1/auth/logout",
        headers={"Cookie": token, "Origin": keyed_server.url, "X-Requested-With": "x"},
    )
    assert logout.status_code == 204
    after = httpx.get(f"{keyed_server.url}/api/v1/me", headers={"Cookie": token})
    assert after.status_code == 401  # ended on the server, not just in the browser


def test_sign_in_failures_are_rate_limited(keyed_server: AppServer) -> None:
    url = f"{keyed_server.url}/api/v1/auth/login"
    statuses = [httpx.post(url, json={"apiKey": f"guess-{i}"}).status_code for i in range(12)]
    assert statuses[:10] == [401] * 10 and statuses[10:] == [429, 429]
    limited = httpx.post(url, json={"apiKey": "key-alice-0123456789"})
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1


def test_with_keys_loopback_is_not_enough(keyed_server: AppServer) -> None:
    resp = httpx.get(f"{keyed_server.url}/api/agent/list")
    assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
    page = httpx.get(f"{keyed_server.url}/api/v1/me", headers={"Cookie": "lumina_session=x"})
    assert page.status_code == 401


# -- a proxy in front, and refusals at start-up -------------------------------------------


def test_behind_a_local_proxy_loopback_trust_off_leaks_no_owner(tmp_path: Path) -> None:
    server = start_server(tmp_path, LUMINA_API_KEYS=KEYS, LUMINA_TRUST_LOOPBACK="false")
    proxy = TcpProxy("127.0.0.1", server.port)
    proxy.start()
    try:
        through = f"http://127.0.0.1:{proxy.port}"
        headers = {"Host": f"127.0.0.1:{server.port}", "X-Forwarded-For": "127.0.0.1"}
        assert httpx.get(f"{through}/api/agent/list", headers=headers).status_code == 401
        keyed = httpx.get(f"{through}/api/agent/list", headers={**headers, **ALICE})
        assert keyed.status_code == 200
    finally:
        proxy.stop()
        server.stop()


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"LUMINA_HOST": "0.0.0.0", "LUMINA_ALLOWED_HOSTS": "lumina.test"}, "LUMINA_HOST=0.0.0.0"),
        ({"LUMINA_TRUST_LOOPBACK": "false"}, "LUMINA_TRUST_LOOPBACK=false"),
    ],
)
def test_it_refuses_to_start_where_nobody_would_have_to_prove_who_they_are(
    tmp_path: Path, env: dict[str, str], said: str
) -> None:
    server = AppServer(tmp_path, backend_only=True, env={"LUMINA_REDIS_URL": "", **env})
    with pytest.raises(RuntimeError):
        server.start(timeout=60)
    assert said in server.tail(200)
    check = subprocess.run(
        [str(Path(server.env()["PATH"].split(":")[0]) / "python"), "-m", "lumina_app", "check"],
        env=server.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 2 and said in check.stderr


def test_by_default_another_machine_cannot_even_connect(open_server: AppServer) -> None:
    """``make run`` / ``reflex run`` listen on 127.0.0.1 unless LUMINA_HOST says otherwise."""
    addresses = [a for a in _own_addresses() if not a.startswith("127.") and a != "::1"]
    if not addresses:
        pytest.skip("this machine has no address besides loopback")
    for address in addresses:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family) as sock:
            sock.settimeout(2)
            assert sock.connect_ex((address, open_server.port)) != 0, address
    assert upgrade_status(open_server, host=f"127.0.0.1:{open_server.port}") == 101


def _own_addresses() -> list[str]:
    found = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False)
    return found.stdout.split()
