"""The app serves at most LUMINA_MAX_CONNECTIONS - LUMINA_CONNECTION_RESERVE requests at once
per worker (HTTP and websocket, SSE streams and the UI's websockets included), so what stays
open for long never takes the last of granian's connections: the reserve is for health
checks, which are always let in (docs/SECURITY.md). Of those, one client address holds at
most LUMINA_MAX_REQUESTS_PER_ADDRESS, so a single host cannot take them all.

granian holds one of its LUMINA_MAX_CONNECTIONS per open socket (:mod:`lumina_app.platform.granian`)
but cannot tell a health check from anything else before it has read the request; the app
can. Over the cap a request gets 503 with ``Retry-After`` and ``Connection: close`` (so the
refused connection does not linger as an idle keep-alive), over the address's share a 429
likewise, a websocket a refused handshake. ``/healthz`` reads the same count: a worker
nearly at its cap says ``degraded``.
"""

from __future__ import annotations

import json
from functools import cached_property

from starlette.types import ASGIApp, Receive, Scope, Send

from lumina_app.api.errors import error_body
from lumina_app.platform.granian import connection_cap
from lumina_app.settings import Settings, get_settings

HEALTH_PATHS = frozenset({"/healthz", "/ping", "/_health"})  # Lumina's, and Reflex's two
WEBSOCKET_TRY_AGAIN_LATER = 1013
NEARLY_FULL = 0.9
"""Share of the cap in use from which /healthz says ``degraded``."""


class InFlight:
    """The requests inside the app, in all and per client address, against their caps."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings
        self.active = 0
        self.by_address: dict[str, int] = {}

    @cached_property
    def settings(self) -> Settings:
        """Read lazily: building the app must not read (or fail on) settings at import."""
        return self._settings or get_settings()

    @cached_property
    def limit(self) -> int:
        return max(1, connection_cap(self.settings) - self.settings.connection_reserve)

    @property
    def per_address(self) -> int:
        """0: no cap per address."""
        return self.settings.max_requests_per_address

    @property
    def nearly_full(self) -> bool:
        return self.active >= NEARLY_FULL * self.limit

    def address_full(self, address: str) -> bool:
        return 0 < self.per_address <= self.by_address.get(address, 0)

    def enter(self, address: str) -> None:
        self.active += 1
        self.by_address[address] = self.by_address.get(address, 0) + 1

    def leave(self, address: str) -> None:
        self.active -= 1
        left = self.by_address[address] - 1
        if left:
            self.by_address[address] = left
        else:
            del self.by_address[address]


class ConnectionLimitMiddleware:
    """Counts the requests inside the app; refuses one over a cap before it starts."""

    def __init__(self, app: ASGIApp, *, in_flight: InFlight | None = None) -> None:
        self.app = app
        self.in_flight = in_flight or InFlight()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in HEALTH_PATHS:
            await self.app(scope, receive, send)
            return
        flight = self.in_flight
        address = (scope.get("client") or ("",))[0]
        if flight.address_full(address):
            message = f"too many open requests from this address (at most {flight.per_address})"
            await _refuse(scope, send, 429, "too_many_requests", message)
            return
        if flight.active >= flight.limit:
            await _refuse(scope, send, 503, "overloaded", "the server is at its connection limit")
            return
        flight.enter(address)
        try:
            await self.app(scope, receive, send)
        finally:
            flight.leave(address)


async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": WEBSOCKET_TRY_AGAIN_LATER})
        return
    body = json.dumps(error_body(code, message)).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"retry-after", b"1"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
