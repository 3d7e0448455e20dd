"""Scale-out in a real browser: two full app instances (Reflex state in Redis) behind a
balancer; the instance serving the page is killed -9 and the balancer moves to the other;
the same page keeps working and continues the same conversation."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import RedisServer
from tests.server import AppServer
from tests.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_page_survives_its_instance_being_killed(browser, tmp_path, _databases) -> None:
    database = _databases("postgresql")
    database.truncate()
    redis = RedisServer(tmp_path)
    redis.start()
    proxy = TcpProxy("127.0.0.1", 1)  # the balancer; pointed at instance 1 below
    env = {
        "LUMINA_REDIS_URL": redis.url,
        "REFLEX_REDIS_URL": redis.url.replace("/0", "/1"),
        "REFLEX_API_URL": f"http://127.0.0.1:{proxy.port}",
        "LUMINA_DEMO_DELAY_MS": "10",
    }
    one, two = (
        AppServer(tmp_path / f"i{n}", backend_only=False, env=env, database_url=database.url)
        for n in (1, 2)
    )
    try:
        one.start()
        two.start()
        proxy.target = ("127.0.0.1", one.port)
        proxy.start()
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"http://127.0.0.1:{proxy.port}/chat/assistant")
        answers = page.locator("[data-testid=message][data-role=assistant]")
        page.get_by_test_id("composer").fill("first, served by instance one")
        page.get_by_test_id("composer").press("Enter")
        expect(answers).to_have_count(1, timeout=30_000)
        expect(page).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
        conversation_url = page.url
        assert "/chat/assistant/" in conversation_url

        sockets: list[list[str]] = []
        page.on("websocket", lambda ws: listen(ws, sockets))
        one.kill()
        proxy.stop()
        proxy.target = ("127.0.0.1", two.port)
        proxy.start()
        # The browser notices the dead socket and reconnects (through the balancer) to
        # instance two: wait until that new socket's connection is acknowledged.
        for _ in range(300):
            if any(connected(frames) for frames in sockets):
                break
            page.wait_for_timeout(100)
        assert any(connected(frames) for frames in sockets), sockets

        page.get_by_test_id("composer").fill("second, after instance one died")
        page.get_by_test_id("composer").press("Enter")
        expect(answers).to_have_count(2, timeout=30_000)
        expect(answers.nth(1)).to_contain_text("I can see 2 earlier messages")
        expect(answers.nth(1)).to_contain_text("first, served by instance one")
        assert page.url == conversation_url
        assert errors == []
        page.close()
    finally:
        proxy.close()
        one.stop()
        two.stop()
        redis.kill()


def listen(ws, sockets: list[list[str]]) -> None:
    """Keep the frames a new page socket receives (registered as it opens: none missed)."""
    frames: list[str] = []
    sockets.append(frames)
    ws.on("framereceived", lambda payload: frames.append(str(payload)))


def connected(frames: list[str]) -> bool:
    """Socket.IO acknowledged the connection (its "40" packet): the socket is usable."""
    return any(frame.startswith("40") for frame in frames)
