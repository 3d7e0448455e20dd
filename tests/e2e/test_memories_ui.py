"""The Memory page in a real browser (issue #27): what the assistant learnt in one
conversation is listed, with where it came from; it is corrected there, and the next
answer's Context shows it used the corrected memory."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import open_new, send, shot, wait_idle

pytestmark = pytest.mark.e2e


def forget_everything(base: str) -> None:
    """The app server is shared by the browser tests: leave no memory to the others."""
    with httpx.Client(base_url=base, timeout=30) as api:
        assert api.post("/api/v1/memories/forget").status_code == 200


def test_a_memory_is_shown_edited_and_used(page: Page, app_server) -> None:
    forget_everything(app_server.url)
    try:
        open_new(page, app_server.url)
        send(page, "Hello! I live in Lyon and I prefer short answers.")
        wait_idle(page)
        page.get_by_test_id("link-memories").click()
        rows = page.get_by_test_id("memory-row")
        for _ in range(20):  # the extractor writes in the background, after the answer
            if rows.count() == 2:
                break
            page.wait_for_timeout(250)
            page.reload()
        expect(rows).to_have_count(2)
        home = rows.filter(has_text="The user lives in Lyon.")
        expect(home).to_be_visible()
        source = home.get_by_test_id("memory-source")
        expect(source).to_contain_text("message 1")
        expect(source).to_have_attribute("href", re.compile(r"^/chat/assistant/[0-9a-f-]{36}$"))

        home.get_by_test_id("memory-edit").click()
        box = page.get_by_test_id("memory-edit-text")
        box.fill("The user lives in Lyon, near the Saône.")
        page.get_by_test_id("memory-save").click()
        expect(page.get_by_test_id("notice")).to_contain_text("Memory corrected.")
        expect(rows.filter(has_text="near the Saône")).to_have_count(1)
        rows.filter(has_text="near the Saône").get_by_test_id("memory-pin").click()
        expect(page.get_by_test_id("notice")).to_contain_text("Pinned")
        expect(rows.first).to_contain_text("near the Saône")  # pinned first
        shot(page, "memories")

        page.get_by_test_id("back-to-chat").click()
        open_new(page, app_server.url)
        send(page, "Where do I live?")
        wait_idle(page)
        answer = page.locator("[data-testid=message][data-role=assistant]").last
        expect(answer).to_contain_text("near the Saône")
        page.get_by_test_id("show-context").last.click()
        used = page.get_by_test_id("used-memories")
        expect(used).to_contain_text("Used 2 memories about you")
        expect(used).to_contain_text("The user lives in Lyon, near the Saône.")
        page.wait_for_timeout(400)  # the dialog's fade-in, for the picture
        shot(page, "memories-used")
    finally:
        forget_everything(app_server.url)
