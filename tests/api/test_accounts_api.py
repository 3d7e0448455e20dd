"""The account routes on every SQL backend: sign-in with a password (cookie), who am I,
one's sessions, password and keys, admin management, the limits and the door's rules."""

from __future__ import annotations

import httpx
import pytest

from lumina_app.domain import OPERATOR, Role
from tests.api.helpers import bearer, client_for, error_of, new_conversation

PASSWORD = "correct horse battery"
NEW = "a much better password"


@pytest.fixture
async def site(api_factory, database):
    """(services, client) on this test's backend, with accounts root (admin) and alice, bob."""
    services, client = await api_factory(database_url=database.url)
    for name, role in (("root", Role.ADMIN), ("alice", Role.MEMBER), ("bob", Role.MEMBER)):
        await services.users.create(OPERATOR, name, role=role, password=PASSWORD)
    return services, client


async def login(client: httpx.AsyncClient, name: str, password: str = PASSWORD) -> dict:
    resp = await client.post("/api/v1/auth/login", json={"username": name, "password": password})
    assert resp.status_code == 200, resp.text
    return resp.json()


def other(services, host: str = "127.0.0.1") -> httpx.AsyncClient:
    return client_for(services, host)


async def test_a_password_sign_in_sets_the_session_cookie(site) -> None:
    services, client = site
    resp = await client.post("/api/v1/auth/login", json={"username": "Alice", "password": PASSWORD})
    assert resp.status_code == 200
    body = resp.json()
    assert {k: body[k] for k in ("owner", "username", "role", "via")} == {
        "owner": "alice",
        "username": "alice",
        "role": "member",
        "via": "session",
    }
    cookie = resp.headers["set-cookie"]
    assert cookie.startswith("lumina_session=") and "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower() and "Secure" not in cookie  # http here
    assert PASSWORD not in resp.text
    me = (await client.get("/api/v1/me")).json()
    assert me == {
        "owner": "alice",
        "username": "alice",
        "role": "member",
        "via": "session",
        "mustChangePassword": False,
    }
    first = client.cookies["lumina_session"]
    await login(client, "bob")  # another account in the same browser: alice's session ends
    assert (await client.get("/api/v1/me")).json()["username"] == "bob"
    async with other(services) as thief:
        thief.cookies.set("lumina_session", first)
        error_of(await thief.get("/api/v1/me"), 401)
    assert (await client.post("/api/v1/auth/logout", json={})).status_code == 204
    error_of(await client.get("/api/v1/me"), 401)


async def test_loopback_without_credentials_gets_nothing_in_users_mode(site) -> None:
    _services, client = site
    for path in ("/api/v1/conversations", "/api/agent/list", "/api/v1/me", "/api/v1/keys"):
        error_of(await client.get(path), 401)


@pytest.mark.parametrize(
    "body",
    [
        {"username": "alice", "password": "wrong password"},
        {"username": "nobody", "password": "wrong password"},
        {"username": "No Such Name!", "password": PASSWORD},
    ],
)
async def test_wrong_credentials_are_one_plain_401(site, body) -> None:
    _services, client = site
    resp = await client.post("/api/v1/auth/login", json=body)
    assert error_of(resp, 401)["message"] == "wrong username or password"
    assert "set-cookie" not in resp.headers


async def test_sign_in_failures_get_429_with_retry_after(api_factory, database) -> None:
    services, client = await api_factory(
        database_url=database.url,
        signin_attempts_per_minute=4,
        signin_attempts_per_user_per_minute=2,
    )
    await services.users.create(OPERATOR, "alice", role=Role.MEMBER, password=PASSWORD)
    url, wrong = "/api/v1/auth/login", {"username": "alice", "password": "nope nope"}
    statuses = [(await client.post(url, json=wrong)).status_code for _ in range(3)]
    assert statuses == [401, 401, 429]  # the account's limit, whatever the address
    async with other(services, "10.0.0.2") as elsewhere:
        limited = await elsewhere.post(url, json={"username": "alice", "password": PASSWORD})
        assert error_of(limited, 429)["code"] == "rate_limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 61
        for name in ("x1", "x2", "x3", "x4"):  # the address's limit, whatever the name
            await elsewhere.post(url, json={"username": name, "password": "nope nope"})
        limited = await elsewhere.post(url, json={"username": "x5", "password": "nope"})
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1


async def test_keys_are_shown_once_and_work_as_bearer_keys_until_revoked(site) -> None:
    services, client = site
    await login(client, "alice")
    made = await client.post("/api/v1/keys", json={"name": "laptop"})
    assert made.status_code == 201
    key = made.json()["key"]
    assert key.startswith(made.json()["prefix"]) and key.startswith("lum_")
    listed = (await client.get("/api/v1/keys")).json()
    assert [k["name"] for k in listed] == ["laptop"] and key not in str(listed)
    async with other(services, "203.0.113.7") as script:
        me = (await script.get("/api/v1/me", headers=bearer(key))).json()
        assert (me["username"], me["via"]) == ("alice", "api-key")
        conv = await new_conversation(script, headers=bearer(key))
    mine = (await client.get("/api/v1/conversations")).json()["items"]
    assert [c["uuid"] for c in mine] == [conv["uuid"]]  # the key reaches the account's data
    assert (await client.get("/api/v1/keys")).json()[0]["lastUsedAt"] is not None
    assert (await client.delete(f"/api/v1/keys/{made.json()['id']}")).status_code == 204
    error_of(await client.get("/api/v1/me", headers=bearer(key)), 401)


