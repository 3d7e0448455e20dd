"""Signing a browser in and out (a session cookie), and who the caller is."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request, Response

from lumina_app.api.auth import AuthenticatedRoute, Caller, request_credentials
from lumina_app.api.deps import AccountsDep, SignInDep
from lumina_app.api.schemas_accounts import KeyLogin, Login, MeOut, SignedIn
from lumina_app.domain.views import iso_us
from lumina_app.services.auth import SESSION_COOKIE

router = APIRouter(prefix="/api/v1", tags=["auth"])
checked = APIRouter(prefix="/api/v1", tags=["auth"], route_class=AuthenticatedRoute)


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
async def login(body: Login, request: Request, signin: SignInDep) -> Response:
    """Sign this browser in, with a username and password or with a LUMINA_API_KEYS key:
    a session cookie for that account (or the key's owner)."""
    credentials = request_credentials(request)
    if isinstance(body, KeyLogin):
        signed = await signin.with_key(body.api_key, credentials)
    else:
        signed = await signin.with_password(body.username, body.password, credentials)
    # The browser's previous session (another account, or a stale one) ends here, rather
    # than living on unseen until it expires.
    await signin.sign_out(credentials.session_token, credentials)
    user = signed.user
    out = SignedIn(
        owner=signed.session.owner,
        via="session",
        username=user.username if user else "",
        role=user.role.value if user else "",
        mustChangePassword=user.must_change_password if user else False,
        expiresAt=iso_us(signed.session.expires_at),
    )
    response = Response(out.model_dump_json(), media_type="application/json")
    _set_cookie(response, request, signed.token, signed.session.expires_at)
    return response


@router.post("/auth/logout", status_code=204)
async def logout(request: Request, signin: SignInDep) -> Response:
    """End this browser's session on the server and drop its cookie."""
    await signin.sign_out(request.cookies.get(SESSION_COOKIE), request_credentials(request))
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@checked.get("/me", response_model=MeOut)
async def me(caller: Caller, accounts: AccountsDep) -> MeOut:
    """Who the caller is: the owner of its data, its account (if any) and how it came in."""
    return MeOut.of(await accounts.me(caller))
