"""One's own account (password, sessions, keys), managing accounts, and claiming the local
operator's data."""

from __future__ import annotations

import pytest

from lumina_app.domain import (
    LOCAL,
    OPERATOR,
    AccessDenied,
    Credentials,
    InvalidInput,
    KeyNotFound,
    NotAuthenticated,
    NotFound,
    Principal,
    Role,
    SessionNotFound,
    UsernameTaken,
    UserNotFound,
    Via,
)
from tests.accounts.conftest import PASSWORD, add_user, as_user, browser

NEW = "a much better password"


async def sign_in(services, name: str, password: str = PASSWORD, address: str = "127.0.0.1"):
    signed = await services.signin.with_password(name, password, browser(address))
    return await services.auth.authenticate(browser(address, session_token=signed.token))


async def test_changing_the_password_ends_the_other_sessions_only(accounts) -> None:
    await add_user(accounts, "alice")
    here = await sign_in(accounts, "alice")
    there = await sign_in(accounts, "alice", address="10.0.0.2")
    made = await accounts.accounts.create_key(here, "ci")
    with pytest.raises(InvalidInput, match="current password"):
        await accounts.accounts.change_password(here, "wrong", NEW)
    with pytest.raises(InvalidInput, match="at least 12"):
        await accounts.accounts.change_password(here, PASSWORD, "short")
    assert await accounts.accounts.change_password(here, PASSWORD, NEW) == 1
    sessions = await accounts.accounts.list_sessions(here)
    assert [(s.session.id, s.current) for s in sessions] == [(here.session_id, True)]
    assert there.session_id not in {s.session.id for s in sessions}
    await accounts.auth.authenticate(browser(authorization=f"Bearer {made.key}"))  # keys stay
    await sign_in(accounts, "alice", NEW)
    with pytest.raises(NotAuthenticated, match="wrong"):
        await sign_in(accounts, "alice", PASSWORD)


async def test_sessions_are_listed_and_revoked_per_account(accounts) -> None:
    await add_user(accounts, "alice")
    await add_user(accounts, "bob")
    a1 = await sign_in(accounts, "alice")
    a2 = await sign_in(accounts, "alice", address="10.0.0.2")
    b1 = await sign_in(accounts, "bob")
    listed = await accounts.accounts.list_sessions(a1)
    assert {s.session.id for s in listed} == {a1.session_id, a2.session_id}
    assert {s.session.client_ip for s in listed} == {"127.0.0.1", "10.0.0.2"}
    assert all(s.session.user_agent == "pytest-browser" for s in listed)
    with pytest.raises(SessionNotFound):
        await accounts.accounts.revoke_session(a1, b1.session_id)
    await accounts.accounts.revoke_session(a1, a2.session_id)
    assert [s.session.id for s in await accounts.accounts.list_sessions(a1)] == [a1.session_id]
    await sign_in(accounts, "alice", address="10.0.0.3")
    assert await accounts.accounts.revoke_other_sessions(a1) == 1
    assert len(await accounts.accounts.list_sessions(b1)) == 1


async def test_keys_are_the_accounts_own(accounts) -> None:
    alice = await add_user(accounts, "alice")
    bob = await add_user(accounts, "bob")
    made = await accounts.accounts.create_key(as_user(alice), "  laptop   script ")
    assert made.info.name == "laptop script" and made.key.startswith(made.info.prefix)
    assert [k.id for k in await accounts.accounts.list_keys(as_user(alice))] == [made.info.id]
    assert await accounts.accounts.list_keys(as_user(bob)) == []
    with pytest.raises(KeyNotFound):
        await accounts.accounts.revoke_key(as_user(bob), made.info.id)
    with pytest.raises(InvalidInput):
        await accounts.accounts.create_key(as_user(alice), "   ")
    await accounts.accounts.revoke_key(as_user(alice), made.info.id)
    with pytest.raises(KeyNotFound):
        await accounts.accounts.revoke_key(as_user(alice), made.info.id)


async def test_without_an_account_there_are_no_keys_or_passwords(accounts) -> None:
    holder = Principal(owner="ci", via=Via.API_KEY, name="ci")
    assert await accounts.accounts.list_keys(holder) == []
    for attempt in (
        accounts.accounts.create_key(holder, "k"),
        accounts.accounts.change_password(holder, PASSWORD, NEW),
        accounts.accounts.list_sessions(LOCAL),
    ):
        with pytest.raises(AccessDenied):
            await attempt
    me = await accounts.accounts.me(holder)
    assert (me.owner, me.username, me.role, me.via) == ("ci", "", "", "api-key")


