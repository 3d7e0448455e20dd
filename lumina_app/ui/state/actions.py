"""A message's actions beyond the send: edit a question in place, and a new conversation
from here (fork).

Editing happens in the message itself: the bubble becomes a text box, and "Save & send"
asks the question again as a new branch of the same conversation (``ChatState``, the
same service as ``POST …/messages/{seq}/edit``). Fork is ``POST …/fork``, then opens it.
"""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import LuminaError
from lumina_app.ui.routes import chat_url
from lumina_app.ui.state.base import AppState
from lumina_app.ui.state.chat import ChatState
from lumina_app.ui.state.sidebar import SidebarState
from lumina_app.ui.view_models.views import explain


class MessageActions(AppState):
    edit_seq: int = 0  # the question being edited in place, or 0
    edit_text: str = ""
    failed: str = ""
    busy: bool = False  # a fork is under way: one at a time

    @rx.event
    async def fork_here(self, seq: int):
        """A new conversation with this one's messages up to ``seq``, opened."""
        if self.busy or not self.conversation_id:
            return None
        self.busy, self.failed = True, ""
        services, caller = self._services(), self._caller()
        try:
            fork = await services.conversations.fork(caller, self.conversation_id, at_seq=seq)
        except LuminaError as exc:
            self.failed = explain(exc)
            return None
        finally:
            self.busy = False
        return [rx.redirect(chat_url(fork.agent_id, fork.uuid)), SidebarState.refresh]

    @rx.event
    def start_edit(self, seq: int, text: str) -> None:
        self.edit_seq, self.edit_text, self.failed = seq, text, ""

    @rx.event
    def cancel_edit(self) -> None:
        self.edit_seq, self.edit_text, self.failed = 0, "", ""

    @rx.event
    def save_edit(self, form: dict):
        """Ask the edited question: a new branch from it (the composer is left alone)."""
        text = str(form.get("message") or "").strip()
        if not text:
            self.failed = "The message is empty."
            return None
        seq, self.edit_seq, self.edit_text, self.failed = self.edit_seq, 0, "", ""
        return ChatState.edit_question(seq, text)
