"""A message's actions in the browser: regenerate (and the "n / m" versions switcher),
fork here (the fork opens, says where it came from, and is marked in the list), edit (in
place: the same conversation, no new list entry), a reasoning model's thinking folded
above its answer."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import answers, open_new, send, shot, wait_idle

pytestmark = pytest.mark.e2e
CONVERSATION_URL = re.compile(r"/chat/assistant/([0-9a-f-]{36})$")


def questions(page: Page):
    return page.locator("[data-testid=message][data-role=user]")


def actions_of(message):
    """The action row right under a message (its sibling in the message's box)."""
    return message.locator("xpath=..").get_by_test_id("message-actions")


def conversation_id(page: Page) -> str:
    expect(page).to_have_url(CONVERSATION_URL)
    return CONVERSATION_URL.search(page.url).group(1)


def test_regenerate_shows_versions_and_switches_back(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "Name a colour")
    wait_idle(page)
    first = answers(page).last.locator(".lumina-md").inner_text()
    actions_of(answers(page).last).get_by_test_id("regenerate-message").click()
    label = page.get_by_test_id("version-label")
    expect(label).to_have_text("2 / 2", timeout=20_000)
    expect(page.get_by_test_id("send-button")).to_be_visible()
    expect(answers(page)).to_have_count(1)  # one version shown at a time
    expect(answers(page).last.get_by_test_id("message-status")).to_have_count(0)
    shot(page, "regenerate-versions")

    page.get_by_test_id("version-previous").click()
    expect(label).to_have_text("1 / 2")
    expect(answers(page).last.get_by_test_id("message-status")).to_have_text("superseded")
    expect(answers(page).last.locator(".lumina-md")).to_have_text(first)
    expect(page.get_by_test_id("regenerate-message")).to_have_count(0)  # earlier: read-only
    page.get_by_test_id("version-next").click()
    expect(label).to_have_text("2 / 2")
    expect(page.get_by_test_id("regenerate-message")).to_have_count(1)

    page.reload()  # the same, from the stored rows
    expect(page.get_by_test_id("version-label")).to_have_text("2 / 2")
    expect(answers(page)).to_have_count(1)
    page.get_by_test_id("version-previous").click()
    expect(page.get_by_test_id("version-label")).to_have_text("1 / 2")


def test_fork_opens_the_fork_with_a_link_back(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "First: Lisbon")
    wait_idle(page)
    send(page, "Second: Porto")
    wait_idle(page)
    original = conversation_id(page)
    actions_of(answers(page).first).get_by_test_id("fork-message").click()
    expect(page).not_to_have_url(re.compile(original))
    forked = conversation_id(page)
    assert forked != original
    link_back = page.get_by_test_id("forked-from")
    expect(link_back).to_contain_text(re.compile(r"forked from\s*First: Lisbon"))
    expect(questions(page)).to_have_count(1)
    expect(answers(page)).to_have_count(1)
    items = page.get_by_test_id("conversation-item")
    expect(items.first).to_contain_text("(fork)")
    expect(items.first.get_by_test_id("fork-mark")).to_have_count(1)
    shot(page, "fork")
    page.get_by_test_id("forked-from").get_by_role("link").click()
    expect(page).to_have_url(re.compile(original))
    expect(questions(page)).to_have_count(2)


def test_edit_stays_in_the_conversation_with_no_new_list_entry(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "Tell me about Paris")
    wait_idle(page)
    original = conversation_id(page)
    items = page.get_by_test_id("conversation-item")
    listed = items.count()
    actions_of(questions(page).first).get_by_test_id("edit-message").click()
    box = page.get_by_test_id("edit-text")
    expect(box).to_have_value("Tell me about Paris")
    box.fill("Tell me about Rome")
    page.get_by_test_id("edit-send").click()
    expect(page.get_by_test_id("branch-label")).to_have_text("2 / 2", timeout=20_000)
    assert conversation_id(page) == original
    expect(questions(page)).to_have_count(1)
    expect(questions(page).first).to_contain_text("Tell me about Rome")
    expect(answers(page).first).to_contain_text("Tell me about Rome")
    expect(page.get_by_test_id("forked-from")).to_have_count(0)
    expect(items).to_have_count(listed)
    expect(items.first).not_to_contain_text("(fork)")
    shot(page, "edit")


def test_thinking_is_folded_above_the_answer(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "Why is the sea salty? /think")
    wait_idle(page)
    thinking = answers(page).last.get_by_test_id("thinking")
    expect(thinking).to_contain_text("Thinking")
    thinking.locator("summary").click()
    expect(thinking).to_contain_text("The user asked")
    shot(page, "thinking")
    page.reload()
    expect(answers(page).last.get_by_test_id("thinking")).to_have_count(1)
