"""The Memory page shows a fact's history in a real browser (issue #42): a measure told in
one conversation and changed in a later one is listed once, current, with a small
"history" line that opens onto the earlier text and its dates; an edit marked "it changed"
adds to that history. At desktop and phone sizes."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import open_new, send, shot, wait_idle
from tests.e2e.test_memories_ui import forget_everything

pytestmark = pytest.mark.e2e
DAY = r"\d{4}-\d{2}-\d{2}"


def test_a_changed_fact_shows_its_history(page: Page, app_server) -> None:
    forget_everything(app_server.url)
    try:
        open_new(page, app_server.url)
        send(page, "My dashboard API averages 400 ms.")
        wait_idle(page)
        open_new(page, app_server.url)
        send(page, "The dashboard API now averages 250 ms after the caching change.")
        wait_idle(page)
        page.get_by_test_id("link-memories").click()
        rows = page.get_by_test_id("memory-row")
        for _ in range(20):  # the extractor writes in the background, after the answer
            if rows.filter(has_text="250 ms").count() == 1:
                break
            page.wait_for_timeout(250)
            page.reload()
        expect(rows).to_have_count(1)
        row = rows.first
        expect(row.get_by_test_id("memory-text")).to_have_text(
            "The user's dashboard API averages 250 ms after the caching change."
        )
        toggle = row.get_by_test_id("memory-history-toggle")
        expect(toggle).to_contain_text("history: 1 earlier")
        version = row.get_by_test_id("memory-version")
        expect(version).to_be_hidden()  # folded until asked
        toggle.click()
        expect(version).to_contain_text("The user's dashboard API averages 400 ms.")
        expect(version).to_contain_text(re.compile(rf"from {DAY} until {DAY}"))
        shot(page, "memory-history")

        row.get_by_test_id("memory-edit").click()
        page.get_by_test_id("memory-edit-text").fill("The user's dashboard API averages 180 ms.")
        page.get_by_test_id("memory-edit-supersede").check()
        page.get_by_test_id("memory-save").click()
        expect(page.get_by_test_id("notice")).to_contain_text("kept as history")
        expect(rows).to_have_count(1)
        expect(rows.first.get_by_test_id("memory-history-toggle")).to_contain_text(
            "history: 2 earlier"
        )
        opened = rows.first.get_by_test_id("memory-history")
        if opened.get_attribute("open") is None:  # React may keep the row's one open
            rows.first.get_by_test_id("memory-history-toggle").click()
        versions = rows.first.get_by_test_id("memory-version")
        expect(versions).to_have_count(2)
        expect(versions.first).to_contain_text("250 ms")  # newest first
        expect(versions.last).to_contain_text("400 ms")
        shot(page, "memory-history-two")
        page.set_viewport_size({"width": 390, "height": 844})
        expect(versions.last).to_be_visible()
        shot(page, "memory-history-phone")
        rows.first.get_by_test_id("memory-edit").click()
        expect(page.get_by_test_id("memory-edit-supersede")).to_be_visible()
        shot(page, "memory-history-phone-edit")
    finally:
        forget_everything(app_server.url)
