"""Browser tests: the real app in a subprocess, Debian's chromium driven by Playwright."""

from __future__ import annotations

import shutil

import pytest

from tests.server import AppServer

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    server = AppServer(
        tmp_path_factory.mktemp("e2e"),
        backend_only=False,
        env={"LUMINA_DEMO_DELAY_MS": "15", "LUMINA_REDIS_URL": ""},
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    """Module-scoped: the sync Playwright API runs an event loop in this thread while it is
    open, and async tests after these must find none."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser, app_server):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.set_default_timeout(15_000)
    yield page
    context.close()
    assert page.errors == [], f"uncaught page errors: {page.errors}"
