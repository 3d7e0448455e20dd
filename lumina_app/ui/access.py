"""The UI socket follows the same rule as REST: before any event runs, the gate resolves
who the socket is (its session cookie and address, as the server saw them at the
handshake) through the auth service. A socket nobody may use runs no app event — whatever
the client sends: state setters, route parameters, crafted socket events — and is sent to
the sign-in page; the state of a previous identity is cleared before anything is sent."""

from __future__ import annotations

from urllib.parse import quote

import reflex as rx
from reflex.middleware import Middleware
from reflex.state import BaseState, StateUpdate
from reflex_base.event import Event

from lumina_app.composition import current
from lumina_app.domain import AccessDenied, Credentials, NotAuthenticated, Principal
from lumina_app.services.auth import SESSION_COOKIE
from lumina_app.ui.routes import LOGIN
from lumina_app.ui.state.base import AppState


def socket_credentials(state: BaseState) -> Credentials:
    """What the socket presented at its handshake (kept by Reflex per connection)."""
    router = state.router
    token = None
    for part in (router.headers.cookie or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == SESSION_COOKIE:
            token = value
    return Credentials(
        session_token=token,
        client_host=router.session.client_ip or None,
        user_agent=router.headers.user_agent,
    )


class AccessGate(Middleware):
    """Reflex event middleware; first in line (before hydration sends any state)."""

    def __init__(self) -> None:
        self._app_prefix = AppState.get_full_name() + "."

    async def preprocess(self, app, state: BaseState, event: Event) -> StateUpdate | None:
        principal = await self._principal(state)
        app_state = await state.get_state(AppState)
        app_state._admit(principal)
        if principal is not None or not event.name.startswith(self._app_prefix):
            return None  # let in, or the framework's own events (hydration, routing)
        here = state.router.url.path or "/"
        target = LOGIN if here in ("/", LOGIN) else f"{LOGIN}?next={quote(here, safe='/')}"
        return StateUpdate(events=Event.from_event_type(rx.redirect(target)))

    @staticmethod
    async def _principal(state: BaseState) -> Principal | None:
        try:
            return await current().auth.authenticate(socket_credentials(state))
        except (NotAuthenticated, AccessDenied):
            return None
