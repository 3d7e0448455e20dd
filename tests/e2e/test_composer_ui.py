"""The composer never loses what a person types, and the chat feels finished (#45): Enter
during a stream, a draft across reloads and the page's own loading, a lost connection,
a long paste, Esc, a Stop with Continue, copy feedback, the 404 page, the tab title and
a phone's action row."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import ROOT
from tests.e2e.test_chat_ui import answers, open_new, send, shot, wait_idle
from tests.server import VENV_BIN, AppServer

pytestmark = pytest.mark.e2e


def composer(page: Page):
    return page.get_by_test_id("composer")


def test_enter_during_a_stream_keeps_the_text_until_the_answer_ends(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "Write a lot /long")
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word3")
    composer(page).fill("A follow-up typed while it streams")
    composer(page).press("Enter")
    expect(page.get_by_test_id("composer-hint")).to_be_visible()
    page.wait_for_timeout(300)
    expect(composer(page)).to_have_value("A follow-up typed while it streams")
    wait_idle(page)
    expect(composer(page)).to_have_value("A follow-up typed while it streams")
    expect(page.get_by_test_id("composer-hint")).to_be_hidden()
    send(page, composer(page).input_value())
    wait_idle(page)
    expect(answers(page)).to_have_count(2)
    expect(composer(page)).to_have_value("")


def test_a_draft_survives_a_reload_per_conversation(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "First question")
    wait_idle(page)
    composer(page).fill("half a thought")
    page.wait_for_timeout(200)
    page.reload()
    expect(composer(page)).to_have_value("half a thought")
    open_new(page, app_server.url)  # another conversation: its own (empty) draft
    expect(composer(page)).to_have_value("")
    page.go_back()
    expect(composer(page)).to_have_value("half a thought")
    composer(page).fill("")


def test_text_typed_as_the_composer_appears_is_kept(page: Page, app_server) -> None:
    # A fresh load of the app's address: the page moves itself on to the first agent's
    # chat (a new page, a new composer) about a second later.
    for attempt in range(4):
        for address in ("/", "/chat/assistant"):
            page.goto(f"{app_server.url}{address}", wait_until="commit")
            box = composer(page)
            box.wait_for(state="visible")
            box.type(f"early words {attempt}", delay=5)
            page.wait_for_timeout(2000)
            expect(page).to_have_url(re.compile(r"/chat/assistant$"))
            expect(box).to_have_value(f"early words {attempt}")
            box.fill("")
            page.wait_for_timeout(300)


def test_a_long_paste_keeps_send_on_screen_and_shows_the_cap(page: Page, app_server) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    open_new(page, app_server.url)
    composer(page).fill(("A line of a long pasted text. " * 3 + "\n") * 55)  # ~5 KB
    expect(page.get_by_test_id("send-button")).to_be_in_viewport(ratio=1)
    height = composer(page).bounding_box()["height"]
    assert height < 400, f"the composer grew to {height}px"
    composer(page).fill("x" * 30_000)
    count = page.get_by_test_id("composer-count")
    expect(count).to_be_visible()
    expect(count).to_have_attribute("data-count", "30,000 / 32,000")
    composer(page).fill("short")
    expect(page.get_by_test_id("composer-count")).to_be_hidden()
    composer(page).fill("")


def test_focus_on_load_esc_stops_and_a_stop_offers_continue(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    expect(composer(page)).to_be_focused()
    send(page, "Tell me everything /long")
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word3")
    page.keyboard.press("Escape")
    wait_idle(page)
    answer = answers(page).first
    expect(answer.get_by_test_id("message-status")).to_have_text("stopped")
    expect(answer.locator(".rt-CalloutRoot")).to_have_count(0)  # no red error callout
    page.get_by_test_id("continue-message").click()
    expect(answers(page)).to_have_count(2, timeout=20_000)
    expect(page.locator("[data-testid=message][data-role=user]").last).to_contain_text(
        "Continue from where you stopped"
    )
    expect(answers(page).last).to_contain_text("Tell me everything /long")  # it sees the rest


def test_new_conversation_shortcut_focuses_the_composer(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "Something to leave")
    wait_idle(page)
    page.get_by_test_id("new-conversation").first.hover()
    expect(page.get_by_role("tooltip")).to_contain_text("Ctrl+Shift+O")
    page.get_by_test_id("conversation-title").click()  # focus away from the composer
    page.keyboard.press("Control+Shift+O")
    expect(page).to_have_url(re.compile(r"/chat/assistant$"))
    expect(page.get_by_test_id("empty-hint")).to_be_visible()
    expect(composer(page)).to_be_focused()


def test_copy_says_copied(browser, app_server) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_server.url)
    page = context.new_page()
    open_new(page, app_server.url)
    send(page, "Copy me")
    wait_idle(page)
    answers(page).first.locator("..").get_by_test_id("copy-message").click()
    expect(page.get_by_test_id("copied-note")).to_be_visible()
    expect(page.get_by_test_id("copied-note")).to_be_hidden(timeout=5_000)
    context.close()


def test_the_tab_title_is_the_conversation_title_without_a_command(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    expect(page).to_have_title("New conversation · Lumina")
    send(page, "/long Planning the garden beds")
    wait_idle(page)
    title = page.get_by_test_id("conversation-title")
    expect(title).not_to_contain_text("/long")
    expect(page).to_have_title(re.compile(r"^Planning the garden.* · Lumina$"))


def test_an_unknown_address_has_the_apps_own_404_with_a_way_back(page: Page, app_server) -> None:
    page.goto(f"{app_server.url}/no/such/page")
    expect(page.get_by_test_id("not-found-page")).to_contain_text("no page here")
    page.get_by_test_id("back-home").click()
    expect(composer(page)).to_be_visible()
    icon = page.request.get(f"{app_server.url}/favicon.ico")
    assert icon.ok and icon.body()[:4] == b"\x00\x00\x01\x00"  # an .ico, not the 404 HTML


def test_words_for_people_in_the_empty_state_context_and_local_mode(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    expect(page.get_by_test_id("empty-hint")).not_to_contain_text("Send a message to start")
    send(page, "Hello")
    wait_idle(page)
    send(page, "Again")
    wait_idle(page)
    answers(page).last.locator("..").get_by_test_id("show-context").click()
    facts = page.get_by_test_id("context-dialog")
    expect(facts).to_contain_text("Same session")
    expect(facts).not_to_contain_text("continue ·")
    page.keyboard.press("Escape")
    page.goto(f"{app_server.url}/account")
    expect(page.get_by_test_id("back-to-chat")).to_be_visible()
    expect(page.get_by_test_id("sign-out")).to_have_count(0)


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    """A server of this test's own, to stop and start again."""
    server = AppServer(
        tmp_path_factory.mktemp("e2e-restart"),
        backend_only=False,
        env={"LUMINA_DEMO_DELAY_MS": "15", "LUMINA_REDIS_URL": ""},
    )
    server.start()
    yield server
    server.stop()


