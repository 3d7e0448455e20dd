"""Deleting an account and everything it owns: by the person (password and typed username
again), by an admin (/admin, its API) or by the operator (``users delete NAME``).

The account is marked first (disabled, its password hash replaced by a mark nothing
verifies against, its sessions ended and keys revoked, in one transaction), so it is shut
out at once and an interrupted deletion is found again: a rerun of the command, the
server's start, or ``python -m lumina_app sweep`` finishes it. Then its uploaded files
(the ones its messages carry too, with their links), its conversations a batch at a time
with every part (``purge``), its Redis counters and archive memory files, and last, in one
transaction, its memories, sessions, keys,
idempotency records and the account row. The audit log says who deleted whom and how
much — counts, no content.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from lumina_app.archive import memory_files
from lumina_app.archive.service import ArchiveService
from lumina_app.domain import (
    AccessDenied,
    AuditEvent,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    Principal,
    PurgeCounts,
    User,
    UserNotFound,
)
from lumina_app.domain.accounts import is_username, normalize_username
from lumina_app.services.audit import AuditLog
from lumina_app.services.auth import AuthService
from lumina_app.services.files import FileService
from lumina_app.services.live import LiveHub
from lumina_app.services.passwords import Passwords
from lumina_app.services.purge import ConversationPurge, Purged
from lumina_app.storage.users import UserRecords

log = logging.getLogger(__name__)

ForgetOwner = Callable[[str], Awaitable[None]]


@dataclass(slots=True)
class DeletionReport:
    username: str
    conversations: Purged = field(default_factory=Purged)
    rest: PurgeCounts = field(default_factory=PurgeCounts)
    files: int = 0

    def detail(self) -> str:
        """How much, never what: the audit entry's text."""
        c, r = self.conversations, self.rest
        return (
            f"{c.conversations} conversation(s), {c.messages} message(s), {c.runs} run(s), "
            f"{r.memories} memory(ies), {r.sessions} session(s), {r.keys} key(s), "
            f"{self.files} file(s)"
        )


@dataclass(eq=False, repr=False, kw_only=True)
class AccountDeletion:
    users: UserRecords
    auth: AuthService
    passwords: Passwords
    audit: AuditLog
    purge: ConversationPurge
    archive: ArchiveService
    live: LiveHub | None = None
    files: FileService | None = None
    forget_owner: Sequence[ForgetOwner] = ()  # Redis counters kept per owner
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    def __post_init__(self) -> None:
        self.forget_owner = list(self.forget_owner)

    async def delete_own(self, principal: Principal, password: str, confirm: str) -> DeletionReport:
        """The caller's own account, given its password and its username typed again."""
        if principal.user_id is None:
            raise AccessDenied("only a user account can be deleted: sign in with a username")
        found = await self.users.get(principal.user_id)
        if found is None:
            raise NotAuthenticated("this account no longer exists")
        user, stored = found
        if normalize_username(confirm) != user.username:
            raise InvalidInput("type your username to confirm the deletion")
        if not await self.passwords.verify(password, stored):
            raise InvalidInput("the password is not right")
        return await self._delete(user, actor=user.username, address=principal.address)

    async def delete_user(self, principal: Principal, username: str) -> DeletionReport:
        """Any account, for an admin or the operator (to anyone else: not found)."""
        if not principal.is_admin:
            raise NotFound("not found")
        name = normalize_username(username)
        found = await self.users.find(name) if is_username(name) else None
        if found is None:
            raise UserNotFound(name)
        user = found[0]
        if user.id == principal.user_id:
            raise InvalidInput("delete your own account on your account page")
        return await self._delete(user, actor=principal.label, address=principal.address)

    async def finish_pending(self) -> list[DeletionReport]:
        """Finish every deletion an interruption left half done."""
        return [
            await self._delete(user, actor="resumed", address="")
            for user in await self.users.deleting()
        ]

    async def _delete(self, user: User, *, actor: str, address: str) -> DeletionReport:
        async with self._lock:  # one deletion at a time in this process
            return await self._delete_locked(user, actor=actor, address=address)

    async def _delete_locked(self, user: User, *, actor: str, address: str) -> DeletionReport:
        owner = user.username
        pending = {u.id for u in await self.users.deleting()}
        if user.id not in pending:
            await self.users.disable(user.id, deleting=True)
            await self.audit.record(
                AuditEvent.USER_DELETE_STARTED, username=owner, actor=actor, address=address
            )
        self.auth.forget_user(user.id)
        if self.live is not None:
            await self.live.close_owner(owner)
        report = DeletionReport(owner)
        if self.files is not None:  # first: the files its messages carry count too
            report.files = await self.files.delete_owner(owner)
        report.conversations = await self.purge.drain(owner=owner)
        for forget in self.forget_owner:
            await forget(owner)
        await self._remove_memory_files(owner)
        report.rest = await self.users.purge(user.id, owner)
        self.auth.forget_user(user.id)
        if not report.rest.account:  # a concurrent deletion (another process) finished it
            return report
        await self.audit.record(
            AuditEvent.USER_DELETED,
            username=owner,
            actor=actor,
            address=address,
            detail=report.detail(),
        )
        log.info("account %s deleted: %s", owner, report.detail())
        return report

    async def _remove_memory_files(self, owner: str) -> None:
        """``agents/<agentId>/memory/<owner>.json`` of every agent in the archive root."""
        name = memory_files.file_name(owner)
        agents = self.archive.root / "agents"

        def remove() -> None:
            if not agents.is_dir():
                return
            for folder in agents.iterdir():
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):
                    (folder / memory_files.MEMORY_FOLDER / name).unlink()

        async with self.archive.lock:
            await asyncio.to_thread(remove)
