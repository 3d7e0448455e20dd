"""Managing accounts: what admins do on /admin and the operator with ``python -m lumina_app
users``. To anyone else every method is a plain "not found", as if there were nothing here.

An account set up by someone else (an admin on the web: a given or a generated password) is
marked ``must_change_password``; the CLI is the operator at the console and marks nothing.
Disabling ends the account's sessions and revokes its keys at once; enabling brings back
neither (the user signs in again and makes new keys). A password reset does the same by
default (each can be kept): whoever had the old password is shut out.
"""

from __future__ import annotations

from dataclasses import dataclass

from lumina_app.domain import (
    LOCAL,
    ApiKeyInfo,
    AuditEntry,
    AuditEvent,
    ClaimCounts,
    InvalidInput,
    KeyNotFound,
    NotFound,
    Principal,
    Role,
    User,
    UserNotFound,
    Via,
)
from lumina_app.domain.accounts import is_username, normalize_username
from lumina_app.services.api_keys import issue_key
from lumina_app.services.audit import AuditLog
from lumina_app.services.auth import AuthService
from lumina_app.services.live import LiveHub
from lumina_app.services.passwords import Passwords
from lumina_app.storage.api_keys import ApiKeyRecords
from lumina_app.storage.claims import DataClaims
from lumina_app.storage.sessions import SessionRecords
from lumina_app.storage.users import UserRecords

MAX_AUDIT_PAGE = 200


@dataclass(frozen=True, slots=True)
class NewPassword:
    user: User
    temporary: str | None  # generated: shown once, to whoever asked
    sessions_ended: int = 0  # a reset's
    keys_revoked: int = 0


@dataclass(frozen=True, slots=True)
class Disabled:
    user: User
    sessions_ended: int
    keys_revoked: int


