"""Fixtures for the agent runtime: services over real SQL + Redis, a fake LLM server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumina_app.agents.services import open_services
from lumina_app.settings import load_settings
from tests.conftest import SHARED_REDIS_URL
from tests.fake_llm import FakeLLM

SYSTEM_PROMPT_PARTS = {"agent.md": "You are Tester.", "soul.md": "Be brief.", "tools.md": "No tools."}


def write_agent(agents_dir: Path, agent_id: str, config: dict, prompts: dict[str, str] | None = None) -> None:
    folder = agents_dir / agent_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name, text in (prompts or {}).items():
        (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture
def fake_llm():
    with FakeLLM() as server:
        yield server


@pytest.fixture
def data_dir(tmp_path: Path, fake_llm: FakeLLM) -> Path:
    agents = tmp_path / "agents"
    write_agent(
        agents,
        "tester",
        {"name": "Tester", "provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"},
        SYSTEM_PROMPT_PARTS,
    )
    write_agent(agents, "demo", {"name": "Demo"})
    return tmp_path


@pytest.fixture
def settings_factory(sqlite_database, data_dir, redis_prefix):
    def make(**overrides):
        values = dict(
            database_url=sqlite_database.url,
            redis_url=SHARED_REDIS_URL,
            redis_prefix=redis_prefix,
            data_dir=data_dir,
            demo_delay_ms=0,
            flush_interval_ms=20,
        )
        values.update(overrides)
        return load_settings(**values)

    return make


@pytest.fixture
async def services(settings_factory):
    opened = await open_services(settings_factory())
    yield opened
    await opened.close()
