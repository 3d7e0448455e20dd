"""The sidebar: agents, the open agent's conversations (search, paging), rename, delete."""

from __future__ import annotations

import contextlib

import reflex as rx

from lumina_app.composition import get_services
from lumina_app.domain import NotFound
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.views import UI_OWNER, ConversationView, conversation_view

LIST_PAGE = 30


class SidebarState(rx.State):
    agents: list[dict[str, str]] = []
    conversations: list[ConversationView] = []
    next_cursor: str = ""
    search: str = ""
    drawer_open: bool = False
    rename_id: str = ""
    rename_title: str = ""
    delete_id: str = ""
    delete_title: str = ""

    async def _agent_id(self) -> str:
        return (await self.get_state(ChatState)).agent_id

    @rx.event
    async def refresh(self) -> None:
        services = get_services()
        self.agents = [
            {"id": a.id, "name": a.name if a.available else f"{a.name} (unavailable)"}
            for a in services.registry.list()
        ]
        agent_id = await self._agent_id()
        if not agent_id:
            self.conversations, self.next_cursor = [], ""
            return
        items, cursor = await services.memory.list_conversations(
            agent_id=agent_id, owner=UI_OWNER, limit=LIST_PAGE, search=self.search or None
        )
        self.conversations = [conversation_view(c) for c in items]
        self.next_cursor = cursor or ""

    @rx.event
    async def load_more(self) -> None:
        if not self.next_cursor:
            return
        items, cursor = await get_services().memory.list_conversations(
            agent_id=await self._agent_id(),
            owner=UI_OWNER,
            limit=LIST_PAGE,
            cursor=self.next_cursor,
            search=self.search or None,
        )
        self.conversations = self.conversations + [conversation_view(c) for c in items]
        self.next_cursor = cursor or ""

    @rx.event
    async def set_search(self, value: str):
        self.search = value.strip()
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
        memory = get_services().memory
        try:
            conversation = await memory.get_conversation(conversation_id, owner=UI_OWNER)
        except NotFound:
            return SidebarState.refresh
        await memory.rename(conversation, title)
        chat = await self.get_state(ChatState)
        if chat.conversation_id == conversation_id:
            chat.title = title
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
        memory = get_services().memory
        with contextlib.suppress(NotFound):  # already gone is fine
            await memory.delete(await memory.get_conversation(conversation_id, owner=UI_OWNER))
        chat = await self.get_state(ChatState)
        if chat.conversation_id == conversation_id:
            return rx.redirect(chat_url(chat.agent_id))
        return SidebarState.refresh