def test_a_lost_connection_shows_a_banner_and_an_unsent_message_waits_for_retry(
    browser, own_server
) -> None:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    open_new(page, own_server.url)
    send(page, "Before the cut")
    wait_idle(page)
    own_server.kill()
    banner = page.get_by_test_id("connection-banner")
    expect(banner).to_contain_text("Reconnecting")
    page.wait_for_timeout(1500)
    expect(page.get_by_text("Cannot connect to server")).to_have_count(0)
    send_box = page.get_by_test_id("send-button").bounding_box()
    top = banner.bounding_box()
    assert top["y"] + top["height"] <= send_box["y"], "the banner covers the composer"
    composer(page).fill("Sent while offline")
    composer(page).press("Enter")
    expect(page.get_by_test_id("unsent")).to_be_visible()
    expect(page.get_by_test_id("unsent")).to_contain_text("Not sent")
    expect(composer(page)).to_have_value("Sent while offline")
    shot(page, "connection-lost")
    own_server.start()
    expect(page.get_by_test_id("connection-back")).to_be_visible(timeout=60_000)
    expect(banner).to_be_hidden()
    page.wait_for_timeout(3000)  # nothing goes out on its own
    expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(1)
    expect(composer(page)).to_have_value("Sent while offline")
    page.get_by_test_id("retry-send").click()
    expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(2, timeout=20_000)
    expect(composer(page)).to_have_value("")
    expect(page.get_by_test_id("unsent")).to_be_hidden()
    context.close()


