"""The API keys page: the account's keys (revoke), and the dialog that shows a new key
once (the key goes from the API to the page, never into this state)."""

from __future__ import annotations

import reflex as rx

from lumina_app.domain import NotFound
from lumina_app.ui.state.base import AppState
from lumina_app.ui.view_models.account_views import KeyRow, key_row


class KeysState(AppState):
    keys: list[KeyRow] = []
    revealing: bool = False
    reveal_title: str = ""
    message: str = ""
    error: str = ""

    @rx.event
    async def load(self) -> None:
        self.message = self.error = ""
        self.revealing = False
        await self._refresh()

    async def _refresh(self) -> None:
        found = await self._services().accounts.list_keys(self._caller())
        self.keys = [key_row(key) for key in found]

    @rx.event
    async def created(self, result: dict) -> None:
        """What the page's request for a new key came back with (never the key)."""
        self.message = self.error = ""
        if not result.get("ok"):
            self.error = str(result.get("error") or "The key was not created.")
            return
        self.reveal_title = f"Your new key “{result.get('name', '')}”"
        self.revealing = True
        await self._refresh()

    @rx.event
    def close_reveal(self) -> None:
        self.revealing = False

    @rx.event
    async def revoke(self, key_id: int) -> None:
        self.message = self.error = ""
        try:
            await self._services().accounts.revoke_key(self._caller(), key_id)
            self.message = "Key revoked: requests with it are refused from now on."
        except NotFound:
            self.error = "That key was already revoked."
        await self._refresh()
