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
    has_account: bool = False  # signed in as a user account (not a configured key)
    is_admin: bool = False
    _owner: str = ""
    _via: str = ""  # "" until the gate has let this socket in
    _user_id: int = 0  # 0: no account
    _role: str = ""
    _session_id: int = 0
    _address: str = ""
    _admitted_sid: str = ""  # the socket the gate last let in as this identity

    def _caller(self) -> Principal:
        if not self._via:
            raise NotAuthenticated("this page is not signed in")
        return Principal(
            owner=self._owner,
            via=Via(self._via),
            name=self._owner,
            user_id=self._user_id or None,
            role=self._role,
            session_id=self._session_id or None,
            address=self._address,
        )

    def _admit(self, principal: Principal | None) -> None:
        """Called by the gate: a new identity starts from empty UI state."""
        who = (
            (principal.owner, principal.via.value, principal.user_id or 0, principal.role)
            if principal
            else ("", "", 0, "")
        )
        if who != (self._owner, self._via, self._user_id, self._role):
            self.reset()
            self._owner, self._via, self._user_id, self._role = who
            self.local_mode = self._via == Via.LOOPBACK.value
            self.signed_in_as = "" if principal is None or self.local_mode else principal.label
            self.has_account = bool(self._user_id)
            self.is_admin = principal is not None and principal.is_admin
        self._admitted_sid = self.router.session.session_id
        self._session_id = (principal.session_id or 0) if principal else 0
        self._address = principal.address if principal else ""

    @rx.event
    def heartbeat(self, _now: str) -> None:
        """A tick from an open page: the gate has checked the socket on the way in (a
        disabled account or an ended session is sent to sign in)."""

    @staticmethod
    def _services() -> Services:
        return current()
