"""The account tables on SQLite, MariaDB and PostgreSQL: users, keys, sessions, audit."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from lumina_app.domain import AuditEntry, AuditEvent, Role, UsernameTaken, utcnow
from lumina_app.services.api_keys import new_api_key
from lumina_app.services.auth import token_hash
from lumina_app.storage.sql.models import users
from tests.accounts.conftest import add_user


async def new_session(services, token: str, owner: str, user_id: int | None):
    return await services.auth.sessions.create(
        token_hash=token_hash(token),
        owner=owner,
        method="password",
        expires_at=utcnow() + timedelta(hours=1),
        user_agent="ua",
        client_ip="127.0.0.1",
        user_id=user_id,
    )


async def test_usernames_are_unique_and_found_exactly(accounts) -> None:
    store = accounts.auth.users
    assert not await store.exists()
    alice = await add_user(accounts, "alice", Role.ADMIN)
    assert await store.exists()
    found, stored_hash = await store.find("alice")
    assert found == alice and found.role is Role.ADMIN and stored_hash.startswith("$argon2id$")
    assert await store.find("Alice") is None and await store.find("alic") is None
    with pytest.raises(UsernameTaken):
        await store.create(
            username="alice", password_hash="x", role=Role.MEMBER, must_change_password=False
        )
    await add_user(accounts, "bob")
    assert [u.username for u in await store.list()] == ["alice", "bob"]


async def test_disabling_ends_sessions_and_revokes_keys_in_one_go(accounts) -> None:
    alice = await add_user(accounts, "alice")
    bob = await add_user(accounts, "bob")
    for who, token in ((alice, "a1"), (alice, "a2"), (bob, "b1")):
        await new_session(accounts, token, who.username, who.id)
    keys = accounts.auth.keys
    made = new_api_key()
    await keys.create(user_id=alice.id, name="ci", prefix=made.prefix, key_hash=made.digest)
    assert (await keys.find(made.digest))[1].id == alice.id

    assert await accounts.auth.users.disable(alice.id) == (2, 1)
    sessions = accounts.auth.sessions
    assert await sessions.find(token_hash("a1")) is None
    assert await keys.find(made.digest) is None
    assert await sessions.find(token_hash("b1")) is not None  # bob is untouched
    assert (await accounts.auth.users.find("alice"))[0].disabled

    await accounts.auth.users.enable(alice.id)  # brings neither back
    assert await sessions.find(token_hash("a2")) is None
    assert await keys.find(made.digest) is None


async def test_a_disabled_accounts_session_is_not_found_even_unrevoked(accounts) -> None:
    """The session lookup itself checks the account (belt and braces for the revocation)."""
    alice = await add_user(accounts, "alice")
    await new_session(accounts, "tok", "alice", alice.id)
    found = await accounts.auth.sessions.find(token_hash("tok"))
    assert found.role == "member" and found.user_id == alice.id
    async with accounts.db.begin() as conn:  # disabled behind the store's back
        await conn.execute(sa.update(users).values(disabled_at=utcnow()))
    assert await accounts.auth.sessions.find(token_hash("tok")) is None


async def test_keys_are_found_by_hash_only_while_live(accounts) -> None:
    alice = await add_user(accounts, "alice")
    bob = await add_user(accounts, "bob")
    keys = accounts.auth.keys
    first, second = new_api_key(), new_api_key()
    a = await keys.create(user_id=alice.id, name="one", prefix=first.prefix, key_hash=first.digest)
    b = await keys.create(user_id=bob.id, name="two", prefix=second.prefix, key_hash=second.digest)
    assert a.prefix == first.key[:12] and a.prefix.startswith("lum_")
    assert [k.id for k in await keys.list(user_id=alice.id)] == [a.id]
    assert [k.id for k in await keys.list()] == [b.id, a.id]
    assert not await keys.revoke(a.id, user_id=bob.id)  # not bob's to revoke
    assert await keys.find(first.digest) is not None
    assert await keys.revoke(a.id, user_id=alice.id)
    assert not await keys.revoke(a.id, user_id=alice.id)  # already revoked
    assert await keys.find(first.digest) is None
    assert await keys.list(user_id=alice.id) == []
    await keys.touch(b.id)
    assert (await keys.get(b.id)).last_used_at is not None


async def test_session_lists_and_revocations_are_scoped_to_the_caller(accounts) -> None:
    alice = await add_user(accounts, "alice")
    bob = await add_user(accounts, "bob")
    sessions = accounts.auth.sessions
    a1 = await new_session(accounts, "a1", "alice", alice.id)
    a2 = await new_session(accounts, "a2", "alice", alice.id)
    keyed = await new_session(accounts, "k1", "alice", None)  # signed in with alice's env key
    b1 = await new_session(accounts, "b1", "bob", bob.id)
    mine = await sessions.list_live(owner="alice", user_id=alice.id)
    assert {s.id for s in mine} == {a1.id, a2.id}
    assert [s.id for s in await sessions.list_live(owner="alice", user_id=None)] == [keyed.id]
    assert await sessions.revoke_by_id(b1.id, owner="alice", user_id=alice.id) is None
    assert (await sessions.revoke_by_id(a2.id, owner="alice", user_id=alice.id)).id == a2.id
    assert await sessions.revoke_all(owner="alice", user_id=alice.id, keep=a1.id) == []
    assert await sessions.revoke_all(owner="alice", user_id=alice.id) == [a1.id]
    assert await sessions.find(token_hash("b1")) is not None
    assert await sessions.find(token_hash("k1")) is not None


async def test_the_audit_log_keeps_any_text_and_reads_newest_first(accounts) -> None:
    store = accounts.users.audit.store
    hostile = "eve\x00\ud800" + "x" * 300
    await store.add(AuditEntry(AuditEvent.SIGN_IN_FAILED, username=hostile, client_ip="10.0.0.9"))
    await store.add(AuditEntry(AuditEvent.SIGN_IN, username="alice", detail="password"))
    newest, oldest = await store.list(limit=10)
    assert newest.event is AuditEvent.SIGN_IN and newest.username == "alice"
    assert oldest.username.startswith("eve\ufffd") and len(oldest.username) == 128
    assert [e.id for e in await store.list(limit=10, before=newest.id)] == [oldest.id]
    assert [e.id for e in await store.list(limit=10, username="alice")] == [newest.id]
