"""Tool calls in the chat UI, with the shipped ``assistant`` agent on the offline demo
model: a collapsible card per call inside the answer, while the run is live, after a
reload during the run, and after a reload once it is stored."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import answers, open_new, send, shot

pytestmark = pytest.mark.e2e

QUESTION = "What time is it in Europe/Paris, and calculate (17 * 23) ^ 2?"


def cards(page: Page):
    return page.get_by_test_id("tool-card")


def wait_idle(page: Page, new_answers: int) -> None:
    """A turn adds one answer, tool steps and all (#30: a turn reads as one answer)."""
    expect(answers(page)).to_have_count(page.answers_before + new_answers, timeout=20_000)
    expect(page.get_by_test_id("send-button")).to_be_visible()


def check_cards(page: Page) -> None:
    clock, calculator = cards(page).nth(0), cards(page).nth(1)
    expect(clock).to_have_attribute("data-tool", "current_time")
    expect(clock).to_have_attribute("data-status", "done")
    expect(calculator).to_have_attribute("data-tool", "calculator")
    clock.locator("summary").click()  # collapsed until opened
    expect(clock.get_by_test_id("tool-arguments")).to_contain_text('"timezone": "Europe/Paris"')
    expect(clock.get_by_test_id("tool-result")).to_contain_text(re.compile(r"\+0[12]:00"))
    expect(clock).to_contain_text(re.compile(r"\d+ ms"))
    calculator.locator("summary").click()
    expect(calculator.get_by_test_id("tool-result")).to_have_text("152881")


def test_tool_cards_live_and_after_a_reload(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, QUESTION + " /long")
    # Live: the step with its calls is inside the answer that still streams.
    streaming = page.get_by_test_id("streaming-message")
    expect(streaming).to_contain_text("word3")
    expect(streaming.get_by_test_id("tool-card")).to_have_count(2)
    expect(cards(page)).to_have_count(2)
    expect(cards(page).first).to_have_attribute("data-status", "done")
    # A reload during the run finds the same cards (rebuilt from the run's events).
    page.reload()
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word")
    expect(cards(page)).to_have_count(2)
    wait_idle(page, 1)
    answer = answers(page).last
    expect(answer).to_contain_text("calculator said: 152881")
    expect(answer.get_by_test_id("tool-card")).to_have_count(2)  # inline, in order
    expect(page.get_by_test_id("copy-message")).to_have_count(2)  # one row each: Q and A
    check_cards(page)
    # After the run: the same one answer, from the stored answer and TOOL rows.
    page.reload()
    expect(answers(page)).to_have_count(1)
    expect(answers(page).last.get_by_test_id("tool-card")).to_have_count(2)
    expect(page.get_by_test_id("copy-message")).to_have_count(2)
    check_cards(page)


def test_a_tool_error_is_shown_as_such(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, QUESTION)
    wait_idle(page, 1)
    check_cards(page)
    shot(page, "tool-card")
    send(page, "What time is it in Mars/Olympus?")
    wait_idle(page, 1)
    card = cards(page).last
    expect(card).to_have_attribute("data-status", "error")
    card.locator("summary").click()
    expect(card.get_by_test_id("tool-result")).to_contain_text("unknown time zone 'Mars/Olympus'")
    page.reload()
    expect(cards(page).last).to_have_attribute("data-status", "error")


def test_recall_reaches_back_and_the_context_shows_each_model_call(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "My bike is a green Brompton.")
    wait_idle(page, 1)
    send(page, "What did I say about my bike?")
    wait_idle(page, 1)
    expect(cards(page)).to_have_count(1)
    expect(cards(page).first).to_have_attribute("data-tool", "recall")
    expect(answers(page).last).to_contain_text("My bike is a green Brompton.")
    page.get_by_test_id("show-context").last.click()
    dialog = page.get_by_test_id("context-dialog")
    # Each model call of the turn in order, headed by what it received.
    expect(dialog.get_by_test_id("context-call")).to_have_count(2)
    expect(dialog.get_by_test_id("context-call").first).to_contain_text("model call 1 · received")
    expect(dialog.get_by_test_id("context-call").last).to_contain_text("model call 2 · received")
    expect(dialog).to_contain_text('→ recall({"query": "bike"})')
    expect(dialog).to_contain_text("2 model calls (tool steps)")
    page.wait_for_timeout(400)  # the dialog's fade-in, for the picture
    shot(page, "context-tool-steps")
