"""A password reset after a suspected compromise, from outside on a real server: by
default bob's API keys stop working and his browsers are signed out, whether
an admin resets it through the API or the operator with the CLI; with the opt-outs
(``revokeKeys`` / ``endSessions`` false, ``--keep-keys`` / ``--keep-sessions``) they keep
working. The audit log says which."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.server import AppServer

pytestmark = pytest.mark.slow

PASSWORDS = [f"bob's password number {n}" for n in range(6)]
ROOT_PASSWORD = "the root password here"


@dataclass
class Access:
    """What an attacker holding bob's password would have made: a session and a key."""

    session: httpx.Client
    key: dict[str, str]

    def statuses(self) -> tuple[int, int]:
        by_session = self.session.get("/api/v1/me").status_code
        url = str(self.session.base_url) + "/api/v1/me"
        by_key = httpx.get(url, headers=self.key, timeout=30).status_code
        return by_session, by_key


@pytest.fixture
def server(tmp_path) -> Iterator[AppServer]:
    """SQLite: the revocations themselves are tested on every backend in tests/accounts."""
    app = AppServer(tmp_path, backend_only=True, env={"LUMINA_REDIS_URL": ""})
    app.prepare()
    app.cli("users", "add", "root", "--admin", "--password-stdin", stdin=ROOT_PASSWORD + "\n")
    app.cli("users", "add", "bob", "--password-stdin", stdin=PASSWORDS[0] + "\n")
    app.start()
    yield app
    app.stop()


def sign_in(server: AppServer, name: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    resp = client.post("/api/v1/auth/login", json={"username": name, "password": password})
    assert resp.status_code == 200, resp.text
    return client


def bobs_access(server: AppServer, password: str) -> Access:
    """A fresh session and key of bob's, not used yet (so no server has them cached)."""
    key = server.cli("keys", "create", "bob").strip()
    return Access(sign_in(server, "bob", password), {"Authorization": f"Bearer {key}"})


def wait_until_refused(access: Access, within: float = 10.0) -> None:
    """Another process (the CLI) revoked them: servers trust what they cached for 5 s."""
    deadline = time.monotonic() + within
    while access.statuses() != (401, 401):
        assert time.monotonic() < deadline, access.statuses()
        time.sleep(0.2)


def test_a_reset_shuts_out_keys_and_sessions_unless_told_to_keep_them(server) -> None:
    admin = sign_in(server, "root", ROOT_PASSWORD)
    reset = "/api/v1/admin/users/bob/password"

    stolen = bobs_access(server, PASSWORDS[0])
    assert stolen.statuses() == (200, 200)
    done = admin.post(reset, json={"password": PASSWORDS[1]})
    assert done.status_code == 200, done.text
    assert stolen.statuses() == (401, 401)  # at once: this server did it

    kept = bobs_access(server, PASSWORDS[1])
    body = {"password": PASSWORDS[2], "endSessions": False, "revokeKeys": False}
    assert admin.post(reset, json=body).status_code == 200
    assert kept.statuses() == (200, 200)
    for bad in ({"revokeKeys": "no"}, {"endSessions": 0}, {"revokeKeys": None}):
        assert admin.post(reset, json=bad).status_code == 422, bad
    assert kept.statuses() == (200, 200)  # a refused reset changes nothing

    stolen = bobs_access(server, PASSWORDS[2])
    assert stolen.statuses() == (200, 200)  # now cached by the server
    said = server.cli("users", "reset-password", "bob", "--password-stdin", stdin=PASSWORDS[3])
    assert "2 session(s) ended, 2 key(s) revoked" in said  # this one's and the kept ones
    wait_until_refused(stolen)
    assert kept.statuses() == (401, 401)

    fresh = bobs_access(server, PASSWORDS[3])
    said = server.cli(
        "users",
        "reset-password",
        "bob",
        "--password-stdin",
        "--keep-keys",
        "--keep-sessions",
        stdin=PASSWORDS[4],
    )
    assert "sessions kept, keys kept" in said
    assert fresh.statuses() == (200, 200)  # checked against the database: not cached yet
    only_keys = bobs_access(server, PASSWORDS[4])
    said = server.cli(
        "users", "reset-password", "bob", "--password-stdin", "--keep-keys", stdin=PASSWORDS[5]
    )
    assert "session(s) ended, keys kept" in said
    assert (only_keys.session.get("/api/v1/me").status_code, only_keys.statuses()[1]) == (
        401,
        200,
    )

    audit = admin.get("/api/v1/admin/audit", params={"username": "bob", "limit": 200}).json()
    resets = [(e["actor"], e["detail"]) for e in audit if e["event"] == "password-reset"]
    assert resets == [
        ("operator", "set; 2 session(s) ended; keys kept"),
        ("operator", "set; sessions kept; keys kept"),
        ("operator", "set; 2 session(s) ended; 2 key(s) revoked"),
        ("root", "set; sessions kept; keys kept"),
        ("root", "set; 1 session(s) ended; 1 key(s) revoked"),
    ]
