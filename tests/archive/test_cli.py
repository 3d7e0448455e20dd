"""``python -m lumina_app``: every command's --help, export/import, check, stats, ops.

Synchronous tests: each command runs its own event loop (``asyncio.run``), as in a shell.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from typer.testing import CliRunner

from lumina_app.cli import app
from lumina_app.composition import open_services
from lumina_app.domain import Msg, RunRecord
from tests.archive.conftest import T0, message_view, seed_conversation
from tests.conftest import ROOT, SHARED_REDIS_URL, alembic_config

COMMANDS = ["export", "import", "rebuild-hot", "stats", "migrate", "sweep", "embed", "check"]


@pytest.fixture
def env(sqlite_database, data_dir: Path, redis_prefix: str) -> dict[str, str]:
    return {
        "LUMINA_DATABASE_URL": sqlite_database.url,
        "LUMINA_DATA_DIR": str(data_dir),
        "LUMINA_REDIS_URL": SHARED_REDIS_URL,
        "LUMINA_REDIS_PREFIX": redis_prefix,
        "LUMINA_CONTEXT_WINDOW": "20",
    }


@pytest.fixture
def cli(env):
    runner = CliRunner()

    def invoke(*args: str, **extra_env: str):
        return runner.invoke(app, list(args), env={**env, **extra_env}, catch_exceptions=False)

    return invoke


def with_services(settings_factory, work):
    """Run ``work(services)`` against the same settings the CLI sees."""

    async def main():
        services = await open_services(settings_factory(), recover=False)
        try:
            return await work(services)
        finally:
            await services.close()

    return asyncio.run(main())


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_every_command_has_help(cli, command: str | None) -> None:
    result = cli(*([command] if command else []), "--help")
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
    if command is None:
        assert all(name in result.output for name in COMMANDS)


def test_export_then_import_round_trips(cli, settings_factory, sqlite_database, tmp_path) -> None:
    async def seed(services):
        convs = [
            await seed_conversation(services.archive, agent_id="demo"),
            await seed_conversation(services.archive, agent_id="tester", start=T0.replace(day=24)),
        ]
        return {
            c.uuid: message_view(await services.memory.queries.page_messages(c.id, limit=100))
            for c in convs
        }

    before = with_services(settings_factory, seed)
    out = tmp_path / "out"
    result = cli("export", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "Exported 2 conversation(s), 16 message(s)" in result.stdout
    for uuid in before:
        assert len(list(out.glob(f"agents/*/conversations/{uuid}/meta.json"))) == 1

    only = cli("export", "--agent", "tester", "--out", str(tmp_path / "tester"))
    assert "Exported 1 conversation(s)" in only.stdout
    assert [p.name for p in (tmp_path / "tester" / "agents").iterdir()] == ["tester"]

    sqlite_database.truncate()
    result = cli("import", str(out))
    assert result.exit_code == 0, result.output
    assert "2 created, 0 appended, 0 unchanged, 0 failed; 16 message(s) added" in result.stdout

    async def read(services):
        views = {}
        for uuid in before:
            conv = await services.reads.lookup.get_conversation(uuid)
            views[uuid] = message_view(
                await services.memory.queries.page_messages(conv.id, limit=100)
            )
        return views

    assert with_services(settings_factory, read) == before
    again = cli("import", str(out))
    assert again.exit_code == 0
    assert "0 created, 0 appended, 2 unchanged, 0 failed; 0 message(s) added" in again.stdout


def test_export_defaults_to_the_data_dir(cli, settings_factory, data_dir: Path) -> None:
    conv = with_services(settings_factory, lambda s: seed_conversation(s.archive))
    result = cli("export", "--conversation", conv.uuid)
    assert result.exit_code == 0, result.output
    assert (data_dir / "agents" / "demo" / "conversations" / conv.uuid / "history.json").is_file()
    missing = cli("export", "--conversation", "no-such-conversation")
    assert missing.exit_code == 1
    assert "not found" in missing.stderr


def test_import_prints_per_file_errors_and_exits_1(cli, tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "demo" / "conversations" / "conv-broken1"
    folder.mkdir(parents=True)
    (folder / "history.json").write_text("[{", encoding="utf-8")
    result = cli("import", str(tmp_path))
    assert result.exit_code == 1
    assert f"error: {folder / 'history.json'}: invalid JSON" in result.stderr
    assert "0 created, 0 appended, 0 unchanged, 1 failed" in result.stdout


def test_check_summarises_the_settings(cli) -> None:
    result = cli("check")
    assert result.exit_code == 0, result.output
    assert "database:    sqlite" in result.stdout and ": ok" in result.stdout
    assert "hot window:  redis" in result.stdout
    assert "agents:      2 found: demo, tester" in result.stdout


def test_check_on_a_first_start_says_migrate_and_creates_nothing(cli, tmp_path: Path) -> None:
    """``make run`` checks before it migrates: a fresh clone has no database yet."""
    db_file = tmp_path / "fresh" / "lumina.db"
    db_file.parent.mkdir()
    result = cli("check", LUMINA_DATABASE_URL=f"sqlite:///{db_file}")
    assert result.exit_code == 0, result.output
    assert "database not migrated yet (`make run` migrates it next" in result.stdout
    assert "run `make migrate`" not in result.stdout  # not one line before make does it
    assert "Traceback" not in result.output and "error" not in result.output
    assert list(db_file.parent.iterdir()) == []  # the check made no database file


def test_check_on_an_older_database_names_both_revisions(cli, tmp_path: Path) -> None:
    """An upgrade: the code is newer than the database; check says so, migrate follows."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    command.upgrade(alembic_config(url), "0007")
    result = cli("check", LUMINA_DATABASE_URL=url)
    assert result.exit_code == 0, result.output
    assert "database at revision 0007, the code needs " in result.stdout
    assert "`make migrate`" in result.stdout
    assert cli("migrate", LUMINA_DATABASE_URL=url).exit_code == 0
    after = cli("check", LUMINA_DATABASE_URL=url)
    assert after.exit_code == 0 and "sqlite:///" in after.stdout and ": ok" in after.stdout
    assert "access: loopback only" in after.stdout


