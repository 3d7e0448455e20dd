"""``python -m lumina_app import-chats``: an export imported for an owner, once; a bad
file refused with its reason and nothing stored (SQLite)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lumina_app.cli import app
from lumina_app.composition import open_services
from lumina_app.domain import Principal, Via
from lumina_app.settings import load_settings
from tests.conftest import SHARED_REDIS_URL

FIXTURES = Path(__file__).parents[1] / "fixtures" / "imports"


@pytest.fixture
def env(sqlite_database, data_dir: Path, redis_prefix: str) -> dict[str, str]:
    return {
        "LUMINA_DATABASE_URL": sqlite_database.url,
        "LUMINA_DATA_DIR": str(data_dir),
        "LUMINA_REDIS_URL": SHARED_REDIS_URL,
        "LUMINA_REDIS_PREFIX": redis_prefix,
    }


def _invoke(env: dict[str, str], *args: str):
    return CliRunner().invoke(app, ["import-chats", *args], env=env, catch_exceptions=False)


def _titles(env: dict[str, str], owner: str) -> list[str]:
    async def read() -> list[str]:
        settings = load_settings(
            database_url=env["LUMINA_DATABASE_URL"], data_dir=env["LUMINA_DATA_DIR"]
        )
        services = await open_services(settings, recover=False)
        try:
            found, _ = await services.conversations.list(
                Principal(owner=owner, via=Via.OPERATOR), limit=50
            )
            return sorted(c.title for c in found)
        finally:
            await services.close()

    return asyncio.run(read())


def test_import_chats_adds_once_for_the_owner(env) -> None:
    fixture = str(FIXTURES / "claude_conversations.json")
    first = _invoke(env, "--from", "claude", fixture, "--owner", "ada", "--agent", "demo")
    assert first.exit_code == 0, first.output
    assert "1 conversation(s) added, 1 skipped, 3 message(s)" in first.output
    again = _invoke(env, "--from", "claude", fixture, "--owner", "ada", "--agent", "demo")
    assert again.exit_code == 0 and "0 conversation(s) added" in again.output
    assert _titles(env, "ada") == ["Sourdough starter"]
    assert _titles(env, "") == []


def test_import_chats_refuses_a_wrong_format(env) -> None:
    fixture = str(FIXTURES / "librechat_export.json")
    result = _invoke(env, "--from", "chatgpt", fixture, "--owner", "ada", "--agent", "demo")
    assert result.exit_code == 1
    assert "ChatGPT export is a JSON array" in result.output
    assert _titles(env, "ada") == []
