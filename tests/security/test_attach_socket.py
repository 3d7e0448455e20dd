"""Someone else's file through the UI socket (#48), tried from outside on a real server in
users mode: a signed-in socket whose crafted send names another account's file is refused
in plain words with nothing sent, a crafted remove of that file deletes nothing, and the
file's address stays a 404 to anyone but its owner."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from lumina_app.ui.state.attach import AttachState
from lumina_app.ui.state.chat import ChatState
from tests.faults.realserver import start_server
from tests.security.socketio import RawSocket, text_of
from tests.security.test_trust_boundary import conversations, event
from tests.server import AppServer

pytestmark = pytest.mark.slow

PASSWORD = "correct horse battery"
SECRET = b"bob's payslip: 4711 a month\n"


@pytest.fixture(scope="module")
def users_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppServer, dict]]:
    workdir = tmp_path_factory.mktemp("attach-users")
    probe = AppServer(workdir, backend_only=True, env={"LUMINA_REDIS_URL": ""})
    probe.prepare()
    keys = {}
    for name in ("alice", "bob"):
        probe.cli("users", "add", name, "--password-stdin", stdin=PASSWORD + "\n")
        keys[name] = {"Authorization": f"Bearer {probe.cli('keys', 'create', name).strip()}"}
    server = start_server(workdir)
    yield server, keys
    server.stop()


def _session(server: AppServer, name: str) -> str:
    login = httpx.post(
        f"{server.url}/api/v1/auth/login",
        json={"username": name, "password": PASSWORD},
        headers={"Origin": server.url},
    )
    assert login.status_code == 200, login.text
    return login.headers["set-cookie"].split(";")[0]


def test_a_crafted_send_with_another_owners_file_is_refused(users_server) -> None:
    server, keys = users_server
    upload = httpx.post(
        f"{server.url}/api/v1/files",
        files={"file": ("payslip.txt", SECRET, "text/plain")},
        headers=keys["bob"],
    )
    assert upload.status_code == 201, upload.text
    bobs = upload.json()["id"]
    cookie = _session(server, "alice")
    sock = RawSocket(server.url, origin=server.url, cookie=cookie)
    try:
        path = "/chat/assistant"
        sock.emit("reflex___state____state.hydrate", path=path)
        sock.emit(event(ChatState, "load"), path=path)
        form = {"message": "what does this say?", "files": bobs, "nonce": "n1"}
        sock.emit(event(ChatState, "send"), {"form": form}, path=path)
        sock.emit(event(ChatState, "accept_send"), {"accepted": True}, path=path)
        sock.emit(event(AttachState, "remove"), {"file_id": bobs}, path=path)
        said = text_of(sock.updates(4.0))
    finally:
        sock.close()
    assert "That file is not attached here, so nothing was sent." in said
    assert "That file is not attached here." in said  # the remove
    assert "4711" not in said and "payslip" not in said
    assert conversations(server, keys["alice"]) == []  # nothing sent
    assert conversations(server, keys["bob"]) == []
    mine = httpx.get(f"{server.url}/api/v1/files/{bobs}", headers=keys["bob"])
    assert mine.status_code == 200 and mine.content == SECRET  # nothing deleted
    theirs = httpx.get(f"{server.url}/api/v1/files/{bobs}", headers={"Cookie": cookie})
    assert theirs.status_code == 404
    thumbnail = httpx.get(
        f"{server.url}/api/v1/files/{bobs}", params={"inline": "true"}, headers={"Cookie": cookie}
    )
    assert thumbnail.status_code == 404
