"""The caller's own account: password, signed-in sessions, API keys; export everything it
has (one zip, streamed), or delete it with everything it owns."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import AccountExportDep, AccountsDep, DeletionDep
from lumina_app.api.schemas_accounts import (
    AccountDeleted,
    ChangePassword,
    CreatedKeyOut,
    DeleteAccount,
    KeyOut,
    NewKeyBody,
    PasswordChanged,
    RowId,
    SessionOut,
    SessionsRevoked,
)
from lumina_app.services.auth import SESSION_COOKIE

router = APIRouter(prefix="/api/v1", tags=["account"], route_class=AuthenticatedRoute)


@router.post("/account/password", response_model=PasswordChanged)
async def change_password(
    body: ChangePassword, caller: Caller, accounts: AccountsDep
) -> PasswordChanged:
    """A new password, given the current one. Every other session of the account ends;
    this one and the account's API keys stay."""
    ended = await accounts.change_password(caller, body.current_password, body.new_password)
    return PasswordChanged(otherSessionsEnded=ended)


@router.get("/account/sessions", response_model=list[SessionOut])
async def list_sessions(caller: Caller, accounts: AccountsDep) -> list[SessionOut]:
    """The account's signed-in browsers, most recently seen first; ``current`` is this one."""
    return [SessionOut.of(s) for s in await accounts.list_sessions(caller)]


@router.delete("/account/sessions/{session_id:int}", status_code=204)
async def revoke_session(session_id: RowId, caller: Caller, accounts: AccountsDep) -> Response:
    """Sign that browser out (another account's session is not found)."""
    await accounts.revoke_session(caller, session_id)
    return Response(status_code=204)


@router.post("/account/sessions/revoke-others", response_model=SessionsRevoked)
async def revoke_other_sessions(caller: Caller, accounts: AccountsDep) -> SessionsRevoked:
    """Sign out every other browser of the account."""
    return SessionsRevoked(revoked=await accounts.revoke_other_sessions(caller))


@router.get("/keys", response_model=list[KeyOut])
async def list_keys(caller: Caller, accounts: AccountsDep) -> list[KeyOut]:
    """The account's live API keys, newest first (never the keys themselves)."""
    return [KeyOut.of(k) for k in await accounts.list_keys(caller)]


@router.post("/keys", status_code=201, response_model=CreatedKeyOut)
async def create_key(body: NewKeyBody, caller: Caller, accounts: AccountsDep) -> CreatedKeyOut:
    """A new API key for the account. The key is in this response and nowhere else."""
    created = await accounts.create_key(caller, body.name)
    return CreatedKeyOut(**KeyOut.of(created.info).model_dump(), key=created.key)


@router.delete("/keys/{key_id:int}", status_code=204)
async def revoke_key(key_id: RowId, caller: Caller, accounts: AccountsDep) -> Response:
    """Revoke a key at once (another account's key is not found)."""
    await accounts.revoke_key(caller, key_id)
    return Response(status_code=204)


@router.get(
    "/account/export",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/zip": {}}, "description": "a .zip"}},
)
async def export_account(caller: Caller, export: AccountExportDep) -> StreamingResponse:
    """Everything the caller has, as one zip written while it downloads: every conversation
    in the archive layout with a Markdown transcript (a message's files beside its turn),
    the long-term memories, every uploaded file (``files/<id>/<name>``, listed in
    ``files/files.json``) and ``account.json`` (settings, keys by name and prefix; no
    password hash, no key)."""
    return StreamingResponse(
        export.stream(caller),
        media_type="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="{export.filename(caller)}"',
            "Cache-Control": "no-store",
        },
    )


@router.post("/account/delete", response_model=AccountDeleted)
async def delete_account(
    body: DeleteAccount, caller: Caller, deletion: DeletionDep, response: Response
) -> AccountDeleted:
    """Delete the caller's account and everything it owns, given its password and its
    username typed as ``confirm``. Cannot be undone; the audit log keeps the counts."""
    report = await deletion.delete_own(caller, body.password, body.confirm)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return AccountDeleted.of(report)
