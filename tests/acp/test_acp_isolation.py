"""An ACP agent tried from outside, on a real server in users mode with Redis (#43): its file
reads cannot block the server's shared threads (a FIFO, a link out of its folder), its
state dies with its conversation and never reaches the next owner of that uuid (delete,
hostile import, restart), one member cannot hold the whole pool, and a stop of a run
waiting on a permission answers at once and keeps the process."""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.acp.helpers import ECHO_AGENT
from tests.conftest import ROOT, SHARED_REDIS_URL, write_agent
from tests.server import AppServer

pytestmark = pytest.mark.slow

PASSWORD = "correct horse battery"
MAX_PROCESSES, SHARE = 8, 6


@pytest.fixture(scope="module")
def acp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppServer, dict]]:
    """alice and bob (keys made by the operator), an echo agent asking for permissions, a
    pool of 8 processes of which one owner may hold 6."""
    workdir = tmp_path_factory.mktemp("acp")
    env = {
        "LUMINA_REDIS_URL": SHARED_REDIS_URL,
        "LUMINA_REDIS_PREFIX": f"lumina-test:acp-{secrets.token_hex(3)}",
        "LUMINA_ACP_MAX_PROCESSES": str(MAX_PROCESSES),
        "LUMINA_ACP_MAX_PER_OWNER": str(SHARE),
        "LUMINA_DEMO_DELAY_MS": "0",
    }
    server = AppServer(workdir, backend_only=True, env=env)
    server.prepare()
    keys = {}
    for name in ("alice", "bob"):
        server.cli("users", "add", name, "--password-stdin", stdin=PASSWORD + "\n")
        keys[name] = {"Authorization": f"Bearer {server.cli('keys', 'create', name).strip()}"}
    write_agent(
        server.data_dir / "agents",
        "echo",
        {
            "name": "Echo",
            "provider": "acp",
            "acp": {
                "command": sys.executable,
                "args": [str(ECHO_AGENT)],
                "env": {"PYTHONPATH": str(ROOT)},
                "permissions": "ask",
            },
        },
    )
    server.start()
    yield server, keys
    server.stop()


def start(server: AppServer, key: dict, task: str, conversation: str | None = None) -> dict:
    body = {"task": task, **({"conversationId": conversation} if conversation else {})}
    resp = httpx.post(
        f"{server.url}/api/v1/agents/echo/execute", json=body, headers=key, timeout=30
    )
    assert resp.status_code == 202, resp.text
    return resp.json()


def finished(server: AppServer, key: dict, run_id: str, within: float = 30) -> dict:
    deadline = time.monotonic() + within
    while True:
        run = httpx.get(f"{server.url}/api/v1/runs/{run_id}", headers=key, timeout=10).json()
        if run["status"] != "running":
            return run
        assert time.monotonic() < deadline, f"run {run_id} did not finish"
        time.sleep(0.05)


def uuids_of(server: AppServer, key: dict) -> set[str]:
    resp = httpx.get(f"{server.url}/api/v1/conversations?limit=100", headers=key, timeout=10)
    assert resp.status_code == 200, resp.text
    return {c["uuid"] for c in resp.json()["items"]}


def waiting_permission(server: AppServer, key: dict, run_id: str, within: float = 30) -> str:
    """The request id of the permission the run waits on (read from its event stream)."""
    url = f"{server.url}/api/v1/runs/{run_id}/stream"
    with httpx.stream("GET", url, headers=key, timeout=within) as resp:
        for line in resp.iter_lines():
            if line.startswith("data:") and '"perm-' in line:
                data = json.loads(line[5:])
                return json.loads(data["arguments"])["requestId"]
    raise AssertionError("the run asked no permission")


def agent_root(server: AppServer) -> Path:
    return server.data_dir / "agents" / "echo"


def files_of(server: AppServer, conversation: str) -> list[Path]:
    """Every working folder of that conversation, in any layout."""
    return [p for p in (agent_root(server) / "workspace").rglob(conversation) if p.is_dir()]


def records_naming(server: AppServer, session_id: str) -> list[Path]:
    """Session records (and logs) that hold ``session_id``."""
    logs = agent_root(server) / "logs"
    return [p for p in logs.rglob("*.json") if session_id in p.read_text(errors="replace")]


def session_of(answer: str) -> str:
    return answer.split(" in session ")[1].split()[0]


def test_fifo_reads_by_an_agent_do_not_stall_anyone(acp_server, tmp_path) -> None:
    server, keys = acp_server
    bob = keys["bob"]
    # Warm: the first recall may load what it needs; the measure is of a warm server.
    assert httpx.get(f"{server.url}/api/v1/recall?q=hello", headers=bob, timeout=60).is_success
    runs = [start(server, keys["alice"], f"/fifo pipe-{n}")["runId"] for n in range(6)]
    deadline = time.monotonic() + 60
    while len(list((agent_root(server) / "workspace").rglob("pipe-*"))) < 6:
        assert time.monotonic() < deadline, "the agents made no FIFOs"
        time.sleep(0.1)
    time.sleep(0.5)  # the six reads are under way (today: six threads blocked for ever)

    timings = {}
    began = time.monotonic()
    resp = httpx.post(
        f"{server.url}/api/v1/auth/login",
        json={"username": "bob", "password": PASSWORD},
        timeout=5,
    )
    timings["sign-in"] = time.monotonic() - began
    assert resp.status_code == 200, resp.text
    began = time.monotonic()
    resp = httpx.get(f"{server.url}/api/v1/recall?q=hello", headers=bob, timeout=5)
    timings["recall"] = time.monotonic() - began
    assert resp.status_code == 200, resp.text
    print(f"\nbob during six FIFO reads: {timings}")
    assert max(timings.values()) < 1.0, timings

    for run_id in runs:
        run = finished(server, keys["alice"], run_id)
        assert run["status"] == "complete", run
        assert "read-refused=not a regular file" in run["content"], run["content"]


