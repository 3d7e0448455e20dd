"""A new conversation's page moves itself to the conversation's address once its first
run has started. On a loaded machine that move can arrive after the first answer has
settled and the next question was sent: the page it lands on must keep both."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.socket_frames import REDIRECT, hold_frames
from tests.e2e.test_chat_ui import answers, open_new, send, wait_idle

pytestmark = pytest.mark.e2e


def test_a_late_move_to_the_new_address_keeps_the_next_question(page: Page, app_server) -> None:
    held = hold_frames(page, REDIRECT, from_page=False)
    open_new(page, app_server.url)
    send(page, "First: Lisbon")
    wait_idle(page)  # the first answer settled; the page has not moved yet
    expect(page).to_have_url(re.compile(r"/chat/assistant$"))
    assert len(held) == 1, held
    ws, frame = held.pop()
    page.get_by_test_id("composer").fill("Second: Porto")
    page.get_by_test_id("composer").press("Enter")
    ws.send(frame)  # now the move arrives, while the second run is starting
    expect(page).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    wait_idle(page)
    questions = page.locator("[data-testid=message][data-role=user]")
    expect(questions).to_have_count(2)
    expect(questions.nth(1)).to_contain_text("Second: Porto")
    expect(answers(page)).to_have_count(2)
    expect(answers(page).nth(1)).to_contain_text("I can see 2 earlier messages")
    page.reload()  # and it is what was stored
    expect(page.locator("[data-testid=message]")).to_have_count(4)


def test_a_question_being_typed_survives_the_move(page: Page, app_server) -> None:
    """The cause of CI failures: the move remounted the page (two routes), and an Enter
    pressed while it did sent nothing. One route keeps the same page: the composer is the
    very same element after the move, with its text."""
    held = hold_frames(page, REDIRECT, from_page=False)
    open_new(page, app_server.url)
    send(page, "First: Lisbon")
    wait_idle(page)
    page.get_by_test_id("composer").fill("Second: Porto")
    page.evaluate("document.getElementById('composer').dataset.before = 'move'")
    ws, frame = held.pop()
    ws.send(frame)
    expect(page).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    expect(page.get_by_test_id("composer")).to_have_value("Second: Porto")
    expect(page.get_by_test_id("composer")).to_have_attribute("data-before", "move")
    page.get_by_test_id("composer").press("Enter")
    wait_idle(page)
    expect(page.locator("[data-testid=message][data-role=user]").nth(1)).to_contain_text(
        "Second: Porto"
    )
    page.reload()  # kept once: a reload does not bring the sent question back
    expect(page.locator("[data-testid=message]")).to_have_count(4)
    expect(page.get_by_test_id("composer")).to_have_value("")
