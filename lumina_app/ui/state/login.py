"""The sign-in page's state. Not under AppState: its events run before anyone is let in,
and it holds nothing but what the page shows (passwords and keys go from the page straight
to the sign-in API, never through this state)."""

from __future__ import annotations

import reflex as rx

from lumina_app.composition import current
from lumina_app.domain import AccessDenied, NotAuthenticated
from lumina_app.ui.access import socket_credentials


class LoginState(rx.State):
    with_password: bool = False  # user accounts exist
    with_key: bool = False  # LUMINA_API_KEYS is set
    use_key: bool = False  # both: the key form is the one shown
    reason: str = ""
    error: str = ""

    @rx.event
    async def load(self):
        """Already let in: go on. Otherwise say why, and offer the ways to sign in."""
        services = current()
        self.error = ""
        try:
            await services.auth.authenticate(socket_credentials(self))
        except (NotAuthenticated, AccessDenied) as exc:
            options = await services.signin.options()
            self.with_password, self.with_key = options.password, options.key
            self.use_key = options.key and not options.password
            if options.password:
                self.reason = "Sign in with your username and password."
            elif options.key:
                self.reason = "Sign in with your API key."
            else:
                self.reason = str(exc)
            return None
        return rx.redirect(_next_page(self.router.url.query_parameters.get("next", "")))

    @rx.event
    def set_use_key(self, value: bool) -> None:
        self.use_key = value and self.with_key
        self.error = ""
        self.reason = (
            "Sign in with your API key."
            if self.use_key
            else "Sign in with your username and password."
        )

    @rx.event
    def failed(self, message: str) -> None:
        """The browser's sign-in request was refused (it navigates away on success)."""
        self.error = message or ""


def _next_page(target: str) -> str:
    """Only a path of this app (no other site, no scheme-relative ``//host``)."""
    return target if target.startswith("/") and not target.startswith("//") else "/"
