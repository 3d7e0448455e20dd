"""Open mode until keys or accounts exist; then everyone proves who they are, loopback
included. An account made by another process switches the mode within seconds."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from lumina_app.domain import (
    OPERATOR,
    AccessDenied,
    Credentials,
    NotAuthenticated,
    Role,
    Via,
)
from tests.accounts.conftest import add_user, as_user

LOOPBACK = Credentials(client_host="127.0.0.1")


async def test_an_account_made_elsewhere_closes_the_door_within_seconds(open_on) -> None:
    server = await open_on()
    cli = await open_on()  # another process: its own caches
    assert (await server.auth.authenticate(LOOPBACK)).via is Via.LOOPBACK
    await add_user(cli, "alice", Role.ADMIN)
    async with asyncio.timeout(5):
        while True:
            try:
                await server.auth.authenticate(LOOPBACK)
            except NotAuthenticated:
                break
            await asyncio.sleep(0.1)
    assert await server.auth.closed()


async def test_in_users_mode_loopback_is_nobody_and_the_reasons_say_so(accounts) -> None:
    await add_user(accounts, "alice")
    with pytest.raises(NotAuthenticated, match="sign in"):
        await accounts.auth.authenticate(LOOPBACK)
    with pytest.raises(NotAuthenticated, match="session has ended"):
        await accounts.auth.authenticate(replace(LOOPBACK, session_token="made-up"))
    assert await accounts.auth.exposure_problem() is None


async def test_the_start_up_rule_counts_accounts(open_on) -> None:
    exposed = await open_on(host="0.0.0.0", allowed_hosts="lumina.test")
    problem = await exposed.auth.exposure_problem()
    assert "LUMINA_HOST=0.0.0.0" in problem and "users add" in problem
    await add_user(exposed, "alice", Role.ADMIN)
    assert await exposed.auth.exposure_problem() is None
    untrusting = await open_on(trust_loopback=False)
    assert await untrusting.auth.exposure_problem() is None  # the account exists already


async def test_configured_keys_keep_working_beside_accounts(open_on) -> None:
    services = await open_on(api_keys="alice:env-key-alice")
    await add_user(services, "alice")
    caller = await services.auth.authenticate(Credentials(authorization="Bearer env-key-alice"))
    assert (caller.owner, caller.via, caller.user_id) == ("alice", Via.API_KEY, None)
    assert not caller.is_admin  # an account's rights come with the account only


async def test_user_keys_authenticate_until_revoked_or_disabled_at_once(accounts) -> None:
    alice = await add_user(accounts, "alice")
    await add_user(accounts, "root", Role.ADMIN)
    made = await accounts.accounts.create_key(as_user(alice), "ci")
    bearer = Credentials(authorization=f"Bearer {made.key}", client_host="10.0.0.7")
    caller = await accounts.auth.authenticate(bearer)
    assert (caller.owner, caller.user_id, caller.role) == ("alice", alice.id, "member")
    await accounts.auth.authenticate(bearer)  # cached now
    await accounts.users.disable(OPERATOR, "alice")
    with pytest.raises(NotAuthenticated):
        await accounts.auth.authenticate(bearer)  # the cache forgot it at once
    await accounts.users.enable(OPERATOR, "alice")
    with pytest.raises(NotAuthenticated):
        await accounts.auth.authenticate(bearer)  # revoked, not just suspended


async def test_another_process_revoking_a_key_is_noticed_within_the_cache_time(open_on) -> None:
    server, cli = await open_on(), await open_on()
    alice = await add_user(cli, "alice")
    made = await cli.accounts.create_key(as_user(alice), "ci")
    bearer = Credentials(authorization=f"Bearer {made.key}")
    await server.auth.authenticate(bearer)
    await cli.accounts.revoke_key(as_user(alice), made.info.id)
    async with asyncio.timeout(8):
        while True:
            try:
                await server.auth.authenticate(bearer)
            except NotAuthenticated:
                break
            await asyncio.sleep(0.2)


async def test_a_key_use_is_audited_and_last_used_written_once_a_minute(accounts) -> None:
    alice = await add_user(accounts, "alice")
    made = await accounts.accounts.create_key(as_user(alice), "ci")
    for address in ("10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2"):
        await accounts.auth.authenticate(
            Credentials(authorization=f"Bearer {made.key}", client_host=address)
        )
    used = [e for e in await accounts.users.audit_entries(OPERATOR) if e.event.value == "key-used"]
    assert sorted(e.client_ip for e in used) == ["10.0.0.1", "10.0.0.2"]
    assert all(e.username == "alice" and made.info.prefix in e.detail for e in used)
    assert made.key not in str(used)
    (listed,) = await accounts.accounts.list_keys(as_user(alice))
    assert listed.last_used_at is not None


async def test_without_accounts_or_keys_remote_callers_are_refused(accounts) -> None:
    with pytest.raises(AccessDenied, match="loopback"):
        await accounts.auth.authenticate(Credentials(client_host="203.0.113.5"))
