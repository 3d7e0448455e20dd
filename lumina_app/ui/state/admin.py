"""The admin page: accounts (create, disable, enable, reset a password). To a non-admin it
is a page that does not exist, and every event here is refused by the service anyway.
Passwords, typed or generated, go between the page and the API only."""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import InvalidInput, NotFound
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.account_views import UserRow, user_row


class AdminState(AppState):
    users: list[UserRow] = []
    new_role: str = "member"
    reset_for: str = ""
    revealing: bool = False
    reveal_title: str = ""
    message: str = ""
    error: str = ""

    @rx.event
    async def load(self) -> None:
        self.message = self.error = self.reset_for = ""
        self.revealing = False
        await self._refresh()

    async def _refresh(self) -> None:
        if not self.is_admin:
            self.users = []
            return
        self.users = [user_row(u) for u in await self._services().users.list(self._caller())]

    @rx.event
    def set_new_role(self, role: str) -> None:
        self.new_role = role if role in ("member", "admin") else "member"

    @rx.event
    async def created(self, result: dict) -> None:
        self.message = self.error = ""
        if not result.get("ok"):
            self.error = str(result.get("error") or "The account was not created.")
            return
        await self._done(result, "Created {name}.")

    async def _done(self, result: dict, said: str) -> None:
        """A request of the page succeeded: say so, show a generated password, reload."""
        name = str(result.get("username", ""))
        self.message = said.format(name=name)
        if result.get("temporary"):
            self.reveal_title = f"Temporary password for {name}"
            self.revealing = True
        await self._refresh()

    @rx.event
    async def disable(self, username: str) -> None:
        await self._act(username, disable=True)

    @rx.event
    async def enable(self, username: str) -> None:
        await self._act(username, disable=False)

    @rx.event
    async def delete(self, username: str) -> None:
        self.message = self.error = ""
        deletion = self._services().deletion
        assert deletion is not None
        try:
            report = await deletion.delete_user(self._caller(), username)
            self.message = f"Deleted {username}: {report.detail()}."
        except (InvalidInput, NotFound) as exc:
            self.error = str(exc)
        await self._refresh()

    async def _act(self, username: str, *, disable: bool) -> None:
        self.message = self.error = ""
        users, caller = self._services().users, self._caller()
        try:
            if disable:
                done = await users.disable(caller, username)
                self.message = (
                    f"Disabled {username}: {done.sessions_ended} session(s) ended, "
                    f"{done.keys_revoked} key(s) revoked."
                )
            else:
                await users.enable(caller, username)
                self.message = f"Enabled {username}: they can sign in again."
        except (InvalidInput, NotFound) as exc:
            self.error = str(exc)
        await self._refresh()

    @rx.event
    def open_reset(self, username: str) -> None:
        self.message = self.error = ""
        self.reset_for = username

    @rx.event
    def close_reset(self) -> None:
        self.reset_for = ""

    @rx.event
    async def reset_done(self, result: dict) -> None:
        self.reset_for = ""
        if not result.get("ok"):
            self.error = str(result.get("error") or "The password was not reset.")
            return
        await self._done(result, "New password set for {name}; " + _shut_out(result) + ".")

    @rx.event
    def close_reveal(self) -> None:
        self.revealing = False


def _shut_out(result: dict) -> str:
    """What a reset did besides the password, as the page asked for it."""
    sessions, keys = result.get("endSessions", True), result.get("revokeKeys", True)
    if sessions and keys:
        return "they were signed out everywhere and their API keys revoked"
    if sessions:
        return "they were signed out everywhere; their API keys still work"
    if keys:
        return "their API keys were revoked; their browsers stay signed in"
    return "their browsers stay signed in and their API keys still work"
