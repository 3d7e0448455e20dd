"""The chat UI in a real browser: send, stream, reload, switch, rename, delete, search,
stop, a 375 px phone layout, inert HTML — and screenshots of the main views."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e
# The README's pictures are refreshed on request (LUMINA_UPDATE_SCREENSHOTS=1); otherwise
# screenshots go to a scratch folder so a test run leaves the work tree clean.
SHOTS = (
    ROOT / "docs" / "screenshots"
    if os.environ.get("LUMINA_UPDATE_SCREENSHOTS")
    else Path(tempfile.gettempdir()) / "lumina-e2e-screenshots"
)


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def open_new(page: Page, base: str, agent: str = "assistant") -> None:
    page.goto(f"{base}/chat/{agent}")
    expect(page.get_by_test_id("composer")).to_be_visible()


def only_agent(page: Page, name: str) -> None:
    """The sidebar's agent filter: the list spans every agent's conversations by default."""
    page.get_by_test_id("agent-filter").click()
    page.get_by_role("option", name=name, exact=True).click()
    expect(page.get_by_test_id("agent-filter")).to_contain_text(name)


def answers(page: Page):
    return page.locator("[data-testid=message][data-role=assistant]")


def send(page: Page, text: str) -> None:
    """Send, and wait until the question is on screen (the answer may still stream)."""
    page.answers_before = answers(page).count()
    page.get_by_test_id("composer").fill(text)
    page.get_by_test_id("composer").press("Enter")
    expect(
        page.locator("[data-testid=pending-message], [data-testid=message][data-role=user]").last
    ).to_contain_text(text[:20])


def wait_idle(page: Page) -> None:
    """Until the answer to the last question has settled into the list."""
    expect(answers(page)).to_have_count(page.answers_before + 1, timeout=20_000)
    expect(page.get_by_test_id("send-button")).to_be_visible()


def test_two_turns_stream_and_the_second_answer_remembers_the_first(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "My name is Ada and I like 你好 👋")  # waits for the question on screen
    streaming = page.get_by_test_id("streaming-message")
    expect(streaming).to_contain_text("offline demo model")  # text arrives while streaming
    expect(page.get_by_test_id("stop-button")).to_be_visible()
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    expect(answers(page)).to_have_count(1)
    expect(answers(page).first).to_contain_text("I see no earlier messages")

    send(page, "What is my name?")
    wait_idle(page)
    expect(answers(page)).to_have_count(2)
    second = answers(page).nth(1)
    expect(second).to_contain_text("I can see 2 earlier messages")
    expect(second).to_contain_text("My name is Ada")
    shot(page, "chat")

    page.reload()
    expect(page.locator("[data-testid=message]")).to_have_count(4)
    expect(answers(page).nth(1)).to_contain_text("I can see 2 earlier messages")
    expect(page.get_by_test_id("conversation-title")).to_contain_text("My name is Ada")


def test_markdown_renders_and_html_stays_inert(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    payload = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> /markdown'
    send(page, payload)
    wait_idle(page)
    answer = answers(page).first
    expect(answer.locator("table")).to_have_count(1)
    expect(answer.locator("pre")).to_have_count(1)
    expect(page.locator("[data-testid=message][data-role=user]").first).to_contain_text("<script>")
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".lumina-message img").count() == 0


def test_switch_rename_search_and_delete(page: Page, app_server) -> None:
    open_new(page, app_server.url, agent="socrates")
    send(page, "Why is the sky blue?")
    wait_idle(page)
    first_url = page.url
    page.get_by_test_id("new-conversation").click()
    expect(page).to_have_url(re.compile(r"/chat/socrates$"))
    expect(answers(page)).to_have_count(0)  # the new, empty conversation is on screen
    send(page, "Teach me about prime numbers")
    wait_idle(page)
    second_url = page.url
    assert first_url != second_url

    only_agent(page, "Socrates")
    # This test's two rows (other tests on the shared server may have Socrates's too).
    items = page.get_by_test_id("conversation-item").filter(
        has_text=re.compile("prime numbers|sky blue|Sky colours")
    )
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("prime numbers")  # newest first

    items.nth(1).get_by_test_id("conversation-link").click()
    expect(page).to_have_url(first_url)
    user_messages = page.locator("[data-testid=message][data-role=user]")
    expect(user_messages).to_contain_text(["Why is the sky blue?"])

    items.nth(1).get_by_test_id("conversation-menu").click()
    page.get_by_role("menuitem", name="Rename").click()
    page.get_by_test_id("rename-input").fill("Sky colours")
    page.get_by_test_id("rename-save").click()
    expect(page.get_by_test_id("conversation-title")).to_have_text("Sky colours")
    expect(items.nth(1)).to_contain_text("Sky colours")

    page.get_by_test_id("search-input").fill("prime")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("prime numbers")
    page.get_by_test_id("search-input").fill("")
    expect(items).to_have_count(2)
    shot(page, "sidebar")

    items.first.get_by_test_id("conversation-menu").click()
    page.get_by_role("menuitem", name="Delete").click()
    page.get_by_test_id("delete-confirm").click()
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Sky colours")


def test_stop_mid_stream_keeps_the_partial_answer(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "Please write a lot /long")
    streaming = page.get_by_test_id("streaming-message")
    expect(streaming).to_contain_text("word5")
    page.get_by_test_id("stop-button").click()
    wait_idle(page)
    answer = answers(page).first
    expect(answer.get_by_test_id("message-status")).to_have_text("stopped")
    expect(answer).to_contain_text("word5")
    assert "word399" not in answer.inner_text()
    page.reload()
    expect(answers(page).first.get_by_test_id("message-status")).to_have_text("stopped")


def test_reload_while_streaming_reattaches(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "Another long one /long")
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word3")
    page.reload()
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word3")
    wait_idle(page)
    expect(answers(page).first).to_contain_text("word399")


def test_failed_answer_is_shown_plainly_and_the_composer_is_free(page: Page, app_server) -> None:
    open_new(page, app_server.url)
    send(page, "please /fail")
    wait_idle(page)
    answer = answers(page).first
    expect(answer.get_by_test_id("message-status")).to_have_text("failed")
    expect(answer).to_contain_text("simulated provider failure")
    send(page, "and now a normal one")
    wait_idle(page)
    expect(answers(page)).to_have_count(2)


def test_phone_layout_has_a_drawer(browser, app_server) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    open_new(page, app_server.url)
    expect(page.get_by_test_id("sidebar")).to_be_hidden()
    send(page, "Hello from a phone, with a long line that must wrap nicely on a small screen")
    wait_idle(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"page scrolls sideways: {width}px"
    shot(page, "phone")
    page.get_by_test_id("open-drawer").click()
    drawer = page.get_by_test_id("drawer")
    expect(drawer).to_be_visible()
    expect(drawer.get_by_test_id("conversation-item").first).to_be_visible()
    page.wait_for_timeout(600)  # let the slide-in animation finish before the picture
    shot(page, "phone-drawer")
    context.close()
    assert errors == []


def test_unknown_conversation_says_so(page: Page, app_server) -> None:
    page.goto(f"{app_server.url}/chat/assistant/00000000-0000-0000-0000-000000000000")
    expect(page.get_by_test_id("not-found")).to_contain_text("does not exist")


# What a colour computes to, as sRGB 0-255 (a 1-pixel canvas reads any CSS colour syntax),
# for an element's text and the first opaque background behind it (the page's if none).
COLOURS = """el => {
    const rgba = c => {
        const ctx = document.createElement("canvas").getContext("2d");
        ctx.fillStyle = c;
        ctx.fillRect(0, 0, 1, 1);
        return Array.from(ctx.getImageData(0, 0, 1, 1).data);
    };
    let behind = el, background = [255, 255, 255, 255];
    for (; behind; behind = behind.parentElement) {
        const c = rgba(getComputedStyle(behind).backgroundColor);
        if (c[3] === 255) { background = c; break; }
    }
    return {text: rgba(getComputedStyle(el).color).slice(0, 3), background: background.slice(0, 3),
            behind: behind ? behind.tagName + "." + behind.className : "none"};
}"""


def luminance(rgb: list[int]) -> float:
    """WCAG relative luminance, 0 (black) to 1 (white)."""
    c = [v / 255 for v in rgb]
    c = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]


def test_dark_mode_screenshot(page: Page, app_server) -> None:
    page.emulate_media(color_scheme="dark")
    open_new(page, app_server.url)
    send(page, "Show me some code /markdown")
    wait_idle(page)
    shot(page, "chat-dark")
    for where in (answers(page).last, page.get_by_test_id("composer")):
        colours = where.evaluate(COLOURS)
        text, background = luminance(colours["text"]), luminance(colours["background"])
        assert background < 0.05, f"not a dark background: {colours}"
        assert text > 0.4, f"not light text: {colours}"
        assert (text + 0.05) / (background + 0.05) >= 4.5, colours  # WCAG AA contrast


def test_long_history_pages_in_as_you_scroll_up(page: Page, app_server) -> None:
    import httpx

    with httpx.Client(base_url=app_server.url, timeout=30) as api:
        first = api.post("/api/v1/agents/assistant/execute/sync", json={"task": "turn 0"}).json()
        conv = first["conversationId"]
        for n in range(1, 45):
            api.post(
                "/api/v1/agents/assistant/execute/sync",
                json={"task": f"turn {n}", "conversationId": conv},
            )
    page.goto(f"{app_server.url}/chat/assistant/{conv}")
    messages = page.get_by_test_id("message")
    expect(messages).to_have_count(40)  # the latest page only
    expect(messages.last).to_contain_text("turn 44")
    page.locator("#message-list").evaluate("el => el.scrollTo(0, -el.scrollHeight)")
    expect(messages).to_have_count(80)  # scrolling up loaded the page before
    page.locator("#message-list").evaluate("el => el.scrollTo(0, -el.scrollHeight)")
    expect(messages).to_have_count(90)  # and the rest: all 45 turns
    expect(messages.first).to_contain_text("turn 0")
    expect(page.locator("#load-older")).to_have_count(0)
