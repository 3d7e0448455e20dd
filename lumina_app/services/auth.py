"""Who is calling: the one place every way in (REST, the UI socket) turns credentials into a
:class:`Principal`, and where browsers sign in and out (docs/SECURITY.md).

* **Open** (no API keys configured): the local operator's console. Loopback clients act as
  the loopback owner (unless ``LUMINA_TRUST_LOOPBACK=false``); anyone else is refused.
* **Closed** (keys configured): every caller proves who it is — a bearer key, or a browser
  session signed in with a key. Loopback gets nothing for free.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from datetime import timedelta

from limits import parse
from limits.aio.storage import MemoryStorage
from limits.aio.strategies import MovingWindowRateLimiter

from lumina_app.domain import (
    LOCAL,
    AccessDenied,
    Credentials,
    NotAuthenticated,
    Principal,
    SignInSession,
    TooManyAttempts,
    Via,
    utcnow,
)
from lumina_app.settings import Settings, is_loopback_name
from lumina_app.storage.sessions import SessionRecords

SESSION_COOKIE = "lumina_session"
_CACHE_SECONDS = 5.0  # a revoked session is noticed by other instances within this
_TOUCH_SECONDS = 60.0  # last-seen is written at most this often per session

OPEN_REMOTE = (
    "This Lumina serves the machine it runs on only: it answers loopback clients until API "
    "keys are configured (LUMINA_API_KEYS; see docs/SECURITY.md)."
)
LOOPBACK_UNTRUSTED = (
    "Loopback clients are not trusted here (LUMINA_TRUST_LOOPBACK=false) and no API keys are "
    "configured, so nobody can sign in (see docs/SECURITY.md)."
)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AuthService:
    def __init__(self, settings: Settings, sessions: SessionRecords) -> None:
        self.settings = settings
        self.sessions = sessions
        self._cache: dict[str, tuple[SignInSession, float]] = {}
        self._touched: dict[int, float] = {}
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._attempts = parse(f"{settings.signin_attempts_per_minute}/minute")

    @property
    def closed(self) -> bool:
        """Whether callers must prove who they are (API keys are configured)."""
        return bool(self.settings.api_key_map)

    def exposure_problem(self) -> str | None:
        """Why this process must not start as configured: serving other machines with
        nobody required to prove who they are, or a door nobody can pass."""
        if self.closed:
            return None
        if not self.settings.host_is_loopback:
            return (
                f"LUMINA_HOST={self.settings.host} serves other machines, but no API keys are "
                "configured: anyone who can reach it would be the local operator. Set "
                "LUMINA_API_KEYS, or keep the default 127.0.0.1 (docs/SECURITY.md)."
            )
        if not self.settings.trust_loopback:
            return LOOPBACK_UNTRUSTED
        return None

    def open_to(self, client_host: str | None) -> Principal | None:
        """In open mode: the loopback owner for a trusted loopback client."""
        if self.settings.trust_loopback and is_loopback_name(client_host):
            return LOCAL
        return None

    async def authenticate(self, credentials: Credentials) -> Principal:
        """The caller, or NotAuthenticated (401) / AccessDenied (403) with the reason."""
        if not self.closed:  # keys and cookies mean nothing until keys are configured
            principal = self.open_to(credentials.client_host)
            if principal is None:
                trusted = self.settings.trust_loopback
                raise AccessDenied(OPEN_REMOTE if trusted else LOOPBACK_UNTRUSTED)
            return principal
        if credentials.authorization is not None:
            return self._bearer(credentials.authorization)
        if credentials.session_token:
            session = await self._session(credentials.session_token)
            if session is not None:
                return Principal(owner=session.owner, via=Via.SESSION, name=session.owner)
            raise NotAuthenticated("your session has ended: sign in again")
        raise NotAuthenticated("sign in, or send Authorization: Bearer <key>")

    def _bearer(self, authorization: str) -> Principal:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthenticated("malformed Authorization header (expected: Bearer <key>)")
        owner = self._key_owner(token.strip())
        if owner is None:
            raise NotAuthenticated("invalid bearer key")
        return Principal(owner=owner, via=Via.API_KEY, name=owner)

    def _key_owner(self, key: str) -> str | None:
        owner = None
        for known, key_owner in self.settings.api_key_map.items():  # every key: constant time
            if hmac.compare_digest(known.encode(), key.encode()):
                owner = key_owner
        return owner

    async def _session(self, token: str) -> SignInSession | None:
        digest = token_hash(token)
        now = time.monotonic()
        cached = self._cache.get(digest)
        if cached is not None and cached[1] > now:
            session = cached[0]
        else:
            session = await self.sessions.find(digest)
            if session is None:
                self._cache.pop(digest, None)
                return None
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[digest] = (session, now + _CACHE_SECONDS)
        if session.expires_at <= utcnow():
            return None
        if now - self._touched.get(session.id, -_TOUCH_SECONDS) >= _TOUCH_SECONDS:
            self._touched[session.id] = now
            await self.sessions.touch(session.id)
        return session

    # -- signing in and out ----------------------------------------------------------

    async def sign_in_with_key(
        self, key: str, credentials: Credentials
    ) -> tuple[str, SignInSession]:
        """A new browser session for a key's owner: ``(cookie token, session)``. Failures
        are rate-limited per address (TooManyAttempts, 429)."""
        if not self.closed:
            raise AccessDenied("no API keys are configured: there is nothing to sign in to")
        address = credentials.client_host or "unknown"
        await self._check_attempts(address)
        owner = self._key_owner(key.strip())
        if owner is None:
            await self._limiter.hit(self._attempts, "address", address)
            raise NotAuthenticated("that key is not valid")
        return await self._open_session(owner, "api-key", credentials)

    async def sign_out(self, token: str | None) -> None:
        if token:
            digest = token_hash(token)
            self._cache.pop(digest, None)
            await self.sessions.revoke(digest)

    async def _check_attempts(self, address: str) -> None:
        if not await self._limiter.test(self._attempts, "address", address):
            reset, _remaining = await self._limiter.get_window_stats(
                self._attempts, "address", address
            )
            wait = max(1, int(reset - time.time()) + 1)
            raise TooManyAttempts(f"too many failed sign-ins: try again in {wait} s", wait)

    async def _open_session(
        self, owner: str, method: str, credentials: Credentials, user_id: int | None = None
    ) -> tuple[str, SignInSession]:
        token = secrets.token_urlsafe(32)
        session = await self.sessions.create(
            token_hash=token_hash(token),
            owner=owner,
            method=method,
            expires_at=utcnow() + timedelta(hours=self.settings.session_ttl_hours),
            user_agent=credentials.user_agent,
            client_ip=credentials.client_host or "",
            user_id=user_id,
        )
        return token, session
