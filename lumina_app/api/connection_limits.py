"""The app serves at most LUMINA_MAX_CONNECTIONS - LUMINA_CONNECTION_RESERVE requests at once
per worker (HTTP and websocket, SSE streams and the UI's websockets included), so what stays
open for long never takes the last of granian's connections: the reserve is for health
checks, which are always let in (docs/SECURITY.md).

granian holds one of its LUMINA_MAX_CONNECTIONS per open socket (:mod:`lumina_app.granian_limits`)
but cannot tell a health check from anything else before it has read the request; the app
can. Over the cap a request gets 503 with ``Retry-After`` and ``Connection: close`` (so the
refused connection does not linger as an idle keep-alive), a websocket a refused handshake.
"""

from __future__ import annotations

import json
from functools import cached_property

from starlette.types import ASGIApp, Receive, Scope, Send

from lumina_app.api.errors import error_body
from lumina_app.granian_limits import connection_cap
from lumina_app.settings import Settings, get_settings

HEALTH_PATHS = frozenset({"/healthz", "/ping", "/_health"})  # Lumina's, and Reflex's two
WEBSOCKET_TRY_AGAIN_LATER = 1013


class ConnectionLimitMiddleware:
    """Counts the requests inside the app; refuses one over the cap before it starts."""

    def __init__(self, app: ASGIApp, *, settings: Settings | None = None) -> None:
        self.app = app
        self._settings = settings
        self.active = 0

    @cached_property
    def limit(self) -> int:
        """Read lazily: building the app must not read (or fail on) settings at import."""
        settings = self._settings or get_settings()
        return max(1, connection_cap(settings) - settings.connection_reserve)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        if self.active >= self.limit:
            await _refuse(scope, send)
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


async def _refuse(scope: Scope, send: Send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": WEBSOCKET_TRY_AGAIN_LATER})
        return
    body = json.dumps(error_body("overloaded", "the server is at its connection limit")).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"retry-after", b"1"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})
