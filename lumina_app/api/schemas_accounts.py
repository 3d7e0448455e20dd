"""Bodies and views of the account routes: sign-in, one's own account and keys, admin."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from pydantic import BaseModel, Field, StrictBool

from lumina_app.api.schemas import NoNul, StrictBody, Unicode, copied
from lumina_app.domain import ApiKeyInfo, AuditEntry, Role, User
from lumina_app.domain.accounts import MAX_KEY_NAME_CHARS, MAX_PASSWORD_CHARS
from lumina_app.domain.views import iso_us
from lumina_app.services.account_deletion import DeletionReport
from lumina_app.services.accounts import Me, SessionView
from lumina_app.services.audit import audit_record

Text = Annotated[str, Unicode, NoNul]
# Row ids are 32-bit INTEGER columns: a larger number names nothing (not a database error).
RowId = Annotated[int, Path(ge=1, le=2**31 - 1)]
Username = Annotated[str, Path(min_length=1, max_length=128)]
Password = Annotated[str, Unicode, NoNul, Field(min_length=1, max_length=MAX_PASSWORD_CHARS)]


def _at(moment: Any) -> str | None:
    return iso_us(moment) if moment is not None else None


# -- signing in --------------------------------------------------------------------------


class PasswordLogin(StrictBody):
    username: Annotated[str, Unicode, NoNul] = Field(min_length=1, max_length=128)
    password: Password


class KeyLogin(StrictBody):
    """A LUMINA_API_KEYS key."""

    api_key: Annotated[str, Unicode, NoNul] = Field(alias="apiKey", min_length=1, max_length=512)


Login = PasswordLogin | KeyLogin


class SignedIn(BaseModel):
    owner: str
    via: str
    username: str = ""
    role: str = ""
    mustChangePassword: bool = False
    expiresAt: str | None = None


class MeOut(BaseModel):
    owner: str
    username: str
    role: str
    via: str
    mustChangePassword: bool

    @classmethod
    def of(cls, me: Me) -> MeOut:
        return copied(cls, me)


# -- one's own account -------------------------------------------------------------------


class ChangePassword(StrictBody):
    current_password: Password = Field(alias="currentPassword")
    new_password: Password = Field(alias="newPassword")


class PasswordChanged(BaseModel):
    otherSessionsEnded: int


class SessionOut(BaseModel):
    id: int
    method: str
    createdAt: str
    lastSeenAt: str
    expiresAt: str
    userAgent: str
    address: str
    current: bool

    @classmethod
    def of(cls, view: SessionView) -> SessionOut:
        s = view.session
        return copied(
            cls,
            s,
            createdAt=iso_us(s.created_at),
            lastSeenAt=iso_us(s.last_seen_at),
            expiresAt=iso_us(s.expires_at),
            address=s.client_ip,
            current=view.current,
        )


class SessionsRevoked(BaseModel):
    revoked: int


class NewKeyBody(StrictBody):
    name: Text = Field(min_length=1, max_length=MAX_KEY_NAME_CHARS)


class KeyOut(BaseModel):
    id: int
    name: str
    prefix: str
    createdAt: str
    lastUsedAt: str | None

    @classmethod
    def of(cls, key: ApiKeyInfo) -> KeyOut:
        return copied(cls, key, createdAt=iso_us(key.created_at), lastUsedAt=_at(key.last_used_at))


class CreatedKeyOut(KeyOut):
    key: str = Field(description="The key itself: shown this once, never again")


# -- admin -------------------------------------------------------------------------------


class NewUser(StrictBody):
    username: Text = Field(min_length=1, max_length=64)
    role: Role = Role.MEMBER
    password: Password | None = Field(
        default=None, description="Left out: a temporary password is generated and returned"
    )


class ResetPassword(StrictBody):
    password: Password | None = Field(
        default=None, description="Left out: a temporary password is generated and returned"
    )
    endSessions: StrictBool = Field(
        default=True, description="Sign the account out of every browser (default: yes)"
    )
    revokeKeys: StrictBool = Field(
        default=True, description="Revoke every API key of the account (default: yes)"
    )


class UserOut(BaseModel):
    username: str
    role: str
    createdAt: str
    disabledAt: str | None
    disabled: bool
    mustChangePassword: bool

    @classmethod
    def of(cls, user: User) -> UserOut:
        return copied(
            cls,
            user,
            role=user.role.value,
            createdAt=iso_us(user.created_at),
            disabledAt=_at(user.disabled_at),
        )


class UserWithPassword(BaseModel):
    user: UserOut
    temporaryPassword: str | None = Field(
        default=None, description="The generated password: shown this once, never again"
    )


class AuditOut(BaseModel):
    id: int
    at: str | None
    event: str
    username: str
    actor: str
    address: str
    detail: str

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditOut:
        return cls(id=entry.id or 0, **audit_record(entry))


# -- deleting an account -------------------------------------------------------------------


class DeleteAccount(StrictBody):
    password: Password
    confirm: Annotated[str, Unicode, NoNul, Field(max_length=128)]  # the username, typed


class AccountDeleted(BaseModel):
    """How much went (counts only)."""

    username: str
    conversations: int
    messages: int
    runs: int
    memories: int
    sessions: int
    keys: int

    @classmethod
    def of(cls, report: DeletionReport) -> AccountDeleted:
        c, r = report.conversations, report.rest
        return cls(
            username=report.username,
            conversations=c.conversations,
            messages=c.messages,
            runs=c.runs,
            memories=r.memories,
            sessions=r.sessions,
            keys=r.keys,
        )