def test_a_link_out_of_the_folder_is_refused(acp_server, tmp_path) -> None:
    server, keys = acp_server
    secret = tmp_path / "secret.txt"
    secret.write_text("the safe code is 4711")
    task = f"/link out.txt {secret} /link up {tmp_path} /read out.txt /read up/secret.txt"
    run = finished(server, keys["alice"], start(server, keys["alice"], task)["runId"])
    assert run["status"] == "complete", run
    assert "4711" not in run["content"]
    assert run["content"].count("read-refused=a symbolic link is not followed") == 2, run


def test_one_member_gets_their_share_and_another_still_runs(acp_server) -> None:
    server, keys = acp_server
    alice = keys["alice"]
    held = [start(server, alice, "/permission")["runId"] for _ in range(SHARE)]
    for run_id in held:
        waiting_permission(server, alice, run_id)
    resp = httpx.post(
        f"{server.url}/api/v1/agents/echo/execute", json={"task": "one more"}, headers=alice
    )
    assert resp.status_code == 429, resp.text
    assert "LUMINA_ACP_MAX_PER_OWNER" in resp.json()["error"]["message"]
    assert f"at most {SHARE} agent processes" in resp.json()["error"]["message"]

    other = finished(server, keys["bob"], start(server, keys["bob"], "hello")["runId"])
    assert other["status"] == "complete", other
    assert "prompt 1 in session" in other["content"]

    for run_id in held:
        httpx.post(f"{server.url}/api/v1/runs/{run_id}/stop", headers=alice, timeout=10)
        assert finished(server, alice, run_id)["status"] == "stopped"
    again = finished(server, alice, start(server, alice, "back again")["runId"])
    assert again["status"] == "complete", again


def test_a_stop_while_waiting_on_a_permission_answers_at_once(acp_server) -> None:
    server, keys = acp_server
    alice = keys["alice"]
    first = finished(server, alice, start(server, alice, "hello")["runId"])
    conv = first["conversationId"]
    pid = first["content"].split("pid=")[1].split()[0]
    run_id = start(server, alice, "/permission", conv)["runId"]
    waiting_permission(server, alice, run_id)
    began = time.monotonic()
    resp = httpx.post(f"{server.url}/api/v1/runs/{run_id}/stop", headers=alice, timeout=10)
    took = time.monotonic() - began
    print(f"\nstop of a run waiting on a permission: {took * 1000:.0f} ms")
    assert resp.status_code == 200, resp.text
    assert took < 0.5, took
    assert finished(server, alice, run_id)["status"] == "stopped"
    after = finished(server, alice, start(server, alice, "still there?", conv)["runId"])
    assert f"pid={pid}" in after["content"]  # the same process, kept


def test_a_deleted_conversation_takes_its_agent_folder_and_session(acp_server) -> None:
    server, keys = acp_server
    alice = keys["alice"]
    run = finished(server, alice, start(server, alice, "/write keep.txt")["runId"])
    assert "write=ok" in run["content"], run
    conv, session = run["conversationId"], session_of(run["content"])
    assert files_of(server, conv) and records_naming(server, session)
    resp = httpx.delete(f"{server.url}/api/agent/echo/conversations/{conv}", headers=alice)
    assert resp.status_code in (200, 204), resp.text
    assert files_of(server, conv) == []
    assert records_naming(server, session) == []


def test_a_hostile_import_of_a_deleted_uuid_gets_nothing_of_the_first_owner(
    acp_server, tmp_path
) -> None:
    server, keys = acp_server
    alice, bob = keys["alice"], keys["bob"]
    run = finished(server, alice, start(server, alice, "alice's secret plan")["runId"])
    conv, session = run["conversationId"], session_of(run["content"])
    archive = tmp_path / "archive"
    server.cli("export", "--conversation", conv, "--out", str(archive))
    folder = archive / "agents" / "echo" / "conversations" / conv

    # While alice's conversation exists, bob's import of its uuid gets a uuid of its own.
    before = uuids_of(server, bob)
    server.cli("import", str(folder), "--owner", "bob")
    (copy,) = uuids_of(server, bob) - before
    assert copy != conv
    httpx.delete(f"{server.url}/api/agent/echo/conversations/{copy}", headers=bob)

    # Deleted, then imported by bob under the same uuid, then a restart.
    resp = httpx.delete(f"{server.url}/api/agent/echo/conversations/{conv}", headers=alice)
    assert resp.status_code in (200, 204), resp.text
    server.cli("import", str(folder), "--owner", "bob")
    server.stop()
    server.start()
    run = finished(server, bob, start(server, bob, "what was the plan?", conv)["runId"])
    assert run["status"] == "complete", run
    # A new session given the history bob imported: not alice's session loaded.
    assert session not in run["content"] and "prompt 1 in session" in run["content"]
    held = files_of(server, conv)
    assert len(held) == 1  # bob's own folder only
    stored = json.loads((held[0] / ".echo-agent.json").read_text())
    assert session not in stored  # the agent's own store: bob's session only
