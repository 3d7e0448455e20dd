"""A memory an outside agent keeps over MCP (#46) is on the Memory page, in a real browser,
with where it came from ("added over MCP by <client>"), and the page can correct it."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_chat_ui import shot
from tests.e2e.test_memories_ui import forget_everything
from tests.mcp_server.test_mcp_server import mcp_session

pytestmark = pytest.mark.e2e


def test_a_memory_kept_over_mcp_is_on_the_memory_page(page: Page, app_server) -> None:
    forget_everything(app_server.url)

    async def remember() -> str:
        async with mcp_session(app_server, None, client="Claude Code") as session:
            result = await session.call_tool(
                "remember", {"text": "The user deploys on Fly.io.", "agent": "assistant"}
            )
            assert not result.is_error, result.content
            return result.content[0].text

    try:
        # Playwright's sync API holds this thread's event loop: the MCP client gets its own
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            said = pool.submit(asyncio.run, remember()).result(timeout=60)
        assert "Fly.io" in said
        page.goto(f"{app_server.url}/memories")
        row = page.get_by_test_id("memory-row").filter(has_text="The user deploys on Fly.io.")
        expect(row).to_be_visible()
        expect(row.get_by_test_id("memory-origin")).to_have_text("added over MCP by Claude Code")
        shot(page, "memory-mcp")
    finally:
        forget_everything(app_server.url)
