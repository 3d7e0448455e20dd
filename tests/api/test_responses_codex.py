"""Codex CLI for real: ``@openai/codex`` installed from npm by the test setup (into a cache
folder, once), a custom provider with ``wire_api = "responses"`` pointed at a Lumina test
server with the demo agent, ``codex exec "My name is Ada."`` then ``codex exec resume --last
"What is my name?"``. A recording proxy between them shows what Codex sends — the whole
history every turn, ``store: false``, ``developer`` messages, its ``session-id`` and
``thread-id`` headers, client function tools — and Lumina keeps one conversation with each
message once, the second answer taken from its memory, not from the resent history.

Skipped with the reason when npm cannot install the package (no registry)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.api.helpers import fake_model_server
from tests.fake_llm import Call, FakeLLM, Reply, Script
from tests.server import AppServer

pytestmark = pytest.mark.slow

CODEX_VERSION = "0.171.0"
CACHE = Path(os.environ.get("LUMINA_TEST_CACHE", Path.home() / ".cache" / "lumina-tests"))
KEY = "key-ada"
REMEMBERED = "Your previous message was: “My name is Ada.”"


def _codex_binary() -> Path:
    """The Codex CLI from npm, installed once into the test cache."""
    folder = CACHE / f"codex-{CODEX_VERSION}"
    binary = folder / "node_modules" / ".bin" / "codex"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: Codex CLI cannot be installed")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
         f"@openai/codex@{CODEX_VERSION}"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not binary.exists():
        reason = done.stderr[-400:]
        pytest.skip(f"npm could not install @openai/codex (registry unreachable?): {reason}")
    return binary


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: dict = field(default_factory=dict)


class RecordingProxy:
    """Forwards every request to ``upstream`` as it is, streaming the answer back, and keeps
    what came in."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removeprefix("http://")
        self.seen: list[Seen] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def posts(self, path: str) -> list[Seen]:
        return [seen for seen in self.seen if seen.method == "POST" and seen.path == path]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the answer ends when the connection closes

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = json.loads(raw) if raw and "json" in headers.get("content-type", "") else {}
                proxy.seen.append(Seen(self.command, self.path, headers, body))
                upstream = http.client.HTTPConnection(proxy.upstream, timeout=120)
                sent = {k: v for k, v in headers.items() if k not in ("host", "connection")}
                upstream.request(self.command, self.path, body=raw or None, headers=sent)
                answer = upstream.getresponse()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(name, value)
                self.end_headers()
                while chunk := answer.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                upstream.close()

            do_GET = do_POST = do_DELETE = _forward

        return Handler


@pytest.fixture(scope="module")
def codex() -> Path:
    return _codex_binary()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeLLM) -> Iterator[AppServer]:
    keys, agents = f"ada:{KEY},bob:key-bob", {"echo": {"name": "Echo"}}
    with fake_model_server(tmp_path_factory.mktemp("codex"), keys, fake.base_url, agents) as up:
        yield up


def _config(
    home: Path, base_url: str, model: str = "assistant", sandbox: str = "read-only"
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "\n".join([
            f'model = "{model}"',
            'model_provider = "lumina"',
            'approval_policy = "never"',
            f'sandbox_mode = "{sandbox}"',
            "",
            "[model_providers.lumina]",
            'name = "Lumina"',
            f'base_url = "{base_url}/v1"',
            'env_key = "LUMINA_API_KEY"',
            'wire_api = "responses"',
        ])
        + "\n"
    )  # fmt: skip