# A turn written into the conversation by another process while the page is cut off.
OFFLINE_TURN = """
import asyncio, sys
from lumina_app.cli_common import opened
from lumina_app.domain import LOCAL
from lumina_app.settings import Settings

async def main():
    async with opened(Settings()) as services:
        async for _ in services.runs.stream(
            LOCAL, agent_id="assistant", message=sys.argv[1], conversation_uuid=sys.argv[2]
        ):
            pass

asyncio.run(main())
"""


def test_the_open_conversation_is_read_again_when_the_connection_returns(
    browser, own_server
) -> None:
    """What happened while the page was cut off (here a turn written by another process)
    is on screen once the connection is back, without a reload."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    open_new(page, own_server.url)
    send(page, "Before the cut")
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    uuid = page.url.rsplit("/", 1)[-1]
    own_server.kill()
    expect(page.get_by_test_id("connection-banner")).to_contain_text("Reconnecting")
    subprocess.run(
        [str(VENV_BIN / "python"), "-c", OFFLINE_TURN, "Written while the page was away", uuid],
        env=own_server.env(), cwd=ROOT, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    own_server.start()
    expect(page.get_by_test_id("connection-back")).to_be_visible(timeout=60_000)
    users = page.locator("[data-testid=message][data-role=user]")
    expect(users).to_have_count(2, timeout=20_000)
    expect(users.last).to_contain_text("Written while the page was away")
    expect(answers(page)).to_have_count(2)
    context.close()


def test_a_send_the_server_does_not_take_in_4s_is_not_sent_and_never_goes_later(
    browser, own_server
) -> None:
    """The socket looks connected but the server does not answer (frozen): after 4 s the
    message is shown as not sent and kept in the composer; when the server wakes up it
    does not go out on its own; Retry sends it once."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    open_new(page, own_server.url)
    send(page, "Before the freeze")
    wait_idle(page)
    os.killpg(own_server.proc.pid, signal.SIGSTOP)
    try:
        composer(page).fill("Sent to a frozen server")
        composer(page).press("Enter")
        page.wait_for_timeout(2000)
        expect(page.get_by_test_id("unsent")).to_be_hidden()  # not yet: 4 s are given
        expect(page.get_by_test_id("unsent")).to_be_visible(timeout=6000)
        expect(page.get_by_test_id("unsent")).to_contain_text("Not sent")
        expect(composer(page)).to_have_value("Sent to a frozen server")
    finally:
        os.killpg(own_server.proc.pid, signal.SIGCONT)
    page.wait_for_timeout(4000)  # the server handles the queued send: it must not start it
    users = page.locator("[data-testid=message][data-role=user]")
    expect(users).to_have_count(1)
    expect(composer(page)).to_have_value("Sent to a frozen server")
    page.get_by_test_id("retry-send").click()
    expect(users).to_have_count(2, timeout=20_000)
    expect(users.last).to_contain_text("Sent to a frozen server")
    expect(composer(page)).to_have_value("")
    page.wait_for_timeout(1000)
    expect(users).to_have_count(2)  # once
    context.close()


