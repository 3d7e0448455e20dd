"""The ``/mcp`` door: each HTTP request is authenticated like a REST call (a bearer key, or
a loopback client in local mode; never the browser's session cookie) before the MCP SDK's
session manager sees it. A session is bound to the owner who opened it: another owner
presenting its id gets the SDK's "Session not found"."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from lumina_app.api.errors import error_response, lumina_error_response
from lumina_app.api.mcp.tools import PRINCIPAL_KEY, build_server
from lumina_app.composition import current
from lumina_app.domain import Credentials, LuminaError

log = logging.getLogger(__name__)
PATH = "/mcp"

_manager: StreamableHTTPSessionManager | None = None


@asynccontextmanager
async def mcp_lifespan() -> AsyncIterator[None]:
    """Runs the session manager (registered after Lumina's own lifespan, so the services
    are open before the first session and still open while sessions close)."""
    global _manager
    server = build_server()
    # Host and Origin are checked by Lumina's guard for every path (LUMINA_ALLOWED_HOSTS,
    # LUMINA_ALLOWED_ORIGINS): the SDK's own loopback-only check would refuse a deployment.
    server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    manager = server.session_manager
    async with manager.run():
        _manager = manager
        log.info("MCP server open at %s", PATH)
        try:
            yield
        finally:
            _manager = None


def _credentials(scope: Scope) -> Credentials:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    client = scope.get("client")
    return Credentials(
        authorization=headers.get("authorization"),
        session_token=None,  # a cookie is ambient: an MCP client brings its key
        client_host=client[0] if client else None,
        user_agent=headers.get("user-agent", ""),
    )


class McpEndpoint:
    """An ASGI app mounted at ``/mcp`` (GET, POST, DELETE: the streamable HTTP transport)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = _manager
        if manager is None:
            response: Any = error_response(503, "unavailable", "the MCP server is not running")
            await response(scope, receive, send)
            return
        try:
            principal = await current().auth.authenticate(_credentials(scope))
        except LuminaError as exc:
            await lumina_error_response(exc)(scope, receive, send)
            return
        scope[PRINCIPAL_KEY] = principal
        # What the SDK binds a session to: the owner, so no other owner can use it.
        token = AccessToken(token="", client_id=principal.owner, scopes=[])
        scope["user"] = AuthenticatedUser(token)
        await manager.handle_request(scope, receive, send)