def _run(codex: Path, home: Path, work: Path, *args: str) -> str:
    env = {**os.environ, "CODEX_HOME": str(home), "LUMINA_API_KEY": KEY, "NO_COLOR": "1"}
    done = subprocess.run(
        [str(codex), "exec", "--skip-git-repo-check", *args],
        cwd=work, env=env, capture_output=True, text=True, timeout=180,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _texts(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def _api(server: AppServer, path: str, key: str = KEY) -> httpx.Response:
    return httpx.get(
        server.url + path, params={"limit": 100}, headers={"Authorization": f"Bearer {key}"}
    )


def test_codex_exec_then_resume_keeps_one_conversation_in_lumina(
    codex: Path, server: AppServer, tmp_path: Path
) -> None:
    home, work = tmp_path / "codex-home", tmp_path / "work"
    work.mkdir()
    with RecordingProxy(server.url) as proxy:
        _config(home, proxy.url)
        first = _run(codex, home, work, "My name is Ada.")
        second = _run(codex, home, work, "resume", "--last", "What is my name?")
    # The second answer: the first turn came from Lumina's memory.
    assert "You said: “My name is Ada.”" in first
    assert REMEMBERED in second and "You said: “What is my name?”" in second

    turns = proxy.posts("/v1/responses")
    assert len(turns) == 2, [(s.method, s.path) for s in proxy.seen]
    one, two = (seen.body for seen in turns)
    for body in (one, two):
        assert body["store"] is False and body["stream"] is True
        assert body["model"] == "assistant"
        assert any(tool.get("type") == "function" for tool in body.get("tools", []))
        assert "previous_response_id" not in body and "conversation" not in body
        roles = [item.get("role") for item in body["input"] if item.get("type") == "message"]
        assert "developer" in roles
    # Codex resends everything: turn two holds turn one's question and answer.
    said = [_texts(item) for item in two["input"]]
    assert "My name is Ada." in said and said[-1] == "What is my name?"
    assert any(REMEMBERED not in text and "offline demo model" in text for text in said)
    # Its session: the same session-id (and thread-id) header on both turns.
    session = {seen.headers.get("session-id") for seen in turns}
    assert len(session) == 1 and None not in session
    assert {seen.headers.get("thread-id") for seen in turns} == session

    # One conversation in Lumina, every message once (nothing resent stored twice).
    listed = _api(server, "/api/v1/conversations")
    assert listed.status_code == 200, listed.text
    convs = listed.json()["items"]
    assert len(convs) == 1 and convs[0]["agentId"] == "assistant"
    rows = _api(server, f"/api/v1/conversations/{convs[0]['uuid']}/messages").json()["items"]
    contents = [(row["role"], row["content"]) for row in rows]
    assert len(contents) == len(set(contents))
    assert [role for role, _ in contents][-4:] == ["USER", "ASSISTANT", "USER", "ASSISTANT"]
    assert contents[-4][1] == "My name is Ada." and contents[-2][1] == "What is my name?"
    # Codex's developer text is context, not a message of the conversation.
    assert not any("sandbox" in text.lower() and role == "USER" for role, text in contents)
    # Another owner sees none of it.
    assert _api(server, "/api/v1/conversations", key="key-bob").json()["items"] == []
    other = _api(server, f"/api/v1/conversations/{convs[0]['uuid']}/messages", key="key-bob")
    assert other.status_code == 404


def test_codex_runs_the_tool_the_model_calls_and_lumina_goes_on(
    codex: Path, server: AppServer, fake: FakeLLM, tmp_path: Path
) -> None:
    """The model (the stand-in) calls Codex's own ``exec_command``; Codex runs it and
    sends its output back; Lumina stores the call and the output and the turn goes on."""
    home, work = tmp_path / "codex-home", tmp_path / "work"
    work.mkdir()
    call = Call("call_cx1", "exec_command", json.dumps({"cmd": "echo lumina-tool-ok"}))
    fake.requests.clear()
    fake.script = Script(
        replies=[Reply(calls=[call]), Reply(chunks=["The command said lumina-tool-ok."])]
    )
    with RecordingProxy(server.url) as proxy:
        _config(home, proxy.url, model="echo", sandbox="danger-full-access")
        out = _run(codex, home, work, "Run echo lumina-tool-ok for me.")
    fake.script = Script()
    assert "The command said lumina-tool-ok." in out
    assert "exec_command" in [tool["function"]["name"] for tool in fake.requests[0]["tools"]]
    turns = proxy.posts("/v1/responses")
    assert len(turns) == 2
    outputs = [
        item for item in turns[1].body["input"] if item.get("type") == "function_call_output"
    ]
    assert [item["call_id"] for item in outputs] == ["call_cx1"]
    tool_message = fake.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "lumina-tool-ok" in str(tool_message["content"])
    listed = _api(server, "/api/v1/conversations").json()["items"]
    (conv,) = [conv for conv in listed if conv["agentId"] == "echo"]
    rows = _api(server, f"/api/v1/conversations/{conv['uuid']}/messages").json()["items"]
    roles = [row["role"] for row in rows]
    assert roles[-3:] == ["ASSISTANT", "TOOL", "ASSISTANT"] and roles.count("TOOL") == 1
    assert "lumina-tool-ok" in rows[-2]["content"]
