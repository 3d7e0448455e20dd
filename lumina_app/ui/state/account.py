"""The account page: the caller's signed-in browsers (sign any or all others out) and the
outcome of a password change (the passwords themselves go from the page to the API)."""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import AccessDenied, NotFound
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.account_views import SessionRow, session_row


class AccountState(AppState):
    sessions: list[SessionRow] = []
    must_change_password: bool = False
    min_length: int = 12
    message: str = ""
    error: str = ""

    @rx.event
    async def load(self) -> None:
        self.message = self.error = ""
        self.min_length = self._services().settings.password_min_length
        await self._refresh()

    async def _refresh(self) -> None:
        services, caller = self._services(), self._caller()
        if not self.has_account:
            self.sessions = []
            return
        self.must_change_password = (await services.accounts.me(caller)).must_change_password
        try:
            views = await services.accounts.list_sessions(caller)
        except AccessDenied:
            views = []
        self.sessions = [session_row(view) for view in views]

    @rx.event
    async def revoke(self, session_id: int) -> None:
        self.message = self.error = ""
        try:
            await self._services().accounts.revoke_session(self._caller(), session_id)
            self.message = "That browser is signed out."
        except NotFound:
            self.error = "That session had already ended."
        await self._refresh()

    @rx.event
    async def revoke_others(self) -> None:
        self.error = ""
        ended = await self._services().accounts.revoke_other_sessions(self._caller())
        self.message = f"Signed out {ended} other browser(s)."
        await self._refresh()

    @rx.event
    async def password_done(self, result: dict) -> None:
        """What the page's request to change the password came back with."""
        self.message = self.error = ""
        if not result.get("ok"):
            self.error = str(result.get("error") or "The password was not changed.")
            return
        ended = int(result.get("ended") or 0)
        self.message = f"Password changed; {ended} other browser(s) signed out."
        await self._refresh()

    @rx.event
    async def delete_done(self, result: dict) -> None:
        """What the page's request to delete the account came back with (on success the
        page has already left for the sign-in page)."""
        self.message = self.error = ""
        if not result.get("ok"):
            self.error = str(result.get("error") or "The account was not deleted.")
