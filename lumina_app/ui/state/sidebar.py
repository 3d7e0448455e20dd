"""The sidebar: agents, the open agent's conversations (search, paging), rename, delete."""

from __future__ import annotations

import contextlib

import reflex as rx

from lumina_app.domain import InvalidInput, NotFound
from lumina_app.domain.search import is_question
from lumina_app.services.conversations import MAX_SEARCH_CHARS
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.views import ConversationView, HitView, conversation_view, hit_view

LIST_PAGE = 30
HITS = 8


class SidebarState(AppState):
    agents: list[dict[str, str]] = []
    conversations: list[ConversationView] = []
    hits: list[HitView] = []
    next_cursor: str = ""
    search: str = ""
    drawer_open: bool = False
    rename_id: str = ""
    rename_title: str = ""
    delete_id: str = ""
    delete_title: str = ""

    @rx.event
    async def refresh(self) -> None:
        services = self._services()
        self.agents = [
            {"id": a.id, "name": a.name if a.available else f"{a.name} (unavailable)"}
            for a in services.agents.list()
        ]
        self.conversations, self.next_cursor, self.hits = [], "", []
        if self.agent_id:
            await self._load_page(None)
            if self.search:
                await self._find_messages()

    @rx.event
    async def follow(self, kind: str = "", conversation: str = "") -> None:
        """A live change (``kind`` to ``conversation``: created, renamed, deleted, a run's
        status): the list again with as many rows as it shows — one more for a new one it
        did not show — so the pages fetched with "Load more" stay (one query; the order
        may have changed, so patching one row in place would not be enough)."""
        if not self.agent_id:
            return
        new = kind in ("created", "forked", "run") and all(
            c["uuid"] != conversation for c in self.conversations
        )
        shown = max(len(self.conversations) + new, LIST_PAGE)
        self.conversations, self.next_cursor = [], ""
        await self._load_page(None, limit=shown)

    @rx.event
    async def load_more(self) -> None:
        if self.next_cursor:
            await self._load_page(self.next_cursor)

    async def _load_page(self, cursor: str | None, *, limit: int = LIST_PAGE) -> None:
        items, next_cursor = await self._services().conversations.list(
            self._caller(),
            agent_id=self.agent_id,
            limit=limit,
            cursor=cursor,
            search=self.search or None,
        )
        self.conversations = self.conversations + [conversation_view(c) for c in items]
        self.next_cursor = next_cursor or ""

    async def _find_messages(self) -> None:
        """Messages matching the search (the list above filters whole conversations): a
        question is answered by ranked recall, a few words by the word-for-word search."""
        services = self._services()
        finder = services.recall if is_question(self.search) else services.search
        try:
            found = await finder.everywhere(
                self._caller(), self.search, agent_id=self.agent_id, limit=HITS
            )
        except InvalidInput:  # no word to look for (only punctuation, say)
            found = []
        self.hits = [hit_view(h, self.agent_id) for h in found]

    @rx.event
    async def set_search(self, value: str):
        # The box is capped too; this guards a crafted event that sends more.
        self.search = value.strip()[:MAX_SEARCH_CHARS]
        return SidebarState.refresh

    @rx.event
    def pick_agent(self, agent_id: str):
        self.search = ""
        return rx.redirect(chat_url(agent_id))

    @rx.event
    def set_drawer_open(self, value: bool) -> None:
        self.drawer_open = value

    # -- rename --------------------------------------------------------------------

    @rx.event
    def start_rename(self, conversation_id: str, title: str) -> None:
        self.rename_id, self.rename_title = conversation_id, title

    @rx.event
    def cancel_rename(self) -> None:
        self.rename_id = ""

    @rx.event
    async def save_rename(self, form: dict):
        title = str(form.get("title") or "").strip()[:255]
        conversation_id, self.rename_id = self.rename_id, ""
        if not title or not conversation_id:
            return
        with contextlib.suppress(NotFound, InvalidInput):  # gone meanwhile, or unstorable
            renamed = await self._services().conversations.rename(
                self._caller(), conversation_id, title
            )
            if self.conversation_id == conversation_id:
                self.title = renamed.title
        return SidebarState.refresh

    # -- delete --------------------------------------------------------------------

    @rx.event
    def ask_delete(self, conversation_id: str, title: str) -> None:
        self.delete_id, self.delete_title = conversation_id, title

    @rx.event
    def cancel_delete(self) -> None:
        self.delete_id = ""

    @rx.event
    async def confirm_delete(self):
        conversation_id, self.delete_id = self.delete_id, ""
        with contextlib.suppress(NotFound):  # already gone is fine
            await self._services().conversations.delete(self._caller(), conversation_id)
        if self.conversation_id == conversation_id:
            return rx.redirect(chat_url(self.agent_id))
        return SidebarState.refresh
