"""Memory in the chat view, in a real browser (issue #27): an answer that used memories
says so under itself and opens which ones, linked to the Memory page; and a chat started
with "Temporary chat" on is marked as such, uses no memory and leaves none."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import answers, open_new, send, shot, wait_idle
from tests.e2e.test_memories_ui import forget_everything

pytestmark = pytest.mark.e2e


def remember(base: str, text: str) -> dict:
    with httpx.Client(base_url=base, timeout=30) as api:
        resp = api.post("/api/v1/memories", json={"agentId": "assistant", "text": text})
        assert resp.status_code in (200, 201), resp.text
        return resp.json()


def memory_texts(base: str) -> list[str]:
    with httpx.Client(base_url=base, timeout=30) as api:
        return [m["text"] for m in api.get("/api/v1/memories").json()["items"]]


def test_an_answer_shows_the_memories_it_used(page: Page, app_server) -> None:
    forget_everything(app_server.url)
    try:
        name = remember(app_server.url, "The user's name is Grace.")
        remember(app_server.url, "The user works on compilers.")
        open_new(page, app_server.url)
        send(page, "What's my name?")
        wait_idle(page)
        answer_actions = page.get_by_test_id("message-actions").last
        mark = answer_actions.get_by_test_id("used-memories-mark")
        expect(mark).to_have_text("Used 2 memories")  # right after the stream settles
        page.reload()  # and from the stored answer alone
        mark = page.get_by_test_id("used-memories-mark")
        expect(mark).to_have_count(1)  # the question has none
        expect(mark).to_have_text("Used 2 memories")

        mark.click()
        listed = page.get_by_test_id("used-memories-list")
        expect(listed.get_by_test_id("used-memory")).to_have_count(2)
        link = listed.get_by_test_id("used-memory-link").filter(has_text="Grace")
        expect(link).to_have_attribute("href", f"/memories#memory-{name['id']}")
        page.wait_for_timeout(300)  # the popover's fade-in, for the picture
        shot(page, "memories-used-mark")

        link.click()
        expect(page).to_have_url(re.compile(rf"/memories#memory-{name['id']}$"))
        expect(page.locator(f"#memory-{name['id']}")).to_contain_text("Grace")
    finally:
        forget_everything(app_server.url)


def test_a_temporary_chat_is_marked_and_kept_out_of_memory(page: Page, app_server) -> None:
    forget_everything(app_server.url)
    try:
        remember(app_server.url, "The user's name is Grace.")
        open_new(page, app_server.url)
        toggle = page.get_by_test_id("temporary-toggle")
        expect(toggle).to_be_visible()
        toggle.click()
        expect(page.get_by_test_id("empty-hint")).to_contain_text("Temporary chat")
        shot(page, "temporary-toggle")
        send(page, "My name is Ada and I live in Lyon. What's my name?")
        wait_idle(page)
        expect(page.get_by_test_id("temporary-badge")).to_be_visible()
        expect(page.get_by_test_id("temporary-toggle")).to_have_count(0)  # decided for good
        expect(answers(page).last).not_to_contain_text("Grace")
        expect(page.get_by_test_id("used-memories-mark")).to_have_count(0)
        item = page.get_by_test_id("conversation-item").first
        expect(item.get_by_test_id("temporary-mark")).to_be_visible()
        shot(page, "temporary-chat")

        page.reload()
        expect(page.get_by_test_id("temporary-badge")).to_be_visible()
        assert memory_texts(app_server.url) == ["The user's name is Grace."]

        open_new(page, app_server.url)  # a new chat starts as a normal one again
        expect(page.get_by_test_id("temporary-toggle")).not_to_be_checked()
        send(page, "What's my name?")
        wait_idle(page)
        expect(answers(page).last).to_contain_text("Grace")
        expect(page.get_by_test_id("temporary-badge")).to_have_count(0)
        # the extractor ran after the temporary answer long before: it wrote nothing
        assert memory_texts(app_server.url) == ["The user's name is Grace."]
    finally:
        forget_everything(app_server.url)
