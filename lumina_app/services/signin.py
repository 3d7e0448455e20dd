"""Signing a browser in (a password, or a LUMINA_API_KEYS key) and out: a session whose
token goes into an HttpOnly cookie and whose hash into the store (docs/SECURITY.md).

Attempts are limited per address and per username (counted before the password is
checked, given back on success: ``signin_limits``), a name with no account costs the same
Argon2 check as one with an account, and every attempt goes to the audit log.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from lumina_app.domain import (
    AccessDenied,
    AuditEvent,
    Credentials,
    NotAuthenticated,
    SignInSession,
    User,
    utcnow,
)
from lumina_app.domain.accounts import is_username, normalize_username
from lumina_app.services.audit import AuditLog
from lumina_app.services.auth import AuthService, token_hash
from lumina_app.services.passwords import Passwords
from lumina_app.services.signin_limits import SignInLimits
from lumina_app.settings import Settings
from lumina_app.storage.sessions import SessionRecords
from lumina_app.storage.users import UserRecords

WRONG = "wrong username or password"


@dataclass(frozen=True, slots=True)
class SignInOptions:
    """What the sign-in page offers."""

    password: bool  # user accounts exist
    key: bool  # LUMINA_API_KEYS is set


@dataclass(frozen=True, slots=True)
class SignedIn:
    token: str  # for the cookie; never stored
    session: SignInSession
    user: User | None = None


@dataclass(eq=False, repr=False)
class SignInService:
    settings: Settings
    auth: AuthService
    users: UserRecords
    sessions: SessionRecords
    passwords: Passwords
    audit: AuditLog
    limits: SignInLimits

    async def options(self) -> SignInOptions:
        return SignInOptions(
            password=await self.auth.users_exist(), key=bool(self.settings.api_key_map)
        )

    async def with_password(
        self, username: str, password: str, credentials: Credentials
    ) -> SignedIn:
        if not await self.auth.users_exist():
            raise AccessDenied("no user accounts exist here: there is nothing to sign in to")
        name = normalize_username(username)
        address = credentials.client_host or "unknown"
        attempt = await self.limits.attempt(address, name)
        found = await self.users.find(name) if is_username(name) else None
        if found is None:
            await self.passwords.verify_nobody(password)
        if found is None or not await self.passwords.verify(password, found[1]):
            await self._failed(name, address, WRONG)
            raise NotAuthenticated(WRONG)
        user = found[0]
        if user.disabled:  # said only to whoever knows the password
            await self._failed(name, address, "account disabled")
            raise AccessDenied("this account is disabled")
        await self.limits.succeeded(attempt)
        return await self._open(user.username, "password", credentials, user)

    async def with_key(self, key: str, credentials: Credentials) -> SignedIn:
        """A session for a LUMINA_API_KEYS key's owner (users' own keys are for the API)."""
        if not self.settings.api_key_map:
            raise AccessDenied("no API keys are configured: sign in with a username instead")
        address = credentials.client_host or "unknown"
        attempt = await self.limits.attempt(address)
        owner = self.auth.configured_key_owner(key.strip())
        if owner is None:
            await self._failed("", address, "invalid API key")
            raise NotAuthenticated("that key is not valid")
        await self.limits.succeeded(attempt)
        return await self._open(owner, "api-key", credentials)

    async def sign_out(self, token: str | None, credentials: Credentials) -> None:
        if not token:
            return
        self.auth.forget_token(token)
        ended = await self.sessions.revoke(token_hash(token))
        if ended is not None:
            await self.audit.record(
                AuditEvent.SIGN_OUT,
                username=ended.owner,
                address=credentials.client_host or "",
                detail=f"session {ended.id}",
            )

    async def _failed(self, username: str, address: str, detail: str) -> None:
        await self.audit.record(
            AuditEvent.SIGN_IN_FAILED, username=username, address=address, detail=detail
        )

    async def _open(
        self, owner: str, method: str, credentials: Credentials, user: User | None = None
    ) -> SignedIn:
        token = secrets.token_urlsafe(32)
        session = await self.sessions.create(
            token_hash=token_hash(token),
            owner=owner,
            method=method,
            expires_at=utcnow() + timedelta(hours=self.settings.session_ttl_hours),
            user_agent=credentials.user_agent,
            client_ip=credentials.client_host or "",
            user_id=user.id if user else None,
        )
        await self.audit.record(
            AuditEvent.SIGN_IN,
            username=owner,
            address=credentials.client_host or "",
            detail=f"{method}, session {session.id}",
        )
        return SignedIn(token=token, session=session, user=user)
