"""The sign-in page's state. Not under AppState: its events run before anyone is let in,
and it holds nothing but what the page shows."""

from __future__ import annotations

import reflex as rx

from lumina_app.composition import current
from lumina_app.domain import AccessDenied, NotAuthenticated
from lumina_app.ui.access import socket_credentials


class LoginState(rx.State):
    can_sign_in: bool = False
    reason: str = ""
    error: str = ""

    @rx.event
    async def load(self):
        """Already let in: go on. Otherwise say why, and offer the sign-in if there is one."""
        auth = current().auth
        self.error = ""
        try:
            await auth.authenticate(socket_credentials(self))
        except (NotAuthenticated, AccessDenied) as exc:
            self.can_sign_in = auth.closed
            self.reason = str(exc) if not auth.closed else "Sign in with your API key."
            return None
        return rx.redirect(_next_page(self.router.url.query_parameters.get("next", "")))

    @rx.event
    def failed(self, message: str) -> None:
        """The browser's sign-in request was refused (it navigates away on success)."""
        self.error = message or ""


def _next_page(target: str) -> str:
    """Only a path of this app (no other site, no scheme-relative ``//host``)."""
    return target if target.startswith("/") and not target.startswith("//") else "/"