async def test_cookie_state_changes_follow_the_door_rules(site) -> None:
    _services, client = site
    await login(client, "alice")
    form = await client.post("/api/v1/keys", data={"name": "csrf"})
    assert error_of(form, 403)["message"].startswith("a state change needs a JSON body")
    foreign = await client.post(
        "/api/v1/keys", json={"name": "csrf"}, headers={"Origin": "http://evil.example"}
    )
    error_of(foreign, 403)
    own = await client.post(
        "/api/v1/keys", json={"name": "fine"}, headers={"Origin": "http://testserver"}
    )
    assert own.status_code == 201
    assert [k["name"] for k in (await client.get("/api/v1/keys")).json()] == ["fine"]


async def test_changing_the_password_signs_out_other_browsers(site) -> None:
    services, client = site
    await login(client, "alice")
    async with other(services) as laptop:
        await login(laptop, "alice")
        sessions = (await client.get("/api/v1/account/sessions")).json()
        assert len(sessions) == 2 and [s["current"] for s in sessions].count(True) == 1
        assert {s["userAgent"] for s in sessions} == {"python-httpx/0.28.1"}
        wrong = await client.post(
            "/api/v1/account/password", json={"currentPassword": "no", "newPassword": NEW}
        )
        error_of(wrong, 422)
        changed = await client.post(
            "/api/v1/account/password", json={"currentPassword": PASSWORD, "newPassword": NEW}
        )
        assert changed.json() == {"otherSessionsEnded": 1}
        error_of(await laptop.get("/api/v1/me"), 401)
        assert (await client.get("/api/v1/me")).status_code == 200
        await login(laptop, "alice", NEW)
        revoked = await client.post("/api/v1/account/sessions/revoke-others", json={})
        assert revoked.json() == {"revoked": 1}
        error_of(await laptop.get("/api/v1/me"), 401)


async def test_admin_routes_are_not_found_for_members(site) -> None:
    _services, client = site
    await login(client, "alice")
    for method, path, body in [
        ("GET", "/api/v1/admin/users", None),
        ("POST", "/api/v1/admin/users", {"username": "eve", "role": "admin"}),
        ("GET", "/api/v1/admin/users/root", None),
        ("POST", "/api/v1/admin/users/root/disable", {}),
        ("POST", "/api/v1/admin/users/root/password", {}),
        ("GET", "/api/v1/admin/audit", None),
    ]:
        resp = await client.request(method, path, json=body)
        assert error_of(resp, 404)["message"] == f"no such endpoint: {path}", (method, path)


async def test_admins_create_disable_and_reset_accounts(site) -> None:
    services, admin = site
    await login(admin, "root")
    made = await admin.post("/api/v1/admin/users", json={"username": "dave"})
    assert made.status_code == 201
    temporary = made.json()["temporaryPassword"]
    assert made.json()["user"]["mustChangePassword"] and made.json()["user"]["role"] == "member"
    error_of(await admin.post("/api/v1/admin/users", json={"username": "dave"}), 409)
    async with other(services) as dave:
        signed = await login(dave, "dave", temporary)
        assert signed["mustChangePassword"]
        key = (await dave.post("/api/v1/keys", json={"name": "k"})).json()["key"]
        disabled = await admin.post("/api/v1/admin/users/dave/disable", json={})
        assert disabled.json()["disabled"]
        error_of(await dave.get("/api/v1/me"), 401)  # at once: session and key alike
        error_of(await dave.get("/api/v1/me", headers=bearer(key)), 401)
        refused = await dave.post(
            "/api/v1/auth/login", json={"username": "dave", "password": temporary}
        )
        assert error_of(refused, 403)["message"] == "this account is disabled"
        await admin.post("/api/v1/admin/users/dave/enable", json={})
        reset = (await admin.post("/api/v1/admin/users/dave/password", json={})).json()
        await login(dave, "dave", reset["temporaryPassword"])
        error_of(await dave.get("/api/v1/me", headers=bearer(key)), 401)  # keys stay revoked
    error_of(await admin.post("/api/v1/admin/users/root/disable", json={}), 422)
    error_of(await admin.post("/api/v1/admin/users/ghost/disable", json={}), 404)
    users = (await admin.get("/api/v1/admin/users")).json()
    assert [u["username"] for u in users] == ["alice", "bob", "dave", "root"]
    audit = (await admin.get("/api/v1/admin/audit", params={"username": "dave"})).json()
    events = [e["event"] for e in audit]
    assert events[:3] == ["sign-in", "password-reset", "user-enabled"]
    assert {"user-created", "user-disabled", "key-created", "sign-in-failed"} <= set(events)
    assert temporary not in str(audit)


async def test_configured_keys_and_accounts_share_an_owners_data(api_factory, database) -> None:
    services, client = await api_factory(database_url=database.url, api_keys="alice:env-key")
    await services.users.create(OPERATOR, "alice", role=Role.MEMBER, password=PASSWORD)
    conv = await new_conversation(client, headers=bearer("env-key"))
    await login(client, "alice")
    listed = (await client.get("/api/v1/conversations")).json()["items"]
    assert [c["uuid"] for c in listed] == [conv["uuid"]]
    keyed = await client.post("/api/v1/auth/login", json={"apiKey": "env-key"})
    assert keyed.json()["username"] == "" and keyed.json()["owner"] == "alice"