async def test_admins_manage_accounts_and_members_find_nothing(accounts) -> None:
    root = await add_user(accounts, "root", Role.ADMIN)
    member = await add_user(accounts, "mia")
    admin, nobody = as_user(root), as_user(member)
    for attempt in (
        accounts.users.list(nobody),
        accounts.users.create(nobody, "eve", role=Role.ADMIN),
        accounts.users.disable(nobody, "root"),
        accounts.users.reset_password(nobody, "root"),
        accounts.users.audit_entries(nobody),
        accounts.users.claim_local_data(admin, "root"),  # the operator's alone
    ):
        with pytest.raises(NotFound, match=r"^not found$"):
            await attempt
    made = await accounts.users.create(admin, " Dave ", role=Role.MEMBER)
    assert made.user.username == "dave" and made.user.must_change_password
    assert len(made.temporary) >= 16
    await sign_in(accounts, "dave", made.temporary)
    with pytest.raises(UsernameTaken):
        await accounts.users.create(admin, "dave", role=Role.MEMBER, password=NEW)
    with pytest.raises(InvalidInput, match="username"):
        await accounts.users.create(admin, "no spaces please", role=Role.MEMBER)
    with pytest.raises(InvalidInput, match="own account"):
        await accounts.users.disable(admin, "root")
    with pytest.raises(UserNotFound):
        await accounts.users.disable(admin, "ghost")
    reset = await accounts.users.reset_password(admin, "dave", NEW)
    assert reset.temporary is None and reset.user.must_change_password
    with pytest.raises(NotAuthenticated):  # the temporary password is gone
        await sign_in(accounts, "dave", made.temporary)
    assert (await accounts.users.disable(admin, "dave")).user.disabled
    assert not (await accounts.users.enable(admin, "dave")).disabled
    events = [e.event.value for e in await accounts.users.audit_entries(admin, limit=200)]
    for event in ("user-created", "password-reset", "user-disabled", "user-enabled"):
        assert event in events


async def test_claim_moves_the_local_operators_data_to_an_account(accounts) -> None:
    mine = await accounts.conversations.create(LOCAL, agent_id="demo", title="from local mode")
    await accounts.runs.execute_sync(
        LOCAL, agent_id="demo", message="hi", conversation_uuid=mine.uuid
    )
    await accounts.idempotency.claim("", "same", "f", lease=30)
    await accounts.idempotency.claim("", "only-local", "f", lease=30)
    alice = await add_user(accounts, "alice")
    await accounts.idempotency.claim("alice", "same", "g", lease=30)
    with pytest.raises(UserNotFound):
        await accounts.users.claim_local_data(OPERATOR, "nobody")
    counts = await accounts.users.claim_local_data(OPERATOR, "alice")
    assert (counts.conversations, counts.runs, counts.sessions) == (1, 1, 0)
    assert (counts.idempotency_keys, counts.idempotency_dropped) == (1, 1)
    listed, _ = await accounts.conversations.list(as_user(alice), agent_id="demo")
    assert [c.uuid for c in listed] == [mine.uuid]
    assert (await accounts.conversations.list(LOCAL, agent_id="demo"))[0] == []
    assert (await accounts.idempotency.get("alice", "same")).fingerprint == "g"
    assert await accounts.idempotency.get("alice", "only-local") is not None
    again = await accounts.users.claim_local_data(OPERATOR, "alice")
    assert again.conversations == 0


async def test_a_reset_revokes_the_accounts_keys_and_sessions_unless_kept(accounts) -> None:
    admin = await sign_in(accounts, (await add_user(accounts, "root", Role.ADMIN)).username)
    dave = await add_user(accounts, "dave")
    erin = await add_user(accounts, "erin")
    erins = (await accounts.accounts.create_key(as_user(erin), "erin's")).key

    async def daves_access() -> tuple[Credentials, Credentials]:
        key = (await accounts.accounts.create_key(as_user(dave), "made by mallory")).key
        signed = await accounts.signin.with_password("dave", PASSWORD, browser())
        return Credentials(authorization=f"Bearer {key}"), browser(session_token=signed.token)

    async def works(credentials: Credentials) -> bool:
        try:
            return (await accounts.auth.authenticate(credentials)).owner == "dave"
        except NotAuthenticated:
            return False

    kept = await daves_access()
    done = await accounts.users.reset_password(
        admin, "dave", PASSWORD, end_sessions=False, revoke_keys=False
    )
    assert (done.sessions_ended, done.keys_revoked) == (0, 0)
    assert [await works(c) for c in kept] == [True, True]
    stolen = await daves_access()
    done = await accounts.users.reset_password(admin, "dave", PASSWORD, end_sessions=False)
    assert (done.sessions_ended, done.keys_revoked) == (0, 2)
    assert [await works(c) for c in (*kept, *stolen)] == [False, True, False, True]
    done = await accounts.users.reset_password(admin, "dave", PASSWORD)
    assert (done.sessions_ended, done.keys_revoked) == (2, 0)
    assert [await works(c) for c in (*kept, *stolen)] == [False] * 4
    assert await accounts.auth.authenticate(Credentials(authorization=f"Bearer {erins}"))
    assert [k.username for k in await accounts.users.list_keys(admin)] == ["erin"]
