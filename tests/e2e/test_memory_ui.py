"""Searching from the sidebar: message hits with the match marked, and a hit opens its
conversation scrolled to that message — also one far older than the latest page."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import open_new, send, shot, wait_idle

pytestmark = pytest.mark.e2e


def test_a_search_hit_opens_its_conversation_at_the_message(page: Page, app_server) -> None:
    with httpx.Client(base_url=app_server.url, timeout=30) as api:
        first = api.post(
            "/api/v1/agents/assistant/execute/sync",
            json={"task": "my favourite marsupial is the quokka <b>really</b>"},
        ).json()
        conv = first["conversationId"]
        for n in range(1, 25):  # 50 messages: the hit is older than the latest page (40)
            api.post(
                "/api/v1/agents/assistant/execute/sync",
                json={"task": f"filler turn {n}", "conversationId": conv},
            )
    page.goto(f"{app_server.url}/chat/assistant")
    page.get_by_test_id("search-input").fill("quokk")
    hit = page.locator("[data-testid=search-hit][href$='?seq=1']")  # the question itself
    expect(hit).to_be_visible()
    expect(hit.locator("mark").first).to_have_text(re.compile("quokka", re.IGNORECASE))
    expect(hit).to_contain_text("<b>really</b>")  # the text is shown, never run as HTML
    shot(page, "search")
    hit.click()

    expect(page).to_have_url(re.compile(rf"/chat/assistant/{conv}\?seq=1$"))
    focused = page.locator("#msg-1")
    expect(focused).to_have_class(re.compile("lumina-focus"))
    expect(focused).to_be_in_viewport()
    expect(focused).to_contain_text("quokka")
    expect(page.get_by_test_id("load-newer")).to_be_visible()  # the rest is below, on demand
    page.get_by_test_id("load-newer").click()
    expect(page.get_by_test_id("message").last).to_contain_text("filler turn 24")


def test_a_question_in_the_search_box_finds_the_message_ranked(page: Page, app_server) -> None:
    """Every word of a question need not be there: it is ranked (recall), not looked up."""
    with httpx.Client(base_url=app_server.url, timeout=30) as api:
        for task in (
            "the ticket for the broken printer is ZEBRA-4417",
            "lunch was a sandwich with pickles",
            "the weather looks grey today",
        ):
            api.post("/api/v1/agents/assistant/execute/sync", json={"task": task})
    page.goto(f"{app_server.url}/chat/assistant")
    box = page.get_by_test_id("search-input")
    box.fill("which ticket did I open for the printer?")
    hits = page.get_by_test_id("search-hit")
    expect(hits.first).to_contain_text("ZEBRA-4417")
    expect(hits.first.locator("mark").first).to_have_text(re.compile("ticket|printer"))
    shot(page, "search-question")
    box.fill("printer ticket")  # a few words: found word for word, as before
    expect(hits.first).to_contain_text("ZEBRA-4417")
    box.fill("printer sandwich")  # …which every word must match: none does
    expect(hits).to_have_count(0)


def test_an_answer_shows_exactly_what_its_model_was_given(page: Page, app_server) -> None:
    # Long-term memories that earlier tests' words left would be one more system message.
    httpx.post(f"{app_server.url}/api/v1/memories/forget", timeout=30).raise_for_status()
    open_new(page, app_server.url)
    for text in ("The secret word is pineapple.", "What was the secret word?"):
        send(page, text)
        wait_idle(page)
    page.get_by_test_id("show-context").last.click()
    dialog = page.get_by_test_id("context-dialog")
    expect(dialog).to_be_visible()
    sent = dialog.get_by_test_id("context-message")
    expect(sent).to_have_count(4)  # the prompt, the first turn, the new question
    expect(sent.nth(0)).to_contain_text("system")
    expect(sent.nth(1)).to_contain_text("The secret word is pineapple.")
    expect(sent.nth(3)).to_contain_text("What was the secret word?")
    expect(dialog).to_contain_text("Same session (kept in memory)")  # the "continue" scenario
    page.wait_for_timeout(400)  # the dialog's fade-in, for the picture
    shot(page, "context")
