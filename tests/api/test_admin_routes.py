"""The admin routes to a member: every route, every method, any body (malformed included)
is the same 404 as a route that does not exist; the role is checked before the body is
read. An admin sending the same bodies gets the validation errors a member never sees."""

from __future__ import annotations

import pytest
from fastapi.routing import APIRoute

from lumina_app.api import routes_admin
from lumina_app.domain import Role
from tests.api.helpers import bearer
from tests.api.test_auth_users import user_key

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
BODIES: list[dict] = [
    {},
    {"content": b"{", "headers": {"Content-Type": "application/json"}},
    {"content": b"\xff\xfe", "headers": {"Content-Type": "application/json"}},
    {"json": [1, 2]},
    {"json": {"username": 7, "role": "king", "password": None}},
    {"content": b"username=x", "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
]


def admin_paths() -> list[str]:
    """Every admin route of the app, its path parameters filled in."""
    paths = {
        route.path.replace("{username}", "alice")
        for route in routes_admin.router.routes
        if isinstance(route, APIRoute)
    }
    assert len(paths) == 7  # eight routes: GET and POST of users share a path
    return [*sorted(paths), routes_admin.PREFIX + "/no-such-thing"]


async def send(api, method: str, path: str, who: dict, body: dict):
    headers = {**who, **body.get("headers", {})}
    return await api.request(
        method, path, headers=headers, **{k: v for k, v in body.items() if k != "headers"}
    )


@pytest.fixture
async def member_and_admin(api_factory):
    services, api = await api_factory()
    member = bearer(await user_key(services, "bob"))
    admin = bearer(await user_key(services, "root", Role.ADMIN))
    await user_key(services, "alice")
    return api, member, admin


async def test_a_member_gets_the_unknown_route_404_for_every_admin_route_and_body(
    member_and_admin,
) -> None:
    api, member, _admin = member_and_admin
    for path in admin_paths():
        expected = {"error": {"code": "not_found", "message": f"no such endpoint: {path}"}}
        for method in METHODS:
            for body in BODIES:
                resp = await send(api, method, path, member, body)
                assert resp.status_code == 404, (method, path, body, resp.text)
                assert "allow" not in resp.headers, (method, path)
                if method != "HEAD":
                    assert resp.json() == expected, (method, path, body)
    unknown = await api.get("/api/v1/no-such-thing", headers=member)
    assert unknown.json()["error"]["message"] == "no such endpoint: /api/v1/no-such-thing"


async def test_an_admin_gets_validation_errors_and_405_for_the_same_requests(
    member_and_admin,
) -> None:
    api, _member, admin = member_and_admin
    create = routes_admin.PREFIX + "/users"
    for body in BODIES[1:]:
        resp = await send(api, "POST", create, admin, body)
        assert resp.status_code in (415, 422), (body, resp.text)
    wrong = await api.put(create, headers=admin)
    assert wrong.status_code == 405 and wrong.headers["allow"] == "GET, POST"
    assert (await api.get(routes_admin.PREFIX + "/nothing", headers=admin)).status_code == 404
    listed = await api.get(create, headers=admin)
    assert sorted(u["username"] for u in listed.json()) == ["alice", "bob", "root"]


async def test_without_credentials_the_admin_routes_still_ask_for_them(member_and_admin) -> None:
    api, _member, _admin = member_and_admin
    resp = await api.post(routes_admin.PREFIX + "/users", content=b"{")
    assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
