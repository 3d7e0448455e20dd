"""Who is calling: ``Authorization: Bearer <key>`` when LUMINA_API_KEYS is set (the key's
owner scopes every query), loopback clients only when it is not."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, Response, Security
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from lumina_app.domain import LOCAL, Principal, Via
from lumina_app.settings import Settings, get_settings


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return host in ("localhost", "testclient")


def resolve_principal(
    authorization: str | None, client_host: str | None, settings: Settings
) -> Principal:
    keys = settings.api_key_map
    if not keys:
        if not _is_loopback(client_host):
            raise HTTPException(
                403, "the API answers loopback clients only until LUMINA_API_KEYS is set"
            )
        return LOCAL
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, "missing bearer token", headers={"WWW-Authenticate": "Bearer"})
    owner = None
    for key, key_owner in keys.items():  # compare against every key: constant time
        if hmac.compare_digest(key.encode(), token.strip().encode()):
            owner = key_owner
    if owner is None:
        raise HTTPException(401, "invalid bearer token", headers={"WWW-Authenticate": "Bearer"})
    return Principal(owner=owner, via=Via.API_KEY)


async def current_principal(request: Request) -> Principal:
    principal = getattr(request.state, "principal", None)
    if principal is None:
        client = request.client.host if request.client else None
        settings = getattr(request.app.state, "settings", None) or get_settings()
        principal = resolve_principal(request.headers.get("authorization"), client, settings)
        request.state.principal = principal
    return principal


# Declares the scheme in the OpenAPI schema (and the "Authorize" button of /docs). It checks
# nothing itself (auto_error=False): resolve_principal does.
bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="A key from LUMINA_API_KEYS. Required when LUMINA_API_KEYS is set; "
    "until then the API answers loopback clients only, without a key.",
)


async def _declared_principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer_scheme)],
) -> Principal:
    return await current_principal(request)


Caller = Annotated[Principal, Depends(_declared_principal)]


class AuthenticatedRoute(APIRoute):
    """Checks the caller before FastAPI reads the body: without a valid key a request gets
    401 (or 403), not a validation error about a body it had no right to send."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def authenticated(request: Request) -> Response:
            await current_principal(request)
            return await handler(request)

        return authenticated
