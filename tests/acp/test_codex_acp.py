"""A real third-party ACP agent behind Lumina: codex-acp (npm, a native binary), its model
a local stand-in speaking the Responses API. Two turns in one process, the process group
killed, a third turn in a new process that resumes the agent's session: the history is
whole in Lumina and in what the model was sent."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from lumina_app.domain import LOCAL
from tests.acp.fake_responses import FakeResponses, person_texts
from tests.acp.helpers import alive, answer_of, result_of, send
from tests.conftest import write_agent

VERSION = "0.16.0"
CACHE = Path(os.environ.get("LUMINA_TEST_CACHE", Path.home() / ".cache" / "lumina-tests"))


@pytest.fixture(scope="session")
def codex_acp() -> Path:
    """codex-acp installed from the npm registry into the test cache (once)."""
    prefix = CACHE / f"codex-acp-{VERSION}"
    script = prefix / "node_modules" / "@zed-industries" / "codex-acp" / "bin" / "codex-acp.js"
    if not script.is_file():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: codex-acp cannot be installed")
        prefix.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
             f"@zed-industries/codex-acp@{VERSION}"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0 or not script.is_file():
            pytest.skip(f"npm install @zed-industries/codex-acp failed: {done.stderr[-500:]}")
    return script


@pytest.fixture
def fake_responses():
    with FakeResponses() as server:
        yield server


def codex_agent(data_dir: Path, script: Path, model_url: str) -> Path:
    home = data_dir / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        'model = "stand-in"\nmodel_provider = "standin"\n'
        "[model_providers.standin]\n"
        f'name = "stand-in"\nbase_url = "{model_url}"\nwire_api = "responses"\n'
        'env_key = "STANDIN_KEY"\n',
        encoding="utf-8",
    )
    write_agent(
        data_dir / "agents",
        "codex",
        {
            "name": "Codex",
            "provider": "acp",
            "acp": {
                "command": shutil.which("node") or "node",
                "args": [str(script)],
                "env": {"CODEX_HOME": str(home), "STANDIN_KEY": "not-a-key"},
                "permissions": "deny",
            },
        },
        {"agent.md": "You are Codex behind Lumina."},
    )
    return data_dir / "agents" / "codex"


async def test_codex_acp_keeps_context_and_resumes_after_a_kill(
    services, data_dir, codex_acp, fake_responses
) -> None:
    codex_agent(data_dir, codex_acp, fake_responses.base_url)
    first = await asyncio.wait_for(send(services, "first: remember 42", agent="codex"), 90)
    assert result_of(first)["status"] == "complete", result_of(first)
    conv = first[0].data["conversationId"]
    assert "I was sent 1 user messages" in answer_of(first)
    second = await asyncio.wait_for(send(services, "second question", conv, "codex"), 90)
    assert second[0].data["scenario"] == "continue"
    assert "I was sent 2 user messages" in answer_of(second)  # the process kept turn 1
    assert person_texts(fake_responses.requests[-1])[-1] == "second question"  # only the new one

    session = services.providers.acp.live("codex", conv)
    pid = session.process.pid
    os.killpg(pid, 9)  # the node wrapper and its native binary, as a crash would
    for _ in range(100):
        if not alive(pid):
            break
        await asyncio.sleep(0.05)
    third = await asyncio.wait_for(send(services, "third question", conv, "codex"), 90)
    assert result_of(third)["status"] == "complete", result_of(third)
    assert third[0].data["scenario"] == "resume"
    record = await services.chat.runs.get_run(result_of(third)["runId"])
    assert record.context["acp"]["mode"] in ("resume", "load")
    assert services.providers.acp.live("codex", conv).process.pid != pid
    sent = person_texts(fake_responses.requests[-1])  # what the resumed agent sent its model
    assert len(sent) == 3, sent
    assert sent[0].endswith("first: remember 42") and "You are Codex behind Lumina." in sent[0]
    assert sent[1:] == ["second question", "third question"]
    view = await services.memory.load_view(await services.reads.lookup.find_visible(LOCAL, conv))
    users = [m.content for m in view.messages if m.role == "USER"]
    assert users == ["first: remember 42", "second question", "third question"]
