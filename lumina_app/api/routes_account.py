"""The caller's own account: password, signed-in sessions, API keys."""

from __future__ import annotations

from fastapi import APIRouter, Response

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import ServicesDep
from lumina_app.api.schemas_accounts import (
    ChangePassword,
    CreatedKeyOut,
    KeyOut,
    NewKeyBody,
    PasswordChanged,
    RowId,
    SessionOut,
    SessionsRevoked,
)

router = APIRouter(prefix="/api/v1", tags=["account"], route_class=AuthenticatedRoute)


@router.post("/account/password", response_model=PasswordChanged)
async def change_password(
    body: ChangePassword, caller: Caller, services: ServicesDep
) -> PasswordChanged:
    """A new password, given the current one. Every other session of the account ends;
    this one and the account's API keys stay."""
    ended = await services.accounts.change_password(
        caller, body.current_password, body.new_password
    )
    return PasswordChanged(otherSessionsEnded=ended)


@router.get("/account/sessions", response_model=list[SessionOut])
async def list_sessions(caller: Caller, services: ServicesDep) -> list[SessionOut]:
    """The account's signed-in browsers, most recently seen first; ``current`` is this one."""
    return [SessionOut.of(s) for s in await services.accounts.list_sessions(caller)]


@router.delete("/account/sessions/{session_id:int}", status_code=204)
async def revoke_session(session_id: RowId, caller: Caller, services: ServicesDep) -> Response:
    """Sign that browser out (another account's session is not found)."""
    await services.accounts.revoke_session(caller, session_id)
    return Response(status_code=204)


@router.post("/account/sessions/revoke-others", response_model=SessionsRevoked)
async def revoke_other_sessions(caller: Caller, services: ServicesDep) -> SessionsRevoked:
    """Sign out every other browser of the account."""
    return SessionsRevoked(revoked=await services.accounts.revoke_other_sessions(caller))


@router.get("/keys", response_model=list[KeyOut])
async def list_keys(caller: Caller, services: ServicesDep) -> list[KeyOut]:
    """The account's live API keys, newest first (never the keys themselves)."""
    return [KeyOut.of(k) for k in await services.accounts.list_keys(caller)]


@router.post("/keys", status_code=201, response_model=CreatedKeyOut)
async def create_key(body: NewKeyBody, caller: Caller, services: ServicesDep) -> CreatedKeyOut:
    """A new API key for the account. The key is in this response and nowhere else."""
    created = await services.accounts.create_key(caller, body.name)
    return CreatedKeyOut(**KeyOut.of(created.info).model_dump(), key=created.key)


@router.delete("/keys/{key_id:int}", status_code=204)
async def revoke_key(key_id: RowId, caller: Caller, services: ServicesDep) -> Response:
    """Revoke a key at once (another account's key is not found)."""
    await services.accounts.revoke_key(caller, key_id)
    return Response(status_code=204)
