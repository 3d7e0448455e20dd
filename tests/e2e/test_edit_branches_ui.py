"""Editing a question in place, in the browser (the demo model): the bubble becomes a text
box (Enter sends, Esc cancels), the edit is a new branch of the same conversation with
"< k / n >" on the question, switching shows the other branch's answer, a reload shows the
same, and the composer's draft is left as it was. At a desktop and a phone size; and a
second tab on the conversation follows the edit and the switch."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.test_chat_ui import answers, open_new, send, shot, wait_idle
from tests.e2e.test_message_actions import actions_of, conversation_id, questions

pytestmark = pytest.mark.e2e
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.mark.parametrize(("size", "viewport"), [("desktop", DESKTOP), ("phone", PHONE)])
def test_edit_in_place_then_switch_branches(browser, app_server, size, viewport) -> None:
    context = browser.new_context(viewport=viewport, is_mobile=size == "phone")
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    open_new(page, app_server.url)
    send(page, "Tell me about Paris")
    wait_idle(page)
    send(page, "And its museums?")
    wait_idle(page)
    original = conversation_id(page)
    composer = page.get_by_test_id("composer")
    composer.fill("a draft I am still writing")

    # Esc leaves the question as it was
    actions_of(questions(page).nth(1)).get_by_test_id("edit-message").click()
    box = page.get_by_test_id("edit-text")
    expect(box).to_have_value("And its museums?")
    box.press("Escape")
    expect(page.get_by_test_id("edit-text")).to_have_count(0)
    expect(questions(page).nth(1)).to_contain_text("And its museums?")

    # edited inline, Enter sends: a new branch in the same conversation
    actions_of(questions(page).nth(1)).get_by_test_id("edit-message").click()
    box = page.get_by_test_id("edit-text")
    box.fill("And its parks?")
    shot(page, f"edit-inline-{size}")
    box.press("Enter")
    label = page.get_by_test_id("branch-label")
    expect(label).to_have_text("2 / 2", timeout=20_000)
    expect(page.get_by_test_id("send-button")).to_be_visible()
    assert conversation_id(page) == original  # no fork: the same conversation
    expect(questions(page)).to_have_count(2)
    expect(questions(page).nth(1)).to_contain_text("And its parks?")
    expect(answers(page)).to_have_count(2)
    expect(answers(page).last).to_contain_text("parks")
    expect(composer).to_have_value("a draft I am still writing")
    shot(page, f"edit-branches-{size}")

    # the first branch: its question and answer again
    page.get_by_test_id("branch-previous").click()
    expect(label).to_have_text("1 / 2")
    expect(questions(page).nth(1)).to_contain_text("And its museums?")
    expect(answers(page)).to_have_count(2)
    expect(answers(page).last).to_contain_text("museums")
    expect(answers(page).last).not_to_contain_text("parks")
    page.reload()
    expect(page.get_by_test_id("branch-label")).to_have_text("1 / 2")
    expect(questions(page).nth(1)).to_contain_text("And its museums?")
    expect(answers(page).last).to_contain_text("museums")
    expect(page.get_by_test_id("composer")).to_have_value("a draft I am still writing")
    shot(page, f"edit-branch-one-{size}")
    page.get_by_test_id("branch-next").click()
    expect(page.get_by_test_id("branch-label")).to_have_text("2 / 2")
    expect(answers(page).last).to_contain_text("parks")
    if size == "phone":
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"page scrolls sideways: {width}px"
    context.close()
    assert errors == [], f"uncaught page errors: {errors}"


def test_another_tab_follows_an_edit_and_a_switch(browser, app_server) -> None:
    context = browser.new_context(viewport=DESKTOP)
    first, second = context.new_page(), context.new_page()
    open_new(first, app_server.url)
    send(first, "Tell me about Paris")
    wait_idle(first)
    second.goto(first.url)
    expect(questions(second)).to_have_count(1)
    actions_of(questions(first).first).get_by_test_id("edit-message").click()
    first.get_by_test_id("edit-text").fill("Tell me about Rome")
    first.get_by_test_id("edit-send").click()
    expect(first.get_by_test_id("branch-label")).to_have_text("2 / 2", timeout=20_000)
    # the other tab: the new question and its answer, not the branch left
    expect(questions(second)).to_have_count(1)
    expect(questions(second).first).to_contain_text("Tell me about Rome", timeout=20_000)
    expect(answers(second).last).to_contain_text("Rome", timeout=20_000)
    expect(answers(second)).to_have_count(1)
    expect(second.get_by_test_id("branch-label")).to_have_text("2 / 2", timeout=20_000)
    first.get_by_test_id("branch-previous").click()
    expect(first.get_by_test_id("branch-label")).to_have_text("1 / 2")
    expect(questions(second).first).to_contain_text("Tell me about Paris", timeout=20_000)
    expect(answers(second).last).to_contain_text("Paris")
    expect(second.get_by_test_id("branch-label")).to_have_text("1 / 2")
    context.close()
