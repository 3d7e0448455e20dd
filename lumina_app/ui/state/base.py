"""The state every page shares: which agent and conversation are open, and who is asking.

Imports nothing else of the UI, so the chat and the sidebar states both build on it
without importing each other. Who is asking is set by the access gate (``ui/access.py``)
before every event, from the socket's own cookie and address, never from the client's
words.
"""

from __future__ import annotations

import reflex as rx

from lumina_app.composition import Services, current
from lumina_app.domain import NotAuthenticated, Principal, Via


class AppState(rx.State):
    agent_id: str = ""
    agent_name: str = ""
    conversation_id: str = ""
    title: str = ""
    # Who this browser acts as, for people: "" in local mode, else the owner.
    signed_in_as: str = ""
    local_mode: bool = False
    _owner: str = ""
    _via: str = ""  # "" until the gate has let this socket in

    def _caller(self) -> Principal:
        if not self._via:
            raise NotAuthenticated("this page is not signed in")
        return Principal(owner=self._owner, via=Via(self._via), name=self._owner)

    def _admit(self, principal: Principal | None) -> None:
        """Called by the gate: a new identity starts from empty UI state."""
        owner, via = (principal.owner, principal.via.value) if principal else ("", "")
        if (owner, via) != (self._owner, self._via):
            self.reset()
            self._owner, self._via = owner, via
            self.local_mode = via == Via.LOOPBACK.value
            self.signed_in_as = "" if principal is None or self.local_mode else principal.label

    @staticmethod
    def _services() -> Services:
        return current()
