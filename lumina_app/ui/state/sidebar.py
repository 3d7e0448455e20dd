"""The sidebar: agents, the person's conversations of every agent (an agent filter,
search, paging; pinned on top, archived apart), rename, delete, pin, archive, export."""

from __future__ import annotations

import contextlib
import json

import reflex as rx

from lumina_app.domain import ConversationInfo, InvalidInput, NotFound
from lumina_app.domain.search import is_question
from lumina_app.services.conversations import MAX_SEARCH_CHARS, ExportFormat
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.views import ConversationView, HitView, conversation_view, hit_view

LIST_PAGE = 30
PINNED = 50  # pinned ones are listed whole, up to this many
HITS = 8
ALL_AGENTS = "all"  # the agent filter's "every agent" (a select item needs a value)
_MIME = {
    ExportFormat.JSON: "application/json",
    ExportFormat.MD: "text/markdown",
    ExportFormat.ARCHIVE: "application/zip",
}


class SidebarState(AppState):
    agents: list[dict[str, str]] = []
    pinned: list[ConversationView] = []
    conversations: list[ConversationView] = []  # the rest; while searching: every match
    archived: list[ConversationView] = []
    show_archived: bool = False
    agent_filter: str = ALL_AGENTS
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
        await self._load_sections()
        await self._load_page(None)
        if self.search:
            await self._find_messages()

    @rx.event
    async def follow(self, kind: str = "", conversation: str = "") -> None:
        """A live change (``kind`` to ``conversation``: created, renamed, deleted, a run's
        status) of any agent's conversation: the list again with as many rows as it shows
        — one more for a new one it did not show — so the pages fetched with "Load more"
        stay (one query; the order may have changed, so patching one row in place would
        not be enough)."""
        shown_anywhere = self.pinned + self.conversations + self.archived
        new = kind in ("created", "forked", "run") and all(
            c["uuid"] != conversation for c in shown_anywhere
        )
        shown = max(len(self.conversations) + new, LIST_PAGE)
        self.conversations, self.next_cursor = [], ""
        await self._load_sections()
        await self._load_page(None, limit=shown)

    @rx.event
    async def load_more(self) -> None:
        if self.next_cursor:
            await self._load_page(self.next_cursor)

    def _views(self, items: list[ConversationInfo]) -> list[ConversationView]:
        names = {a["id"]: a["name"] for a in self.agents}
        return [conversation_view(c, names.get(c.agent_id, "")) for c in items]

    def _filter(self) -> str | None:
        return None if self.agent_filter == ALL_AGENTS else self.agent_filter

    async def _load_sections(self) -> None:
        """Pinned (on top) and, when shown, archived; none of them while searching: the
        search's one list has every match, archived ones too."""
        if self.search:
            self.pinned, self.archived = [], []
            return
        listing = self._services().conversations.list
        caller, agent_id = self._caller(), self._filter()
        pinned, _ = await listing(
            caller, agent_id=agent_id, limit=PINNED, pinned=True, archived=False
        )
        self.pinned = self._views(pinned)
        archived: list[ConversationInfo] = []
        if self.show_archived:
            archived, _ = await listing(caller, agent_id=agent_id, limit=LIST_PAGE, archived=True)
        self.archived = self._views(archived)

    async def _load_page(self, cursor: str | None, *, limit: int = LIST_PAGE) -> None:
        searching = bool(self.search)
        items, next_cursor = await self._services().conversations.list(
            self._caller(),
            agent_id=self._filter(),
            limit=limit,
            cursor=cursor,
            search=self.search or None,
            pinned=None if searching else False,
            archived=None if searching else False,
        )
        self.conversations = self.conversations + self._views(items)
        self.next_cursor = next_cursor or ""

    async def _find_messages(self) -> None:
        """Messages matching the search (the list above filters whole conversations): a
        question is answered by ranked recall, a few words by the word-for-word search."""
        services = self._services()
        finder = services.recall if is_question(self.search) else services.search
        caller = self._caller()
        try:
            found = await finder.everywhere(
                caller, self.search, agent_id=self._filter(), limit=HITS
            )
        except InvalidInput:  # no word to look for (only punctuation, say)
            found = []
        # A hit opens under its conversation's own agent.
        agent_of = {c["uuid"]: c["agent_id"] for c in self.conversations}
        views = []
        for hit in found:
            if hit.conversation_uuid not in agent_of:
                with contextlib.suppress(NotFound):  # deleted meanwhile
                    conversation = await services.conversations.get(caller, hit.conversation_uuid)
                    agent_of[conversation.uuid] = conversation.agent_id
            if hit.conversation_uuid in agent_of:
                views.append(hit_view(hit, agent_of[hit.conversation_uuid]))
        self.hits = views

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
    def set_agent_filter(self, value: str):
        known = value == ALL_AGENTS or any(a["id"] == value for a in self.agents)
        self.agent_filter = value if known else ALL_AGENTS
        return SidebarState.refresh

    @rx.event
    def set_show_archived(self, value: bool):
        self.show_archived = bool(value)
        return SidebarState.refresh

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

    # -- pin, archive, export ------------------------------------------------------

    @rx.event
    async def set_pinned(self, conversation_id: str, value: bool):
        return await self._organize(conversation_id, pinned=bool(value))

    @rx.event
    async def set_archived(self, conversation_id: str, value: bool):
        return await self._organize(conversation_id, archived=bool(value))

    async def _organize(self, conversation_id: str, **change: bool):
        with contextlib.suppress(NotFound, InvalidInput):  # gone meanwhile, or not an id
            await self._services().conversations.organize(self._caller(), conversation_id, **change)
        return SidebarState.refresh

    @rx.event
    async def export(self, conversation_id: str, export_format: str):
        """The conversation as a download: Markdown, the archive's JSON, or its zip."""
        try:
            chosen = ExportFormat(export_format)
            export = await self._services().conversations.export(
                self._caller(), conversation_id, chosen
            )
        except (ValueError, NotFound, InvalidInput):  # a crafted format, or gone meanwhile
            return None
        body = export.body
        if chosen is ExportFormat.JSON:
            body = json.dumps(body, ensure_ascii=False, indent=2)
        return rx.download(data=body, filename=export.filename, mime_type=_MIME[chosen])
