"""One history across agents (#45): the sidebar lists every agent's conversations with
the agent named, a filter narrows it, a conversation opens under its own agent; pin and
archive from the row's menu (kept over a reload), export as a Markdown download; the
sections usable on a phone."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import answers, only_agent, open_new, send, shot, wait_idle

pytestmark = pytest.mark.e2e


def row(page: Page, text: str, section: str = ""):
    scope = page.get_by_test_id(section) if section else page
    return scope.get_by_test_id("conversation-item").filter(has_text=text)


def menu(page: Page, text: str, item: str) -> None:
    row(page, text).get_by_test_id("conversation-menu").click()
    page.get_by_test_id(f"menu-{item}").click()


def show_archived(page: Page) -> None:
    if page.get_by_test_id("archived-section").count() == 0:
        page.get_by_test_id("archived-toggle").click()
    expect(page.get_by_test_id("archived-section")).to_be_visible()


def test_one_history_across_agents_with_pin_archive_and_export(page: Page, app_server) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    tag = uuid.uuid4().hex[:6]
    apples, bananas = f"Apples {tag}", f"Bananas {tag}"
    open_new(page, app_server.url, agent="assistant")
    send(page, apples)
    wait_idle(page)
    apples_url = page.url
    page.get_by_test_id("agent-picker").click()
    page.get_by_role("option", name="Socrates", exact=True).click()
    expect(page).to_have_url(re.compile(r"/chat/socrates$"))
    expect(answers(page)).to_have_count(0)  # the new, empty conversation is on screen
    send(page, bananas)
    wait_idle(page)
    bananas_url = page.url

    # both stay listed after the switch, each with its agent named
    expect(row(page, apples)).to_have_count(1)
    expect(row(page, apples).get_by_test_id("conversation-agent")).to_have_text("Assistant")
    expect(row(page, bananas).get_by_test_id("conversation-agent")).to_have_text("Socrates")
    # another agent's conversation made elsewhere (REST) shows up live
    made = httpx.post(
        f"{app_server.url}/api/v1/conversations",
        json={"agentId": "assistant", "title": f"Live {tag}"},
        timeout=30,
    )
    assert made.status_code == 201, made.text
    expect(row(page, f"Live {tag}").get_by_test_id("conversation-agent")).to_have_text("Assistant")
    only_agent(page, "Socrates")
    expect(row(page, apples)).to_have_count(0)
    expect(row(page, bananas)).to_have_count(1)
    only_agent(page, "All agents")
    expect(row(page, apples)).to_have_count(1)

    # a conversation of another agent opens under its own agent, the picker follows
    row(page, apples).get_by_test_id("conversation-link").click()
    expect(page).to_have_url(apples_url)
    expect(page.get_by_test_id("agent-picker")).to_contain_text("Assistant")
    expect(page.locator("[data-testid=message][data-role=user]")).to_contain_text([apples])
    # an address naming the wrong agent (as an old link might) moves to the right one
    page.goto(apples_url.replace("/assistant/", "/socrates/"))
    expect(page).to_have_url(apples_url)

    # pin: on top, under "Pinned"
    menu(page, apples, "pin")
    expect(page.get_by_test_id("pinned-heading")).to_be_visible()
    expect(row(page, apples, "pinned-section")).to_have_count(1)
    expect(row(page, apples, "recent-section")).to_have_count(0)
    # archive: out of the list, in "Archived"
    menu(page, bananas, "archive")
    expect(row(page, bananas)).to_have_count(0)
    show_archived(page)
    expect(row(page, bananas, "archived-section")).to_have_count(1)
    shot(page, "history-sections")

    # export from the menu: a Markdown file with the question in it
    row(page, apples).get_by_test_id("conversation-menu").click()
    page.get_by_test_id("export-menu").click()
    with page.expect_download() as download:
        page.get_by_test_id("export-md").click()
    saved = Path(download.value.path())
    assert download.value.suggested_filename.endswith(".md")
    assert apples in saved.read_text(encoding="utf-8")

    # a reload keeps both
    page.reload()
    expect(row(page, apples, "pinned-section")).to_have_count(1)
    expect(row(page, bananas, "recent-section")).to_have_count(0)
    show_archived(page)
    expect(row(page, bananas, "archived-section")).to_have_count(1)
    # an archived conversation still opens, and search finds it (every agent's)
    row(page, bananas, "archived-section").get_by_test_id("conversation-link").click()
    expect(page).to_have_url(bananas_url)
    page.get_by_test_id("search-input").fill(tag)
    expect(row(page, bananas)).to_have_count(1)
    expect(row(page, apples)).to_have_count(1)
    page.get_by_test_id("search-input").fill("")
    # undo both from the same menu
    menu(page, apples, "unpin")
    expect(page.get_by_test_id("pinned-heading")).to_have_count(0)
    show_archived(page)
    menu(page, bananas, "unarchive")
    expect(row(page, bananas, "recent-section")).to_have_count(1)
    expect(row(page, apples, "recent-section")).to_have_count(1)


def test_phone_sections_and_row_menu(browser, app_server) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_default_timeout(15_000)
    tag = uuid.uuid4().hex[:6]
    open_new(page, app_server.url, agent="socrates")
    send(page, f"Phone pinned {tag}")
    wait_idle(page)
    # the message's time is short on a phone ("14:03" today)
    question = page.locator("[data-testid=message][data-role=user]").first
    expect(question.locator(".lumina-time-short")).to_be_visible()
    expect(question.locator(".lumina-time-short")).to_have_text(re.compile(r"^\d\d:\d\d$"))
    expect(question.locator(".lumina-time-long")).to_be_hidden()
    page.get_by_test_id("open-drawer").click()
    drawer = page.get_by_test_id("drawer")
    expect(drawer).to_be_visible()
    item = drawer.get_by_test_id("conversation-item").filter(has_text=f"Phone pinned {tag}")
    expect(item.locator(".lumina-time-short")).to_have_text(re.compile(r"^\d\d:\d\d$"))
    item.get_by_test_id("conversation-menu").click()
    page.get_by_test_id("menu-pin").click()
    pinned = drawer.get_by_test_id("pinned-section")
    expect(pinned.get_by_test_id("conversation-item").filter(has_text=tag)).to_have_count(1)
    drawer.get_by_test_id("archived-toggle").click()
    pinned.get_by_test_id("conversation-menu").first.click()
    expect(page.get_by_test_id("menu-unpin")).to_be_visible()
    page.wait_for_timeout(400)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"page scrolls sideways: {width}px"
    shot(page, "history-phone-menu")
    page.keyboard.press("Escape")
    page.wait_for_timeout(300)
    shot(page, "history-phone-sections")
    # unpinned again: the other tests of this server take the newest row as the first
    pinned.get_by_test_id("conversation-menu").first.click()
    page.get_by_test_id("menu-unpin").click()
    expect(drawer.get_by_test_id("pinned-section")).to_have_count(0)
    context.close()
    assert errors == []
