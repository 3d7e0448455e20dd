"""A message's actions that open another conversation: fork here, and edit a question.

Both go through the same services as REST: fork is ``POST …/fork``; edit is the recipe
docs/API.md gives clients — fork just before the question, send the new text there —
and then opens the fork, whose page follows the run already going. The original
conversation is never changed by an edit.
"""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import LuminaError
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.view_models.views import explain


class MessageActions(AppState):
    editing: bool = False  # the edit dialog is open
    edit_seq: int = 0
    edit_text: str = ""
    failed: str = ""
    busy: bool = False  # a fork or edit is under way: one at a time

    @rx.event
    async def fork_here(self, seq: int):
        """A new conversation with this one's messages up to ``seq``, opened."""
        return await self._fork(seq, "")

    @rx.event
    def start_edit(self, seq: int, text: str) -> None:
        self.editing, self.edit_seq, self.edit_text, self.failed = True, seq, text, ""

    @rx.event
    def set_editing(self, value: bool) -> None:
        self.editing = value

    @rx.event
    async def edit(self, form: dict):
        """Send the edited question in a fork made just before the original."""
        text = str(form.get("message") or "").strip()
        if not text:
            self.failed = "The message is empty."
            return None
        return await self._fork(self.edit_seq - 1, text)

    async def _fork(self, at_seq: int, text: str):
        if self.busy or not self.conversation_id:
            return None
        self.busy, self.failed = True, ""
        services, caller = self._services(), self._caller()
        try:
            fork = await services.conversations.fork(caller, self.conversation_id, at_seq=at_seq)
            if text:
                await services.runs.start(
                    caller, agent_id=fork.agent_id, message=text, conversation_uuid=fork.uuid
                )
        except LuminaError as exc:
            self.failed = explain(exc)
            return None
        finally:
            self.busy = False
        self.editing = False
        return [rx.redirect(chat_url(fork.agent_id, fork.uuid)), SidebarState.refresh]
