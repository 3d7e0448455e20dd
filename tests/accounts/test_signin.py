"""Signing in with a password: sessions, wrong passwords, names with no account (same
Argon2 work), disabled accounts, limits per username and per address, the audit log."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from lumina_app.domain import (
    OPERATOR,
    AccessDenied,
    AuditEvent,
    NotAuthenticated,
    Role,
    TooManyAttempts,
    Via,
)
from lumina_app.services.passwords import Passwords
from lumina_app.services.signin_limits import SignInLimits
from lumina_app.storage.redis.client import create_redis_client
from lumina_app.storage.redis.slots import RedisSlots
from tests.accounts.conftest import PASSWORD, add_user, browser


async def test_a_password_opens_a_session_for_the_account(accounts) -> None:
    alice = await add_user(accounts, "alice", Role.ADMIN)
    signed = await accounts.signin.with_password(" Alice ", PASSWORD, browser())
    assert signed.user == alice and signed.session.method == "password"
    assert signed.session.user_id == alice.id and signed.session.owner == "alice"
    assert signed.token not in repr(signed.session)
    caller = await accounts.auth.authenticate(browser(session_token=signed.token))
    assert (caller.owner, caller.via, caller.user_id, caller.session_id) == (
        "alice",
        Via.SESSION,
        alice.id,
        signed.session.id,
    )
    assert caller.is_admin
    await accounts.signin.sign_out(signed.token, browser())
    with pytest.raises(NotAuthenticated):
        await accounts.auth.authenticate(browser(session_token=signed.token))


async def test_wrong_passwords_and_unknown_names_fail_alike(accounts, monkeypatch) -> None:
    await add_user(accounts, "alice")
    checked: list[str] = []
    verify = Passwords.verify

    async def spy(self, password, password_hash):
        checked.append(password_hash)
        return await verify(self, password, password_hash)

    monkeypatch.setattr(Passwords, "verify", spy)
    errors = []
    for name in ("alice", "nobody", "Not A Valid Name!"):
        with pytest.raises(NotAuthenticated) as caught:
            await accounts.signin.with_password(name, "wrong password", browser())
        errors.append(str(caught.value))
    assert errors == ["wrong username or password"] * 3
    # One Argon2 check each: for a name with no account, against a stand-in hash.
    assert len(checked) == 3 and all(h.startswith("$argon2id$") for h in checked)
    assert checked[1] == checked[2] != checked[0]


async def test_a_disabled_account_cannot_sign_in_and_its_session_ends_at_once(accounts) -> None:
    await add_user(accounts, "alice")
    await add_user(accounts, "root", Role.ADMIN)
    signed = await accounts.signin.with_password("alice", PASSWORD, browser())
    cookie = browser(session_token=signed.token)
    await accounts.auth.authenticate(cookie)  # cached
    await accounts.users.disable(OPERATOR, "alice")
    with pytest.raises(NotAuthenticated):
        await accounts.auth.authenticate(cookie)
    with pytest.raises(AccessDenied, match="disabled"):
        await accounts.signin.with_password("alice", PASSWORD, browser())
    with pytest.raises(NotAuthenticated):  # a wrong password does not learn it is disabled
        await accounts.signin.with_password("alice", "wrong password", browser())


async def test_failures_are_limited_per_username_across_addresses(open_on) -> None:
    services = await open_on(signin_attempts_per_user_per_minute=3)
    await add_user(services, "alice")
    for n in range(3):
        with pytest.raises(NotAuthenticated):
            await services.signin.with_password("alice", "guess", browser(f"10.0.0.{n}"))
    with pytest.raises(TooManyAttempts) as limited:
        await services.signin.with_password("alice", PASSWORD, browser("10.0.0.99"))
    assert 1 <= limited.value.retry_after <= 61
    with pytest.raises(TooManyAttempts):  # any spelling of the name
        await services.signin.with_password("ALICE", PASSWORD, browser("10.0.1.1"))
    await add_user(services, "bob")
    await services.signin.with_password("bob", PASSWORD, browser("10.0.0.1"))  # others fine


async def test_failures_are_limited_per_address_across_usernames(open_on) -> None:
    services = await open_on(signin_attempts_per_minute=3)
    await add_user(services, "alice")
    for name in ("a", "b", "c"):
        with pytest.raises(NotAuthenticated):
            await services.signin.with_password(name, "guess", browser("10.9.9.9"))
    with pytest.raises(TooManyAttempts):
        await services.signin.with_password("alice", PASSWORD, browser("10.9.9.9"))
    await services.signin.with_password("alice", PASSWORD, browser("10.9.9.8"))


async def test_a_success_restarts_the_accounts_own_count(open_on) -> None:
    services = await open_on(signin_attempts_per_user_per_minute=3)
    await add_user(services, "alice")
    for _ in range(2):
        with pytest.raises(NotAuthenticated):
            await services.signin.with_password("alice", "typo", browser())
    await services.signin.with_password("alice", PASSWORD, browser())
    for _ in range(2):
        with pytest.raises(NotAuthenticated):
            await services.signin.with_password("alice", "typo", browser())
    await services.signin.with_password("alice", PASSWORD, browser())


async def test_sign_ins_failures_and_sign_outs_are_audited_in_sql_and_the_log(
    accounts, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lumina_app.audit")
    await add_user(accounts, "alice")
    with pytest.raises(NotAuthenticated):
        await accounts.signin.with_password("alice", "nope", browser("10.1.1.1"))
    signed = await accounts.signin.with_password("alice", PASSWORD, browser("10.1.1.2"))
    await accounts.signin.sign_out(signed.token, browser("10.1.1.2"))
    entries = await accounts.users.audit_entries(OPERATOR, limit=3)
    assert [(e.event, e.username, e.client_ip) for e in entries] == [
        (AuditEvent.SIGN_OUT, "alice", "10.1.1.2"),
        (AuditEvent.SIGN_IN, "alice", "10.1.1.2"),
        (AuditEvent.SIGN_IN_FAILED, "alice", "10.1.1.1"),
    ]
    logged = [r.audit for r in caplog.records if r.name == "lumina_app.audit"][-3:]
    assert [r["event"] for r in logged] == ["sign-in-failed", "sign-in", "sign-out"]
    assert set(logged[0]) == {"at", "event", "username", "actor", "address", "detail"}
    assert json.loads(caplog.records[-1].getMessage().removeprefix("audit ")) == logged[-1]
    assert PASSWORD not in caplog.text and "nope" not in caplog.text


async def test_there_is_nothing_to_sign_in_to_in_open_mode(accounts) -> None:
    with pytest.raises(AccessDenied):
        await accounts.signin.with_password("alice", PASSWORD, browser())
    with pytest.raises(AccessDenied):
        await accounts.signin.with_key("anything", browser())


async def test_limits_are_shared_by_every_worker_through_redis(open_on) -> None:
    """Two processes of one deployment (same Redis, same prefix) count failures together:
    a second worker gives an attacker no fresh allowance."""
    first = await open_on(signin_attempts_per_user_per_minute=4)
    second = await open_on(signin_attempts_per_user_per_minute=4)
    await add_user(first, "alice")
    for services in (first, second, first, second):
        with pytest.raises(NotAuthenticated):
            await services.signin.with_password("alice", "guess", browser("10.1.1.1"))
    for services in (first, second):
        with pytest.raises(TooManyAttempts):
            await services.signin.with_password("alice", PASSWORD, browser("10.1.1.2"))


async def test_with_redis_unreachable_sign_in_is_still_limited_in_process(caplog) -> None:
    client = create_redis_client("redis://127.0.0.1:1/0", socket_timeout=0.2)
    limits = SignInLimits(RedisSlots(client, prefix="lumina"), per_address=10, per_user=2)
    for _ in range(2):
        await limits.attempt("10.2.2.2", "alice")
    with pytest.raises(TooManyAttempts):
        await limits.attempt("10.2.2.3", "alice")
    await limits.succeeded(await limits.attempt("10.2.2.3", "bob"))
    assert any("Redis unavailable" in r.getMessage() for r in caplog.records)
    await client.aclose()


async def test_concurrent_attempts_are_counted_before_any_password_is_checked(open_on) -> None:
    """A burst for one account: only as many attempts as the limit reach the Argon2
    check; the others are refused at once, the right password among them or not."""
    services = await open_on(signin_attempts_per_user_per_minute=4)
    await add_user(services, "alice")
    tries = [services.signin.with_password("alice", f"guess {n}", browser()) for n in range(12)]
    outcomes = await asyncio.gather(*tries, return_exceptions=True)
    kinds = sorted(type(o).__name__ for o in outcomes)
    assert kinds == ["NotAuthenticated"] * 4 + ["TooManyAttempts"] * 8


async def test_a_success_gives_its_attempt_back_to_the_address(open_on) -> None:
    services = await open_on(signin_attempts_per_minute=3)
    await add_user(services, "alice")
    for _ in range(5):  # successes do not use up the address's allowance
        await services.signin.with_password("alice", PASSWORD, browser("10.3.3.3"))
    for _ in range(3):
        with pytest.raises(NotAuthenticated):
            await services.signin.with_password("alice", "typo", browser("10.3.3.3"))
    with pytest.raises(TooManyAttempts):
        await services.signin.with_password("alice", PASSWORD, browser("10.3.3.3"))
