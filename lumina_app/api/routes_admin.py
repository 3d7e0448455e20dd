"""Managing accounts, for admins. To anyone else each route, with any method and any body,
is the 404 of a route that does not exist."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from lumina_app.api.auth import AdminRoute, Caller, current_principal
from lumina_app.api.deps import DeletionDep, UsersDep
from lumina_app.api.errors import allowed_methods, no_such_endpoint, not_served
from lumina_app.api.schemas import NoNul
from lumina_app.api.schemas_accounts import (
    AccountDeleted,
    AuditOut,
    NewUser,
    ResetPassword,
    Username,
    UserOut,
    UserWithPassword,
)
from lumina_app.domain import NotAuthenticated

PREFIX = "/api/v1/admin"
router = APIRouter(prefix=PREFIX, tags=["admin"], route_class=AdminRoute)


@router.get("/users", response_model=list[UserOut])
async def list_users(caller: Caller, users: UsersDep) -> list[UserOut]:
    return [UserOut.of(u) for u in await users.list(caller)]


@router.post("/users", status_code=201, response_model=UserWithPassword)
async def create_user(body: NewUser, caller: Caller, users: UsersDep) -> UserWithPassword:
    """A new account. Without a password one is generated, returned here once; either way
    the user is asked to change it."""
    made = await users.create(caller, body.username, role=body.role, password=body.password)
    return UserWithPassword(user=UserOut.of(made.user), temporaryPassword=made.temporary)


@router.get("/users/{username}", response_model=UserOut)
async def get_user(username: Username, caller: Caller, users: UsersDep) -> UserOut:
    return UserOut.of(await users.get(caller, username))


@router.post("/users/{username}/disable", response_model=UserOut)
async def disable_user(username: Username, caller: Caller, users: UsersDep) -> UserOut:
    """The account can no longer sign in; its sessions end and its keys are revoked now."""
    return UserOut.of((await users.disable(caller, username)).user)


@router.post("/users/{username}/enable", response_model=UserOut)
async def enable_user(username: Username, caller: Caller, users: UsersDep) -> UserOut:
    """The account may sign in again (old sessions and keys stay ended)."""
    return UserOut.of(await users.enable(caller, username))


@router.post("/users/{username}/password", response_model=UserWithPassword)
async def reset_password(
    username: Username, body: ResetPassword, caller: Caller, users: UsersDep
) -> UserWithPassword:
    """Set a password, or generate one (returned here once). Unless ``endSessions`` or
    ``revokeKeys`` is false, the account's sessions end and its API keys are revoked."""
    made = await users.reset_password(
        caller,
        username,
        body.password,
        end_sessions=body.endSessions,
        revoke_keys=body.revokeKeys,
    )
    return UserWithPassword(user=UserOut.of(made.user), temporaryPassword=made.temporary)


@router.post("/users/{username}/delete", response_model=AccountDeleted)
async def delete_user(username: Username, caller: Caller, deletion: DeletionDep) -> AccountDeleted:
    """Delete the account and everything it owns (conversations, memories, keys, sessions,
    archive files, Redis keys). Cannot be undone; the audit log keeps the counts."""
    return AccountDeleted.of(await deletion.delete_user(caller, username))


@router.get("/audit", response_model=list[AuditOut])
async def audit(
    caller: Caller,
    users: UsersDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    username: Annotated[str | None, Query(max_length=128), NoNul] = None,
) -> list[AuditOut]:
    """The audit log, newest first; ``before`` = the id of the oldest entry seen."""
    entries = await users.audit_entries(caller, limit=limit, before=before, username=username)
    return [AuditOut.of(e) for e in entries]


async def unmatched_admin(request: Request) -> JSONResponse:
    """A method no admin route serves at a path, or a path none serves: to an admin the
    usual 405 or 404; to anyone else 404, so a member cannot map the admin routes."""
    try:
        admin = (await current_principal(request)).is_admin
    except NotAuthenticated:
        admin = False
    if not admin:
        return no_such_endpoint(request)
    return not_served(request, allowed_methods(request, catch_all=unmatched_admin))
