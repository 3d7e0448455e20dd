"""Users mode tried from outside, on a real server whose accounts were made with the CLI
before it started: loopback is nobody, a raw Socket.IO client holding a stolen conversation
id but no session gets nothing, a signed-in socket acts as its own account only, and the
limits and refusals of the sign-in route hold."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.sidebar import SidebarState
from tests.faults.realserver import start_server
from tests.security.socketio import RawSocket, text_of
from tests.security.test_trust_boundary import conversations, event
from tests.server import AppServer

pytestmark = pytest.mark.slow

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def users_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppServer, dict]]:
    """A server with alice and bob; their keys made by the operator."""
    workdir = tmp_path_factory.mktemp("users")
    probe = AppServer(workdir, backend_only=True, env={"LUMINA_REDIS_URL": ""})
    probe.prepare()
    keys = {}
    for name in ("alice", "bob"):
        probe.cli("users", "add", name, "--password-stdin", stdin=PASSWORD + "\n")
        keys[name] = {"Authorization": f"Bearer {probe.cli('keys', 'create', name).strip()}"}
    server = start_server(workdir)
    yield server, keys
    server.stop()


def test_loopback_is_nobody_once_accounts_exist(users_server) -> None:
    server, keys = users_server
    for path in ("/api/agent/list", "/api/v1/conversations", "/api/v1/me"):
        resp = httpx.get(server.url + path)
        assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{server.url}/api/v1/me", headers=keys["alice"]).json()["role"] == "member"


def test_a_socket_with_a_stolen_conversation_id_but_no_session_gets_nothing(
    users_server,
) -> None:
    server, keys = users_server
    secret = "alice's diary: the safe code is 4711"
    made = httpx.post(
        f"{server.url}/api/v1/agents/assistant/execute/sync",
        json={"task": secret},
        headers=keys["alice"],
    ).json()
    conv = made["conversationId"]
    sock = RawSocket(server.url, origin=server.url)
    try:
        path = f"/chat/assistant/{conv}"
        sock.emit("reflex___state____state.hydrate", path=path)
        sock.emit(event(ChatState, "load"), path=path)
        sock.emit(event(ChatState, "heartbeat"), {"_now": "0"}, path=path)
        sock.emit(event(SidebarState, "refresh"), path=path)
        sock.emit(event(SidebarState, "set_search"), {"value": "diary"}, path=path)
        sock.emit(event(ChatState, "send"), {"form": {"message": "exfiltrate"}}, path=path)
        sock.emit(event(SidebarState, "confirm_delete"), path=path)
        updates = sock.updates(3.0)
    finally:
        sock.close()
    sent = text_of(updates)
    assert secret not in sent and "4711" not in sent
    assert '"messages_rx_state_": [{' not in sent
    assert '"conversations_rx_state_": [{' not in sent
    assert "/login" in sent
    assert len(conversations(server, keys["alice"])) == 1  # nothing sent, nothing deleted
    listed = httpx.get(
        f"{server.url}/api/v1/conversations/{conv}/messages", headers=keys["alice"]
    ).json()["items"]
    assert len(listed) == 2


def test_a_signed_in_socket_is_its_own_account_only(users_server) -> None:
    server, keys = users_server
    bobs = httpx.post(
        f"{server.url}/api/v1/conversations",
        json={"agentId": "assistant", "title": "bob's plans"},
        headers=keys["bob"],
    ).json()["uuid"]
    login = httpx.post(
        f"{server.url}/api/v1/auth/login",
        json={"username": "alice", "password": PASSWORD},
        headers={"Origin": server.url},
    )
    assert login.status_code == 200, login.text
    token = login.headers["set-cookie"].split(";")[0]
    sock = RawSocket(server.url, origin=server.url, cookie=token)
    try:
        path = f"/chat/assistant/{bobs}"
        sock.emit("reflex___state____state.hydrate", path=path)
        sock.emit(event(ChatState, "load"), path=path)
        updates = text_of(sock.updates(3.0))
    finally:
        sock.close()
    assert "bob's plans" not in updates and "does not exist" in updates
    assert "alice" in updates and "/login" not in updates


def test_sign_in_refusals_say_nothing_about_who_exists(users_server) -> None:
    server, _keys = users_server
    url = f"{server.url}/api/v1/auth/login"
    answers = {
        httpx.post(url, json={"username": name, "password": "wrong password"}).json()["error"][
            "message"
        ]
        for name in ("alice", "nobody-here")
    }
    assert answers == {"wrong username or password"}
    no_keys = httpx.post(url, json={"apiKey": "anything"})
    assert no_keys.status_code == 403  # no LUMINA_API_KEYS: nothing to sign in to that way
    form = httpx.post(url, data={"username": "alice"}, headers={"Origin": server.url})
    assert form.status_code == 403  # a browser's form post is not JSON: refused at the door
