"""Live pages over a raw socket (#30): a socket with no session that asks to follow live
gets nothing and breaks nothing; a signed-in one follows only its own account."""

from __future__ import annotations

import time

import httpx

from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.live import LiveState
from lumina_app.ui.state.sidebar import SidebarState
from tests.security.socketio import RawSocket, text_of
from tests.security.test_trust_boundary import event
from tests.security.test_users_mode import PASSWORD, users_server  # noqa: F401 (fixture)
from tests.waits import wait_until_sync


def alices_conversation(server, keys, task: str) -> tuple[dict, str]:
    """A conversation of Alice's made over REST: its answer, and its page's path."""
    made = httpx.post(
        f"{server.url}/api/v1/agents/assistant/execute/sync",
        json={"task": task},
        headers=keys["alice"],
    ).json()
    return made, f"/chat/assistant/{made['conversationId']}"


def test_a_crafted_watch_without_a_session_gets_nothing_and_breaks_nothing(users_server) -> None:  # noqa: F811
    server, keys = users_server
    made, path = alices_conversation(server, keys, "alice's live secret")
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


def session_cookie(server, name: str) -> str:
    login = httpx.post(
        f"{server.url}/api/v1/auth/login",
        json={"username": name, "password": PASSWORD},
        headers={"Origin": server.url},
    )
    assert login.status_code == 200, login.text
    return login.headers["set-cookie"].split(";")[0]


def test_a_tab_signed_in_as_someone_else_follows_them_at_once_and_only_them(
    users_server,  # noqa: F811
) -> None:
    """Alice's tab follows live; Bob signs in on the same tab (same client token, a new
    socket). Bob's feed runs at once — his new conversation reaches the tab well before
    the old feed's 5 s wake-up — and nothing of Alice's reaches it any more."""
    server, keys = users_server
    made, path = alices_conversation(server, keys, "alice opens a conversation")
    anns = RawSocket(server.url, origin=server.url, cookie=session_cookie(server, "alice"))
    anns.emit("reflex___state____state.hydrate", path=path)
    anns.emit(event(LiveState, "watch"), path=path)
    anns.updates(1.0)
    anns.close()
    bobs = RawSocket(
        server.url, origin=server.url, cookie=session_cookie(server, "bob"), token=anns.token
    )
    seen: list = []
    try:  # Bob's tab opens Alice's address (her link, say): he is refused it, of course
        bobs.emit("reflex___state____state.hydrate", path=path)
        bobs.emit(event(ChatState, "load"), path=path)
        bobs.emit(event(SidebarState, "refresh"), path=path)
        bobs.emit(event(LiveState, "watch"), path=path)
        seen += bobs.updates(1.0)
        httpx.post(
            f"{server.url}/api/v1/agents/assistant/execute",
            json={"task": "alice's secret, after bob", "conversationId": made["conversationId"]},
            headers=keys["alice"],
        )
        started = time.monotonic()
        httpx.post(
            f"{server.url}/api/v1/agents/assistant/execute",
            json={"task": "bob's own new subject"},
            headers=keys["bob"],
        )

        def heard() -> bool:
            seen.extend(bobs.updates(0.2))
            return "bob's own new subject" in text_of(seen)

        wait_until_sync(heard, "bob's live sidebar to show his new conversation", within=4.0)
        assert time.monotonic() - started < 4.0  # not after the old feed's 5 s wake-up
        seen += bobs.updates(2.0)
    finally:
        bobs.close()
    assert "secret" not in text_of(seen)
