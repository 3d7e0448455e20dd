"""The Import page in a real browser (issue #47): a ChatGPT export picked, previewed,
imported with progress and a result; its conversations in the sidebar with an HTML title
shown as text; a pasted memory block on the Memory page. Desktop and phone sizes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import shot

pytestmark = pytest.mark.e2e
FIXTURES = Path(__file__).parents[1] / "fixtures" / "imports"


def _clean_up(base: str) -> None:
    """The app server is shared by the browser tests: leave nothing to the others."""
    with httpx.Client(base_url=base, timeout=30) as api:
        listed = api.get("/api/v1/conversations", params={"limit": 100}).json()["items"]
        for conversation in listed:
            if conversation["title"] in ("Capitals <b>quiz</b>", "<script>alert(1)</script> Plot"):
                api.delete(f"/api/agent/assistant/conversations/{conversation['uuid']}")
        api.post("/api/v1/memories/forget")


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_a_chatgpt_export_is_previewed_and_imported(page: Page, app_server, size) -> None:
    page.set_viewport_size({"width": size[0], "height": size[1]})
    _clean_up(app_server.url)
    try:
        page.goto(f"{app_server.url}/import")
        expect(page.get_by_test_id("import-start")).to_be_visible()
        page.locator("[data-testid=import-picker] input[type=file]").set_input_files(
            str(FIXTURES / "chatgpt_conversations.json")
        )
        expect(page.get_by_test_id("import-picker")).to_contain_text("chatgpt_conversations.json")
        page.get_by_test_id("import-preview-button").click()
        preview = page.get_by_test_id("import-preview")
        expect(preview).to_contain_text("2 conversations, 6 messages, 2025-01-01 to 2025-02-01")
        expect(page.get_by_text("<script>alert(1)</script> Plot")).to_be_visible()
        shot(page, f"import-preview-{size[0]}")
        page.get_by_test_id("import-start").click()
        notice = page.get_by_test_id("notice")
        expect(notice).to_contain_text("2 conversations added", timeout=20_000)
        shot(page, f"import-result-{size[0]}")
        page.get_by_test_id("import-start").click()  # the same file again: nothing twice
        expect(notice).to_contain_text("0 conversations added, 2 skipped", timeout=20_000)

        page.get_by_test_id("import-facts").fill("- Prefers metric units\n- Lives in Lyon")
        page.get_by_test_id("import-remember").click()
        expect(notice).to_contain_text("2 memories added", timeout=20_000)
        page.goto(f"{app_server.url}/memories")
        expect(page.get_by_test_id("memory-row")).to_have_count(2)
        expect(page.get_by_text("imported from ChatGPT").first).to_be_visible()

        page.goto(f"{app_server.url}/chat/assistant")
        if size[0] < 700:  # the sidebar is a drawer on a phone
            page.get_by_test_id("open-drawer").click()
            expect(page.get_by_test_id("drawer")).to_be_visible()
            page.wait_for_timeout(600)  # its slide-in, for the picture
        title = page.get_by_text("<script>alert(1)</script> Plot").last
        expect(title).to_be_visible()
        expect(page.get_by_test_id("link-import").last).to_have_attribute("href", "/import")
        shot(page, f"import-sidebar-{size[0]}")
    finally:
        _clean_up(app_server.url)
