"""The contract of the account store (``sql.users.UserStore``)."""

from __future__ import annotations

from typing import Protocol

from lumina_app.domain import PurgeCounts, Role, User


class UserRecords(Protocol):
    async def create(
        self, *, username: str, password_hash: str, role: Role, must_change_password: bool
    ) -> User:
        """A new account; UsernameTaken if the name is in use."""

    async def find(self, username: str) -> tuple[User, str] | None:
        """The account and its password hash, disabled or not."""

    async def get(self, user_id: int) -> tuple[User, str] | None: ...

    async def list(self) -> list[User]:
        """Every account, by username."""

    async def exists(self) -> bool:
        """Whether any account exists (disabled ones count): the switch to users mode."""

    async def set_password(
        self, user_id: int, password_hash: str, *, must_change_password: bool
    ) -> None: ...

    async def disable(self, user_id: int, *, deleting: bool = False) -> tuple[int, int]:
        """Disable the account and, in the same transaction, end its sessions and revoke its
        keys: ``(sessions ended, keys revoked)``; ``deleting`` marks it as being deleted."""

    async def deleting(self) -> list[User]:
        """Accounts whose deletion began and has not finished."""

    async def purge(self, user_id: int, owner: str) -> PurgeCounts:
        """The account's row, memories, sessions, keys and idempotency records, at once."""

    async def enable(self, user_id: int) -> None: ...
