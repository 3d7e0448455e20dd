"""Who is calling, for the REST routes: the request's credentials (bearer key, session
cookie, client address) resolved by the auth service (``services/auth.py``); the same rule
the UI socket follows."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request, Response, Security
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from lumina_app.api.deps import services_dependency
from lumina_app.api.errors import no_such_endpoint
from lumina_app.domain import Credentials, Principal
from lumina_app.services.auth import SESSION_COOKIE


def request_credentials(request: Request) -> Credentials:
    return Credentials(
        authorization=request.headers.get("authorization"),
        session_token=request.cookies.get(SESSION_COOKIE),
        client_host=request.client.host if request.client else None,
        user_agent=request.headers.get("user-agent", ""),
    )


async def current_principal(request: Request) -> Principal:
    principal = getattr(request.state, "principal", None)
    if principal is None:
        # The services the routes get, overrides included (tests open their own).
        provide = request.app.dependency_overrides.get(services_dependency, services_dependency)
        services = await provide()
        principal = await services.auth.authenticate(request_credentials(request))
        request.state.principal = principal
    return principal


# Declares the scheme in the OpenAPI schema (and the "Authorize" button of /docs). It checks
# nothing itself (auto_error=False): the auth service does.
bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="A key from LUMINA_API_KEYS (or a signed-in session cookie). Required when "
    "keys are configured; until then the API answers loopback clients only, without a key.",
)


async def _declared_principal(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer_scheme)],
) -> Principal:
    return await current_principal(request)


Caller = Annotated[Principal, Depends(_declared_principal)]


class AuthenticatedRoute(APIRoute):
    """Checks the caller before FastAPI reads the body: without valid credentials a request
    gets 401 (or 403), not a validation error about a body it had no right to send."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def authenticated(request: Request) -> Response:
            await current_principal(request)
            return await handler(request)

        return authenticated


class AdminRoute(AuthenticatedRoute):
    """Also checks the role before FastAPI reads the body: to a caller who is not an admin
    an admin route is the same 404 as a route that does not exist, whatever it sent (a
    dependency would come too late: FastAPI parses the body before any dependency runs)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def admins_only(request: Request) -> Response:
            if not (await current_principal(request)).is_admin:
                return no_such_endpoint(request)
            return await handler(request)

        return admins_only
