"""Live pages over a raw socket (#30): a socket with no session that asks to follow live
gets nothing and breaks nothing; a signed-in one follows only its own account."""

from __future__ import annotations

import httpx

from lumina_app.ui.state.live import LiveState
from tests.security.socketio import RawSocket, text_of
from tests.security.test_trust_boundary import event
from tests.security.test_users_mode import PASSWORD, users_server  # noqa: F401 (fixture)


def test_a_crafted_watch_without_a_session_gets_nothing_and_breaks_nothing(users_server) -> None:  # noqa: F811
    server, keys = users_server
    made = httpx.post(
        f"{server.url}/api/v1/agents/assistant/execute/sync",
        json={"task": "alice's live secret"},
        headers=keys["alice"],
    ).json()
    path = f"/chat/assistant/{made['conversationId']}"
    sock = RawSocket(server.url, origin=server.url)
    try:
        sock.emit("reflex___state____state.hydrate", path=path)
        sock.emit(event(LiveState, "watch"), path=path)
        httpx.post(
            f"{server.url}/api/v1/agents/assistant/execute/sync",
            json={"task": "alice's second secret", "conversationId": made["conversationId"]},
            headers=keys["alice"],
        )
        sent = text_of(sock.updates(3.0))
    finally:
        sock.close()
    assert "secret" not in sent and "/login" in sent
    # The server still opens sockets and serves a signed-in one.
    login = httpx.post(
        f"{server.url}/api/v1/auth/login",
        json={"username": "bob", "password": PASSWORD},
        headers={"Origin": server.url},
    )
    token = login.headers["set-cookie"].split(";")[0]
    sock = RawSocket(server.url, origin=server.url, cookie=token)
    try:
        sock.emit("reflex___state____state.hydrate", path=path)
        sock.emit(event(LiveState, "watch"), path=path)
        httpx.post(
            f"{server.url}/api/v1/agents/assistant/execute/sync",
            json={"task": "alice's third secret", "conversationId": made["conversationId"]},
            headers=keys["alice"],
        )
        sent = text_of(sock.updates(3.0))
    finally:
        sock.close()
    assert "secret" not in sent and "bob" in sent