@dataclass(eq=False, repr=False)
class UserAdminService:
    auth: AuthService
    users: UserRecords
    sessions: SessionRecords
    keys: ApiKeyRecords
    passwords: Passwords
    audit: AuditLog
    claims: DataClaims
    live: LiveHub | None = None  # a disabled account's open pages stop following at once

    async def list(self, principal: Principal) -> list[User]:
        _admin(principal)
        return await self.users.list()

    async def get(self, principal: Principal, username: str) -> User:
        _admin(principal)
        return await self._find(username)

    async def create(
        self, principal: Principal, username: str, *, role: Role, password: str | None = None
    ) -> NewPassword:
        _admin(principal)
        name = normalize_username(username)
        if not is_username(name):
            raise InvalidInput(
                "a username is 1 to 64 characters: lower-case letters, digits, . _ @ -, "
                "starting with a letter or digit"
            )
        temporary = None if password is not None else self.passwords.temporary()
        chosen = password if password is not None else temporary
        self.passwords.check_new(chosen, username=name)
        user = await self.users.create(
            username=name,
            password_hash=await self.passwords.hash(chosen),
            role=role,
            must_change_password=_someone_else(principal),
        )
        self.auth.user_created()
        await self._record(principal, AuditEvent.USER_CREATED, name, f"role {role.value}")
        return NewPassword(user=user, temporary=temporary)

    async def disable(self, principal: Principal, username: str) -> Disabled:
        _admin(principal)
        user = await self._find(username)
        if user.id == principal.user_id:
            raise InvalidInput("you cannot disable your own account")
        sessions, keys = await self.users.disable(user.id)
        self.auth.forget_user(user.id)
        if self.live is not None:
            await self.live.close_owner(user.username)
        detail = f"{sessions} session(s) ended, {keys} key(s) revoked"
        await self._record(principal, AuditEvent.USER_DISABLED, user.username, detail)
        return Disabled(await self._find(user.username), sessions, keys)

    async def enable(self, principal: Principal, username: str) -> User:
        _admin(principal)
        user = await self._find(username)
        await self.users.enable(user.id)
        await self._record(principal, AuditEvent.USER_ENABLED, user.username, "")
        return await self._find(user.username)

    async def reset_password(
        self,
        principal: Principal,
        username: str,
        password: str | None = None,
        *,
        end_sessions: bool = True,
        revoke_keys: bool = True,
    ) -> NewPassword:
        """Set ``password``, or a generated one (returned once). Unless told otherwise the
        account's sessions end and its API keys are revoked: after a suspected compromise,
        whoever was signed in, or made a key, with the old password is shut out."""
        _admin(principal)
        user = await self._find(username)
        if user.id == principal.user_id:
            raise InvalidInput("change your own password on your account page")
        temporary = None if password is not None else self.passwords.temporary()
        chosen = password if password is not None else temporary
        self.passwords.check_new(chosen, username=user.username)
        await self.users.set_password(
            user.id,
            await self.passwords.hash(chosen),
            must_change_password=_someone_else(principal),
        )
        ended: list[int] = []
        if end_sessions:
            ended = await self.sessions.revoke_all(owner=user.username, user_id=user.id)
            self.auth.forget_sessions(ended)
        revoked: list[int] = []
        if revoke_keys:
            revoked = await self.keys.revoke_all(user_id=user.id)
            for key_id in revoked:
                self.auth.forget_key(key_id)
        detail = (
            f"{'generated' if temporary else 'set'}; "
            + (f"{len(ended)} session(s) ended" if end_sessions else "sessions kept")
            + "; "
            + (f"{len(revoked)} key(s) revoked" if revoke_keys else "keys kept")
        )
        await self._record(principal, AuditEvent.PASSWORD_RESET, user.username, detail)
        return NewPassword(
            user=await self._find(user.username),
            temporary=temporary,
            sessions_ended=len(ended),
            keys_revoked=len(revoked),
        )

    # -- keys, for the operator (``python -m lumina_app keys``) -------------------------

    async def issue_key(
        self, principal: Principal, username: str, name: str
    ) -> tuple[str, ApiKeyInfo]:
        """A key for an account, made by an admin: ``(the key, shown once; its listing)``."""
        _admin(principal)
        user = await self._find(username)
        key, info = await issue_key(self.keys, user_id=user.id, name=name)
        detail = f"key {info.id} {info.prefix}…"
        await self._record(principal, AuditEvent.KEY_CREATED, user.username, detail)
        return key, info

    async def list_keys(
        self, principal: Principal, username: str | None = None
    ) -> list[ApiKeyInfo]:
        _admin(principal)
        user_id = (await self._find(username)).id if username is not None else None
        return await self.keys.list(user_id=user_id)

    async def revoke_key(self, principal: Principal, key_id: int) -> ApiKeyInfo:
        _admin(principal)
        key = await self.keys.get(key_id)
        if key is None or not await self.keys.revoke(key_id):
            raise KeyNotFound(key_id)
        self.auth.forget_key(key_id)
        await self._record(principal, AuditEvent.KEY_REVOKED, key.username, f"key {key_id}")
        return key

    async def audit_entries(
        self,
        principal: Principal,
        *,
        limit: int = 50,
        before: int | None = None,
        username: str | None = None,
    ) -> list[AuditEntry]:
        _admin(principal)
        limit = max(1, min(limit, MAX_AUDIT_PAGE))
        return await self.audit.entries(limit=limit, before=before, username=username)

    async def claim_local_data(self, principal: Principal, username: str) -> ClaimCounts:
        """Give the local operator's data (owner "") to an account: the operator's move
        from local mode to accounts (the CLI only)."""
        if principal.via is not Via.OPERATOR:
            raise NotFound("not found")
        user = await self._find(username)
        counts = await self.claims.claim(
            from_owner=LOCAL.owner, to_owner=user.username, user_id=user.id
        )
        detail = (
            f"{counts.conversations} conversation(s), {counts.runs} run(s), "
            f"{counts.idempotency_keys} idempotency key(s), {counts.sessions} session(s)"
        )
        await self._record(principal, AuditEvent.DATA_CLAIMED, user.username, detail)
        return counts

    async def _find(self, username: str) -> User:
        name = normalize_username(username)
        found = await self.users.find(name) if is_username(name) else None
        if found is None:
            raise UserNotFound(name)
        return found[0]

    async def _record(
        self, principal: Principal, event: AuditEvent, username: str, detail: str
    ) -> None:
        await self.audit.record(
            event,
            username=username,
            actor=principal.label,
            address=principal.address,
            detail=detail,
        )


def _admin(principal: Principal) -> None:
    """Not an admin: nothing here, as far as the caller can tell."""
    if not principal.is_admin:
        raise NotFound("not found")


def _someone_else(principal: Principal) -> bool:
    return principal.via is not Via.OPERATOR