def test_check_with_an_unreachable_database_exits_1(cli) -> None:
    result = cli("check", LUMINA_DATABASE_URL="mysql+pymysql://root@127.0.0.1:1/test")
    assert result.exit_code == 1
    assert "database unavailable" in result.stdout


def test_check_with_a_bad_setting_exits_2_with_one_line(cli) -> None:
    result = cli("check", LUMINA_CONTEXT_WINDOW="0")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("LUMINA_CONTEXT_WINDOW:"), result.stderr
    assert result.stdout == ""


def test_python_dash_m_runs_the_cli(env) -> None:
    """The real entry point, in a fresh process."""
    run_env = {**os.environ, **env, "LUMINA_CONTEXT_WINDOW": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "lumina_app", "check"],
        cwd=ROOT,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "LUMINA_CONTEXT_WINDOW" in proc.stderr


def test_stats_counts_per_agent_and_measures_the_hit_rate(cli, settings_factory) -> None:
    with_services(settings_factory, lambda s: seed_conversation(s.archive))
    first = cli("stats")
    assert first.exit_code == 0, first.output
    row = next(line for line in first.stdout.splitlines() if " demo " in line)
    assert [cell for cell in row.split() if cell != "│"] == ["demo", "1", "8"]
    assert "tester" in first.stdout  # an agent without conversations is listed too
    assert "measured by this command loading each conversation's window once" in first.stdout
    assert "over 1 load(s) (hits 0, rebuilds 1" in first.stdout  # no window yet in Redis
    second = cli("stats")
    assert "hit rate 100.0% over 1 load(s)" in second.stdout  # the first run installed it


def test_rebuild_hot(cli, settings_factory) -> None:
    conv = with_services(settings_factory, lambda s: seed_conversation(s.archive))
    assert cli("rebuild-hot").exit_code == 2
    assert cli("rebuild-hot", "--all", "--conversation", conv.uuid).exit_code == 2
    result = cli("rebuild-hot", "--all")
    assert result.exit_code == 0, result.output
    assert "Rebuilt the hot window of 1 conversation(s) (redis)" in result.stdout

    async def window(services):
        return await services.memory.hot.read(conv.uuid)

    assert [m.seq for m in with_services(settings_factory, window).messages] == list(range(1, 9))
    one = cli("rebuild-hot", "--conversation", conv.uuid)
    assert "of 1 conversation(s)" in one.stdout
    assert cli("rebuild-hot", "--conversation", "nope").exit_code == 1


def test_sweep_closes_answers_left_streaming(cli, settings_factory) -> None:
    async def crash_mid_run(services):
        conv = await services.memory.create_conversation(agent_id="demo")
        run = RunRecord("run-crashed", conv.id, "demo", "", "new", "demo", "demo")
        await services.memory.begin_turn(conv, Msg.user("q", turn_id="t"), Msg.assistant(""), run)
        return conv

    conv = with_services(settings_factory, crash_mid_run)
    result = cli("sweep")
    assert result.exit_code == 0, result.output
    assert "Closed 1 answer(s) left streaming" in result.stdout

    async def statuses(services):
        fresh = await services.reads.lookup.get_conversation(conv.uuid)
        msgs = await services.memory.queries.page_messages(fresh.id)
        return fresh.status.value, [m.status.value for m in msgs]

    assert with_services(settings_factory, statuses) == ("failed", ["complete", "interrupted"])
    assert "Closed 0 answer(s)" in cli("sweep").stdout


def test_migrate_creates_the_schema(cli, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    result = cli("migrate", LUMINA_DATABASE_URL=url)
    assert result.exit_code == 0, result.output
    assert "is at revision" in result.stdout and "(head)" in result.stdout
    engine = sa.create_engine(url)
    tables = set(sa.inspect(engine).get_table_names())
    engine.dispose()
    assert {"lumina_conversation", "lumina_message", "alembic_version"} <= tables
    assert cli("migrate", LUMINA_DATABASE_URL=url).exit_code == 0  # again: a no-op


def test_the_cli_import_accepts_the_api_zip(cli, settings_factory, tmp_path: Path) -> None:
    async def zipped(services):
        conv = await seed_conversation(services.archive)
        data = await services.archive.zip_archive(conv)
        await services.memory.cold.delete_conversation(conv.id)
        return conv, data

    conv, data = with_services(settings_factory, zipped)
    (tmp_path / "c.zip").write_bytes(data)
    result = cli("import", str(tmp_path / "c.zip"))
    assert result.exit_code == 0, result.output
    assert "1 created" in result.stdout
    restored = with_services(settings_factory, lambda s: s.reads.lookup.get_conversation(conv.uuid))
    assert restored.message_count == 8


def test_embed_fills_in_the_vectors_history_lacks(cli, settings_factory) -> None:
    """Rows stored without the server (an import, a seed) get vectors from ``embed``: the
    final questions and answers only, once."""
    with_services(settings_factory, lambda s: seed_conversation(s.archive))
    result = cli("embed")
    assert result.exit_code == 0, result.output
    assert "Embedded 6 message(s)" in result.stdout  # 3 questions, 3 answers; no tool, no system
    assert "Embedded 0 message(s)" in cli("embed").stdout
    off = cli("embed", LUMINA_EMBEDDINGS_PROVIDER="off")
    assert off.exit_code == 2 and "off" in off.output
