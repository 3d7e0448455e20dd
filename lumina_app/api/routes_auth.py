"""Signing a browser in and out (a session cookie), and who the caller is."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from lumina_app.api.auth import AuthenticatedRoute, Caller, request_credentials
from lumina_app.api.deps import ServicesDep
from lumina_app.api.schemas import StrictBody
from lumina_app.domain.views import iso_us
from lumina_app.services.auth import SESSION_COOKIE

router = APIRouter(prefix="/api/v1", tags=["auth"])
checked = APIRouter(prefix="/api/v1", tags=["auth"], route_class=AuthenticatedRoute)


class Login(StrictBody):
    api_key: str = Field(alias="apiKey", min_length=1, max_length=512)


class SignedIn(BaseModel):
    owner: str
    via: str
    expiresAt: str | None = None


def _set_cookie(response: Response, request: Request, token: str, expires: datetime) -> None:
    """HttpOnly, SameSite=Strict, Secure on https: scripts cannot read it, other sites'
    pages cannot send it."""
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int((expires - datetime.now(expires.tzinfo)).total_seconds()),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


@router.post("/auth/login", response_model=SignedIn)
async def login(body: Login, request: Request, services: ServicesDep) -> Response:
    """Sign this browser in with an API key: a session cookie for the key's owner."""
    token, session = await services.auth.sign_in_with_key(
        body.api_key, request_credentials(request)
    )
    out = SignedIn(owner=session.owner, via="session", expiresAt=iso_us(session.expires_at))
    response = Response(out.model_dump_json(), media_type="application/json")
    _set_cookie(response, request, token, session.expires_at)
    return response


@router.post("/auth/logout", status_code=204)
async def logout(request: Request, services: ServicesDep) -> Response:
    """End this browser's session on the server and drop its cookie."""
    await services.auth.sign_out(request.cookies.get(SESSION_COOKIE))
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@checked.get("/me", response_model=SignedIn)
async def me(caller: Caller) -> SignedIn:
    return SignedIn(owner=caller.owner, via=caller.via.value)
