"""A caller's own account: who it is, its password, its signed-in sessions, its API keys.

Sessions are those of the caller's account (or, for a holder of a LUMINA_API_KEYS key, the
ones signed in with that owner's key); keys and passwords belong to user accounts only.
Changing the password ends every other session of the account (not its API keys: those
are for programs, and are revoked one by one).
"""

from __future__ import annotations

from dataclasses import dataclass

from lumina_app.domain import (
    AccessDenied,
    ApiKeyInfo,
    AuditEvent,
    InvalidInput,
    KeyNotFound,
    NotAuthenticated,
    Principal,
    SessionNotFound,
    SignInSession,
    User,
)
from lumina_app.services.api_keys import issue_key
from lumina_app.services.audit import AuditLog
from lumina_app.services.auth import AuthService
from lumina_app.services.passwords import Passwords
from lumina_app.storage.api_keys import ApiKeyRecords
from lumina_app.storage.sessions import SessionRecords
from lumina_app.storage.users import UserRecords

NO_ACCOUNT = "API keys and passwords belong to user accounts: sign in with a username"


@dataclass(frozen=True, slots=True)
class Me:
    owner: str
    via: str
    username: str = ""
    role: str = ""
    must_change_password: bool = False


@dataclass(frozen=True, slots=True)
class SessionView:
    session: SignInSession
    current: bool  # the session this request came with


@dataclass(frozen=True, slots=True)
class CreatedKey:
    key: str  # shown once
    info: ApiKeyInfo


@dataclass(eq=False, repr=False)
class AccountService:
    auth: AuthService
    users: UserRecords
    sessions: SessionRecords
    keys: ApiKeyRecords
    passwords: Passwords
    audit: AuditLog

    async def me(self, principal: Principal) -> Me:
        user = await self._user_or_none(principal)
        return Me(
            owner=principal.owner,
            via=principal.via.value,
            username=user.username if user else "",
            role=user.role.value if user else "",
            must_change_password=user.must_change_password if user else False,
        )

    # -- password ----------------------------------------------------------------------

    async def change_password(self, principal: Principal, current: str, new: str) -> int:
        """A new password (the current one is asked for); how many other sessions ended."""
        user_id = self._account(principal)
        found = await self.users.get(user_id)
        if found is None:
            raise NotAuthenticated("this account no longer exists")
        user, stored = found
        if not await self.passwords.verify(current, stored):
            raise InvalidInput("the current password is not right")
        self.passwords.check_new(new, username=user.username)
        if new == current:
            raise InvalidInput("the new password is the current one")
        await self.users.set_password(
            user_id, await self.passwords.hash(new), must_change_password=False
        )
        ended = await self.sessions.revoke_all(
            owner=principal.owner, user_id=user_id, keep=principal.session_id
        )
        self.auth.forget_sessions(ended)
        await self._record(principal, AuditEvent.PASSWORD_CHANGED, f"{len(ended)} other ended")
        return len(ended)

    # -- sessions ----------------------------------------------------------------------

    async def list_sessions(self, principal: Principal) -> list[SessionView]:
        self._signed_in(principal)
        found = await self.sessions.list_live(owner=principal.owner, user_id=principal.user_id)
        return [SessionView(s, current=s.id == principal.session_id) for s in found]

    async def revoke_session(self, principal: Principal, session_id: int) -> None:
        self._signed_in(principal)
        ended = await self.sessions.revoke_by_id(
            session_id, owner=principal.owner, user_id=principal.user_id
        )
        if ended is None:
            raise SessionNotFound(session_id)
        self.auth.forget_sessions([session_id])
        await self._record(principal, AuditEvent.SESSIONS_REVOKED, f"session {session_id}")

    async def revoke_other_sessions(self, principal: Principal) -> int:
        self._signed_in(principal)
        ended = await self.sessions.revoke_all(
            owner=principal.owner, user_id=principal.user_id, keep=principal.session_id
        )
        self.auth.forget_sessions(ended)
        if ended:
            await self._record(principal, AuditEvent.SESSIONS_REVOKED, f"{len(ended)} others")
        return len(ended)

    # -- API keys ----------------------------------------------------------------------

    async def list_keys(self, principal: Principal) -> list[ApiKeyInfo]:
        if principal.user_id is None:
            return []
        return await self.keys.list(user_id=principal.user_id)

    async def create_key(self, principal: Principal, name: str) -> CreatedKey:
        key, info = await issue_key(self.keys, user_id=self._account(principal), name=name)
        await self._record(principal, AuditEvent.KEY_CREATED, f"key {info.id} {info.prefix}…")
        return CreatedKey(key=key, info=info)

    async def revoke_key(self, principal: Principal, key_id: int) -> None:
        """Someone else's key is as not found as a missing one."""
        user_id = self._account(principal)
        if not await self.keys.revoke(key_id, user_id=user_id):
            raise KeyNotFound(key_id)
        self.auth.forget_key(key_id)
        await self._record(principal, AuditEvent.KEY_REVOKED, f"key {key_id}")

    # -- helpers -----------------------------------------------------------------------

    @staticmethod
    def _account(principal: Principal) -> int:
        if principal.user_id is None:
            raise AccessDenied(NO_ACCOUNT)
        return principal.user_id

    @staticmethod
    def _signed_in(principal: Principal) -> None:
        if principal.user_id is None and principal.session_id is None:
            raise AccessDenied("sessions belong to signed-in browsers and user accounts")

    async def _user_or_none(self, principal: Principal) -> User | None:
        if principal.user_id is None:
            return None
        found = await self.users.get(principal.user_id)
        return found[0] if found else None

    async def _record(self, principal: Principal, event: AuditEvent, detail: str) -> None:
        await self.audit.record(
            event, username=principal.owner, address=principal.address, detail=detail
        )