def test_the_phone_action_row_wraps_and_the_title_keeps_its_room(browser, app_server) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    open_new(page, app_server.url)
    send(page, "A question from a phone about planting tomatoes in spring")
    wait_idle(page)
    page.get_by_test_id("regenerate-message").click()
    expect(page.get_by_test_id("version-label")).to_have_text("2 / 2", timeout=20_000)
    wait_idle_label = page.get_by_test_id("send-button")
    expect(wait_idle_label).to_be_visible()
    label = page.get_by_test_id("version-label").bounding_box()
    assert label["height"] < 24, f"'2 / 2' wraps: {label}"
    row = answers(page).last.locator("..").get_by_test_id("message-actions")
    box = row.bounding_box()
    assert box["x"] + box["width"] <= 390, f"the action row overflows: {box}"
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"page scrolls sideways: {width}px"
    time_text = answers(page).last.locator(".lumina-time:visible").first.inner_text()
    assert len(time_text) <= 8, f"the timestamp is long on a phone: {time_text!r}"
    title = page.get_by_test_id("conversation-title")
    room = title.evaluate("h => [h.scrollWidth, h.clientWidth]")
    assert room[0] <= room[1] or room[1] >= 200, f"the title has no room: {room}"
    shot(page, "phone")
    context.close()


def test_jump_to_latest_when_scrolled_up_and_back_down_on_send(page: Page, app_server) -> None:
    page.set_viewport_size({"width": 1440, "height": 600})
    open_new(page, app_server.url)
    for n in range(3):
        send(page, f"Turn {n} /long")
        wait_idle(page)
    page.evaluate("document.getElementById('message-list').scrollTop = -100000")
    jump = page.get_by_test_id("jump-latest")
    expect(jump).to_be_visible()
    jump.click()
    expect(jump).to_be_hidden()
    page.evaluate("document.getElementById('message-list').scrollTop = -100000")
    send(page, "The newest question")
    expect(page.locator("[data-testid=message][data-role=user]").last).to_be_in_viewport()
    wait_idle(page)


def test_pictures_at_desktop_and_phone_sizes(browser, app_server) -> None:
    """docs/screenshots: the chat at 1440×900 (a message waiting while an answer streams)
    and a stopped answer with Continue at 390×844."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    open_new(page, app_server.url)
    send(page, "Plan a vegetable garden for a small backyard")
    wait_idle(page)
    send(page, "Which of them grow well in shade? /long")
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word30")
    composer(page).fill("And what about herbs?")
    composer(page).press("Enter")
    expect(page.get_by_test_id("composer-hint")).to_be_visible()
    row = page.get_by_test_id("conversation-item").filter(has_text="Plan a vegetable garden")
    badge = row.first.get_by_text("running", exact=True).bounding_box()
    menu = row.first.get_by_test_id("conversation-menu").bounding_box()
    assert badge["x"] + badge["width"] <= menu["x"], "the running badge runs under the menu"
    shot(page, "chat")
    wait_idle(page)
    context.close()

    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    open_new(page, app_server.url)
    send(page, "Tell me about composting /long")
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word20")
    page.get_by_test_id("stop-button").click()
    wait_idle(page)
    expect(page.get_by_test_id("continue-message")).to_be_visible()
    shot(page, "phone-stopped")
    context.close()


def test_a_second_tab_following_the_answer_keeps_the_text_too(browser, app_server) -> None:
    """The same rule whoever started the run: a tab that only follows it keeps the text."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    first, second = context.new_page(), context.new_page()
    open_new(first, app_server.url)
    send(first, "Started in the first tab /long")
    expect(first).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    second.goto(first.url)
    expect(second.get_by_test_id("streaming-message")).to_be_visible()
    composer(second).fill("Typed in the second tab")
    composer(second).press("Enter")
    expect(second.get_by_test_id("composer-hint")).to_be_visible()
    second.wait_for_timeout(300)
    expect(composer(second)).to_have_value("Typed in the second tab")
    expect(second.get_by_test_id("send-button")).to_be_visible(timeout=20_000)
    expect(composer(second)).to_have_value("Typed in the second tab")
    context.close()
