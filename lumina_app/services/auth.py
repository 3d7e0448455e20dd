"""Who is calling: the one place every way in (REST, the UI socket) turns credentials into a
:class:`Principal` (docs/SECURITY.md). Signing in and out is ``signin.py``.

* **Open** (no API keys configured, no user accounts): the local operator's console.
  Loopback clients act as the loopback owner (unless ``LUMINA_TRUST_LOOPBACK=false``);
  anyone else is refused.
* **Closed** (keys configured, or at least one account exists): every caller proves who it
  is — a bearer key (``LUMINA_API_KEYS`` or a user's own), or a signed-in browser session.
  Loopback gets nothing for free.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from dataclasses import replace

from lumina_app.domain import (
    LOCAL,
    AccessDenied,
    ApiKeyInfo,
    AuditEvent,
    Credentials,
    NotAuthenticated,
    Principal,
    SignInSession,
    StoreUnavailable,
    User,
    Via,
    utcnow,
)
from lumina_app.services.api_keys import key_digest
from lumina_app.services.audit import AuditLog
from lumina_app.services.short_cache import ShortCache, Throttle
from lumina_app.settings import Settings, is_loopback_name
from lumina_app.storage.api_keys import ApiKeyRecords
from lumina_app.storage.sessions import SessionRecords
from lumina_app.storage.users import UserRecords

log = logging.getLogger(__name__)

SESSION_COOKIE = "lumina_session"
_CACHE_SECONDS = 5.0  # a session or key revoked by another process is noticed within this
_TOUCH_SECONDS = 60.0  # last-seen / last-used is written at most this often
_USERS_SECONDS = 2.0  # an account created by another process switches the mode within this

OPEN_REMOTE = (
    "This Lumina serves the machine it runs on only: it answers loopback clients until API "
    "keys are configured (LUMINA_API_KEYS) or a user account exists (see docs/SECURITY.md)."
)
LOOPBACK_UNTRUSTED = (
    "Loopback clients are not trusted here (LUMINA_TRUST_LOOPBACK=false) and neither API "
    "keys nor user accounts exist, so nobody can sign in (see docs/SECURITY.md)."
)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AuthService:
    def __init__(
        self,
        settings: Settings,
        sessions: SessionRecords,
        users: UserRecords,
        keys: ApiKeyRecords,
        audit: AuditLog,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.users = users
        self.keys = keys
        self.audit = audit
        self._sessions: ShortCache[SignInSession] = ShortCache(_CACHE_SECONDS)
        self._keys: ShortCache[tuple[ApiKeyInfo, User]] = ShortCache(_CACHE_SECONDS)
        self._touch = Throttle(_TOUCH_SECONDS)
        self._key_use = Throttle(_TOUCH_SECONDS)  # one audit entry per key, address, minute
        self._users_exist: bool | None = None
        self._users_checked = 0.0
        self._count_failed = False

    # -- the mode ----------------------------------------------------------------------

    async def users_exist(self) -> bool:
        """Whether any account exists (asked of the store at most every 2 s; while one
        caller asks, the others go on with the last answer)."""
        now = time.monotonic()
        if self._users_exist is None or now - self._users_checked >= _USERS_SECONDS:
            self._users_checked = now
            try:
                self._users_exist = await self.users.exists()
                self._count_failed = False
            except StoreUnavailable:
                if self._users_exist is None:  # never known: no door opens on a guess
                    self._users_checked = 0.0
                    raise
                if not self._count_failed:  # once per outage, not every 2 s
                    log.warning("user accounts could not be counted; keeping the last answer")
                self._count_failed = True
        return self._users_exist

    def user_created(self) -> None:
        """This process created an account: users mode from now on, without waiting."""
        self._users_exist = True

    async def closed(self) -> bool:
        """Whether callers must prove who they are (keys configured, or accounts exist)."""
        return bool(self.settings.api_key_map) or await self.users_exist()

    async def exposure_problem(self) -> str | None:
        """Why this process must not start as configured: serving other machines with
        nobody required to prove who they are, or a door nobody can pass."""
        if await self.closed():
            return None
        if not self.settings.host_is_loopback:
            return (
                f"LUMINA_HOST={self.settings.host} serves other machines, but neither API keys "
                "nor user accounts exist: anyone who can reach it would be the local operator. "
                "Create an account (python -m lumina_app users add NAME --admin), set "
                "LUMINA_API_KEYS, or keep the default 127.0.0.1 (docs/SECURITY.md)."
            )
        if not self.settings.trust_loopback:
            return LOOPBACK_UNTRUSTED
        return None

    def open_to(self, client_host: str | None) -> Principal | None:
        """In open mode: the loopback owner for a trusted loopback client."""
        if self.settings.trust_loopback and is_loopback_name(client_host):
            return replace(LOCAL, address=client_host or "")
        return None

    # -- authentication ----------------------------------------------------------------

    async def authenticate(self, credentials: Credentials) -> Principal:
        """The caller, or NotAuthenticated (401) / AccessDenied (403) with the reason."""
        if not await self.closed():  # keys and cookies mean nothing in open mode
            principal = self.open_to(credentials.client_host)
            if principal is None:
                trusted = self.settings.trust_loopback
                raise AccessDenied(OPEN_REMOTE if trusted else LOOPBACK_UNTRUSTED)
            return principal
        address = credentials.client_host or ""
        if credentials.authorization is not None:
            return await self._bearer(credentials.authorization, address)
        if credentials.session_token:
            session = await self._session(credentials.session_token)
            if session is not None:
                return Principal(
                    owner=session.owner,
                    via=Via.SESSION,
                    name=session.owner,
                    user_id=session.user_id,
                    role=session.role,
                    session_id=session.id,
                    address=address,
                )
            raise NotAuthenticated("your session has ended: sign in again")
        raise NotAuthenticated("sign in, or send Authorization: Bearer <key>")

    async def _bearer(self, authorization: str, address: str) -> Principal:
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise NotAuthenticated("malformed Authorization header (expected: Bearer <key>)")
        owner = self.configured_key_owner(token)
        if owner is not None:
            await self._key_used(("configured", owner), owner, address, "a LUMINA_API_KEYS key")
            return Principal(owner=owner, via=Via.API_KEY, name=owner, address=address)
        found = await self._user_key(token)
        if found is None:
            raise NotAuthenticated("invalid bearer key")
        key, user = found
        if self._touch.due(("key", key.id)):
            await self.keys.touch(key.id)
        await self._key_used(key.id, user.username, address, f"key {key.id} {key.prefix}…")
        return Principal(
            owner=user.username,
            via=Via.API_KEY,
            name=user.username,
            user_id=user.id,
            role=user.role.value,
            address=address,
        )

    def configured_key_owner(self, key: str) -> str | None:
        """The owner of a LUMINA_API_KEYS key, compared in constant time with every one."""
        owner = None
        for known, key_owner in self.settings.api_key_map.items():
            if hmac.compare_digest(known.encode(), key.encode()):
                owner = key_owner
        return owner

    async def _user_key(self, key: str) -> tuple[ApiKeyInfo, User] | None:
        digest = key_digest(key)
        found = self._keys.get(digest)
        if found is None:
            found = await self.keys.find(digest)
            if found is None:
                return None
            self._keys.put(digest, found)
        return found

    async def _key_used(self, key: object, username: str, address: str, detail: str) -> None:
        if self._key_use.due((key, address)):
            await self.audit.record(
                AuditEvent.KEY_USED, username=username, address=address, detail=detail
            )

    async def _session(self, token: str) -> SignInSession | None:
        digest = token_hash(token)
        session = self._sessions.get(digest)
        if session is None:
            session = await self.sessions.find(digest)
            if session is None:
                return None
            self._sessions.put(digest, session)
        if session.expires_at <= utcnow():
            return None
        if self._touch.due(("session", session.id)):
            await self.sessions.touch(session.id)
        return session

    # -- revocations of this process, applied at once -----------------------------------

    def forget_token(self, token: str) -> None:
        self._sessions.drop(token_hash(token))

    def forget_sessions(self, session_ids: list[int]) -> None:
        ended = set(session_ids)
        self._sessions.drop_if(lambda session: session.id in ended)

    def forget_key(self, key_id: int) -> None:
        self._keys.drop_if(lambda found: found[0].id == key_id)

    def forget_user(self, user_id: int) -> None:
        """A disabled account: none of its sessions or keys is trusted from the cache."""
        self._sessions.drop_if(lambda session: session.user_id == user_id)
        self._keys.drop_if(lambda found: found[1].id == user_id)
