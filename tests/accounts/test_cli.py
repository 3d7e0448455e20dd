"""``python -m lumina_app users …`` and ``keys …`` as the operator types them: passwords
never echoed, a key printed once, the local operator's data claimed with counts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lumina_app.cli import app
from lumina_app.composition import open_services
from lumina_app.domain import LOCAL, OPERATOR, Credentials
from tests.conftest import SHARED_REDIS_URL

PASSWORD = "correct horse battery"


@pytest.fixture
def cli(sqlite_database, data_dir: Path, redis_prefix: str):
    env = {
        "LUMINA_DATABASE_URL": sqlite_database.url,
        "LUMINA_DATA_DIR": str(data_dir),
        "LUMINA_REDIS_URL": SHARED_REDIS_URL,
        "LUMINA_REDIS_PREFIX": redis_prefix,
    }
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None, **extra_env: str):
        return runner.invoke(
            app, list(args), env={**env, **extra_env}, input=input, catch_exceptions=False
        )

    return invoke


def with_services(settings_factory, work):
    async def main():
        services = await open_services(settings_factory(), recover=False)
        try:
            return await work(services)
        finally:
            await services.close()

    return asyncio.run(main())


def made_id(settings_factory) -> int:
    async def newest(services):
        return (await services.users.list_keys(OPERATOR))[0].id

    return with_services(settings_factory, newest)


def test_users_add_prompts_twice_without_echo_and_lists(cli) -> None:
    made = cli("users", "add", "Alice", "--admin", input=f"{PASSWORD}\n{PASSWORD}\n")
    assert made.exit_code == 0, made.output
    assert "Created admin alice" in made.output
    assert PASSWORD not in made.output  # the prompt hides what is typed
    assert made.output.count("Password") == 1 and "Repeat for confirmation" in made.output
    mismatch = cli("users", "add", "bob", input=f"{PASSWORD}\nsomething else\n{PASSWORD}\n")
    assert "do not match" in mismatch.output and PASSWORD not in mismatch.output
    piped = cli("users", "add", "carol", "--password-stdin", input=f"{PASSWORD}\n")
    assert piped.exit_code == 0 and PASSWORD not in piped.output
    listed = cli("users", "list")
    assert listed.exit_code == 0
    for name in ("alice", "carol"):
        assert name in listed.output
    assert "admin" in listed.output and "member" in listed.output


@pytest.mark.parametrize(
    ("args", "stdin", "said"),
    [
        (("users", "add", "dave", "--password-stdin"), "short\n", "at least 12"),
        (("users", "add", "No Spaces", "--password-stdin"), f"{PASSWORD}\n", "username"),
        (("users", "disable", "ghost"), None, "not found"),
        (("keys", "create", "ghost"), None, "not found"),
        (("keys", "revoke", "999"), None, "not found"),
        (("users", "claim", "ghost"), None, "not found"),
    ],
)
def test_mistakes_are_one_line_and_exit_1(cli, args, stdin, said) -> None:
    result = cli(*args, input=stdin)
    assert result.exit_code == 1 and said in result.output, result.output
    assert "Traceback" not in result.output


def test_taken_usernames_are_refused(cli) -> None:
    cli("users", "add", "alice", "--password-stdin", input=f"{PASSWORD}\n")
    again = cli("users", "add", "ALICE", "--password-stdin", input=f"{PASSWORD}\n")
    assert again.exit_code == 1 and "taken" in again.output


def test_keys_are_printed_once_and_listed_by_prefix(cli, settings_factory) -> None:
    cli("users", "add", "alice", "--password-stdin", input=f"{PASSWORD}\n")
    made = cli("keys", "create", "alice", "--name", "backup job")
    assert made.exit_code == 0
    key = made.stdout.strip()
    assert key.startswith("lum_") and "store it now" in made.stderr

    async def who(services):
        return await services.auth.authenticate(Credentials(authorization=f"Bearer {key}"))

    assert with_services(settings_factory, who).owner == "alice"
    listed = cli("keys", "list", "--user", "alice")
    assert "backup job" in listed.output and key[:12] in listed.output
    assert key not in listed.output
    revoked = cli("keys", "revoke", str(made_id(settings_factory)))
    assert revoked.exit_code == 0 and "Revoked key" in revoked.output
    assert "backup job" not in cli("keys", "list").output


def test_disable_enable_and_reset_password(cli, settings_factory) -> None:
    cli("users", "add", "alice", "--password-stdin", input=f"{PASSWORD}\n")
    cli("keys", "create", "alice")
    disabled = cli("users", "disable", "alice")
    assert disabled.exit_code == 0
    assert "0 session(s) ended, 1 key(s) revoked" in disabled.output
    assert "disabled" in cli("users", "list").output
    assert cli("users", "enable", "alice").exit_code == 0
    new = "another fine password"
    reset = cli("users", "reset-password", "alice", input=f"{new}\n{new}\n")
    assert reset.exit_code == 0 and new not in reset.output

    async def sign_in(services):
        return await services.signin.with_password(
            "alice", new, Credentials(client_host="127.0.0.1")
        )

    assert with_services(settings_factory, sign_in).session.owner == "alice"


def test_claim_gives_the_local_data_to_a_user(cli, settings_factory) -> None:
    async def local_conversation(services):
        return await services.runs.execute_sync(LOCAL, agent_id="demo", message="before users")

    turn = with_services(settings_factory, local_conversation)
    cli("users", "add", "alice", "--admin", "--password-stdin", input=f"{PASSWORD}\n")
    claimed = cli("users", "claim", "alice")
    assert claimed.exit_code == 0
    assert "Moved to alice: 1 conversation(s), 1 run(s), 0 idempotency key(s)" in claimed.output

    async def alices(services):
        signed = await services.signin.with_password(
            "alice", PASSWORD, Credentials(client_host="127.0.0.1")
        )
        caller = await services.auth.authenticate(
            Credentials(client_host="127.0.0.1", session_token=signed.token)
        )
        return await services.conversations.list(caller, agent_id="demo")

    items, _ = with_services(settings_factory, alices)
    assert [c.uuid for c in items] == [turn.conversation_uuid]


def test_check_reports_accounts(cli) -> None:
    assert "loopback only" in cli("check").output
    cli("users", "add", "alice", "--password-stdin", input=f"{PASSWORD}\n")
    assert "access: user accounts" in cli("check").output


def test_help_of_every_account_command(cli) -> None:
    for group, commands in (
        ("users", ["add", "list", "disable", "enable", "reset-password", "claim"]),
        ("keys", ["create", "list", "revoke"]),
    ):
        for command in commands:
            shown = cli(group, command, "--help")
            assert shown.exit_code == 0 and "Usage" in shown.output, (group, command)


def test_an_account_lets_the_server_listen_beyond_loopback(cli) -> None:
    exposed = {"LUMINA_HOST": "0.0.0.0", "LUMINA_ALLOWED_HOSTS": "lumina.test"}
    refused = cli("check", **exposed)
    assert refused.exit_code == 2 and "users add" in refused.output
    cli("users", "add", "root", "--admin", "--password-stdin", input=f"{PASSWORD}\n")
    assert cli("check", **exposed).exit_code == 0
