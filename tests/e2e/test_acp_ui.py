"""An ``acp`` agent in the chat UI: the echo agent (tests/acp/echo_agent.py) streams its
thinking and its own tool's card, and a permission request (policy ``ask``) shows its
options as buttons on the request's card; a click answers it and the run goes on."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.acp.helpers import echo_agent
from tests.e2e.test_chat_ui import answers, open_new, send

pytestmark = pytest.mark.e2e


def test_an_acp_agent_streams_and_asks_for_permission(page: Page, app_server) -> None:
    echo_agent(app_server.data_dir, "echo-ui", permissions="ask")
    open_new(page, app_server.url, "echo-ui")
    send(page, "/think /tool /permission")
    request = page.locator("[data-testid=tool-card][data-tool='permission: edit notes.md']")
    expect(request).to_have_attribute("data-status", "running")
    expect(page.locator("[data-testid=tool-card][data-tool='list files']")).to_have_attribute(
        "data-status", "done"
    )
    options = page.get_by_test_id("permission-option")
    expect(options).to_have_count(2)
    expect(options.first).to_have_text("Allow")
    options.first.click()
    expect(answers(page).last).to_contain_text("permission=yes", timeout=20_000)
    expect(options).to_have_count(0)
    expect(request).to_have_attribute("data-status", "done")
    expect(answers(page).last.get_by_test_id("thinking")).to_contain_text("pondering")
