"""The page of a conversation's messages on screen: the latest ones, or those around a
message a search found, and paging either way from there. Holds views only; every page
comes from the conversation service."""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import ConversationInfo, NotFound
from lumina_app.services.conversations import MessagePage
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.tool_views import pair_results
from lumina_app.ui.view_models.versions import arrange, choices, show
from lumina_app.ui.view_models.views import MessageView, message_view

PAGE_SIZE = 40
# The list a long session keeps on screen is bounded too: every turn re-sends it once.
MAX_VISIBLE = 2 * PAGE_SIZE
# When a page opens at a message, this many messages come before it.
CONTEXT_BEFORE = 10


class HistoryState(AppState):
    # One view per stored row, as paged and arranged (the page is sent ``messages``).
    _rows: list[MessageView] = []
    has_older: bool = False
    has_newer: bool = False
    focus_seq: int = 0  # the message a search opened, highlighted until the next page load
    # A fork's original: its title and address ("" when not a fork; no address when the
    # original was deleted).
    parent_title: str = ""
    parent_url: str = ""

    async def _link_parent(self, conversation: ConversationInfo) -> None:
        self.parent_title, self.parent_url = "", ""
        if conversation.parent_uuid is None:
            return
        try:
            parent = await self._services().conversations.get(
                self._caller(), conversation.parent_uuid
            )
        except NotFound:
            self.parent_title = "a deleted conversation"
            return
        self.parent_title = parent.title or "Untitled"
        self.parent_url = chat_url(parent.agent_id, parent.uuid)

    def _show(self, page: MessagePage, *, newest: bool) -> None:
        self._rows = arrange(pair_results(_views(page)))
        self.has_older = page.next_before is not None
        self.has_newer = not newest and page.next_after is not None

    async def _open(self, conversation: ConversationInfo, seq: int) -> rx.event.EventSpec | None:
        """Show the latest page, or the one around ``seq`` (scrolled to it)."""
        conversations = self._services().conversations
        if 0 < seq <= conversation.last_seq - PAGE_SIZE:
            page = await conversations.page(
                conversation, limit=PAGE_SIZE, after=max(0, seq - CONTEXT_BEFORE - 1)
            )
            self._show(page, newest=False)
        else:
            page = await conversations.page(
                conversation, limit=PAGE_SIZE, before=conversation.last_seq + 1
            )
            self._show(page, newest=True)
        self.focus_seq = seq if any(m["seq"] == seq for m in self._rows) else 0
        if not self.focus_seq:
            return None
        return rx.call_script(
            f"document.getElementById('msg-{seq}')?.scrollIntoView({{block: 'center'}})"
        )

    @rx.event
    async def load_older(self) -> None:
        if self._rows and self.conversation_id:
            _conversation, page = await self._services().conversations.messages(
                self._caller(),
                self.conversation_id,
                limit=PAGE_SIZE,
                before=self._rows[0]["seq"],
            )
            self.has_older = page.next_before is not None
            rows = pair_results(_views(page) + self._rows)
            self._rows = arrange(rows, choices(self._rows))

    @rx.event
    async def load_newer(self) -> None:
        if self._rows and self.conversation_id:
            _conversation, page = await self._services().conversations.messages(
                self._caller(),
                self.conversation_id,
                limit=PAGE_SIZE,
                after=self._rows[-1]["seq"],
            )
            self.has_newer = page.next_after is not None
            rows = pair_results(self._rows + _views(page))
            self._rows = arrange(rows, choices(self._rows))

    @rx.event
    def show_version(self, turn: str, version: int) -> None:
        """The "n / m" switcher: another version of an answer, read-only."""
        self._rows = show(self._rows, turn, version)

    async def _reopen(self) -> None:
        """Read the open conversation's latest page again (after its branches changed)."""
        conversation = await self._services().conversations.get(
            self._caller(), self.conversation_id
        )
        await self._open(conversation, 0)

    async def _jump_to_latest(self) -> None:
        """Before a new turn is added at the end: the end must be what is on screen."""
        if self.has_newer and self.conversation_id:
            _conversation, page = await self._services().conversations.latest(
                self._caller(), self.conversation_id, limit=PAGE_SIZE, agent_id=None
            )
            self._show(page, newest=True)
            self.focus_seq = 0


def _views(page: MessagePage) -> list[MessageView]:
    return [message_view(m, page.branches.get(m.seq)) for m in page.items]
