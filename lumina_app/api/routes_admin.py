"""Managing accounts, for admins. To anyone else each route is a plain 404."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import ServicesDep
from lumina_app.api.schemas import NoNul
from lumina_app.api.schemas_accounts import (
    AuditOut,
    NewUser,
    ResetPassword,
    Username,
    UserOut,
    UserWithPassword,
)

router = APIRouter(prefix="/api/v1/admin", tags=["admin"], route_class=AuthenticatedRoute)


@router.get("/users", response_model=list[UserOut])
async def list_users(caller: Caller, services: ServicesDep) -> list[UserOut]:
    return [UserOut.of(u) for u in await services.users.list(caller)]


@router.post("/users", status_code=201, response_model=UserWithPassword)
async def create_user(body: NewUser, caller: Caller, services: ServicesDep) -> UserWithPassword:
    """A new account. Without a password one is generated, returned here once; either way
    the user is asked to change it."""
    made = await services.users.create(
        caller, body.username, role=body.role, password=body.password
    )
    return UserWithPassword(user=UserOut.of(made.user), temporaryPassword=made.temporary)


@router.get("/users/{username}", response_model=UserOut)
async def get_user(username: Username, caller: Caller, services: ServicesDep) -> UserOut:
    return UserOut.of(await services.users.get(caller, username))


@router.post("/users/{username}/disable", response_model=UserOut)
async def disable_user(username: Username, caller: Caller, services: ServicesDep) -> UserOut:
    """The account can no longer sign in; its sessions end and its keys are revoked now."""
    return UserOut.of((await services.users.disable(caller, username)).user)


@router.post("/users/{username}/enable", response_model=UserOut)
async def enable_user(username: Username, caller: Caller, services: ServicesDep) -> UserOut:
    """The account may sign in again (old sessions and keys stay ended)."""
    return UserOut.of(await services.users.enable(caller, username))


@router.post("/users/{username}/password", response_model=UserWithPassword)
async def reset_password(
    username: Username, body: ResetPassword, caller: Caller, services: ServicesDep
) -> UserWithPassword:
    """Set a password, or generate one (returned here once); the account's sessions end."""
    made = await services.users.reset_password(caller, username, body.password)
    return UserWithPassword(user=UserOut.of(made.user), temporaryPassword=made.temporary)


@router.get("/audit", response_model=list[AuditOut])
async def audit(
    caller: Caller,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    username: Annotated[str | None, Query(max_length=128), NoNul] = None,
) -> list[AuditOut]:
    """The audit log, newest first; ``before`` = the id of the oldest entry seen."""
    entries = await services.users.audit_entries(
        caller, limit=limit, before=before, username=username
    )
    return [AuditOut.of(e) for e in entries]
