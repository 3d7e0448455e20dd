"""``python -m lumina_app users …`` and ``keys …``: accounts and their API keys, managed by
the operator (whoever holds the database credentials). Passwords are read from a prompt
that does not echo (asked twice) or, with ``--password-stdin``, from the first line of
standard input; they are never printed. A key is printed once, when it is made."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from lumina_app.cli_common import err, out, run_with_services
from lumina_app.composition import Services
from lumina_app.domain import OPERATOR, Role

users_app = typer.Typer(help="User accounts (sign-in for the browser UI).", no_args_is_help=True)
keys_app = typer.Typer(help="Users' API keys.", no_args_is_help=True)

PasswordStdin = Annotated[
    bool,
    typer.Option(
        "--password-stdin", help="Read the password from the first line of standard input."
    ),
]


def _password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    return typer.prompt("Password", hide_input=True, confirmation_prompt=True)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "-"


# -- users ---------------------------------------------------------------------------------


@users_app.command("add")
def add_user(
    name: Annotated[str, typer.Argument(help="Username: lower-case letters, digits, . _ @ -")],
    admin: Annotated[bool, typer.Option("--admin", help="May manage accounts.")] = False,
    password_stdin: PasswordStdin = False,
) -> None:
    """Create an account. Once one exists, everyone signs in (docs/SECURITY.md)."""
    password = _password(password_stdin)
    role = Role.ADMIN if admin else Role.MEMBER

    made = run_with_services(
        lambda services: services.users.create(OPERATOR, name, role=role, password=password)
    )
    out.print(f"Created {made.user.role.value} {made.user.username}", markup=False)


@users_app.command("list")
def list_users() -> None:
    """Every account: role, state, when it was made."""
    table = Table("username", "role", "state", "created", "note")
    for user in run_with_services(lambda services: services.users.list(OPERATOR)):
        state = f"disabled {_when(user.disabled_at)}" if user.disabled else "active"
        note = "must change password" if user.must_change_password else ""
        table.add_row(user.username, user.role.value, state, _when(user.created_at), note)
    out.print(table)


@users_app.command("delete")
def delete_user(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete an account and everything it owns: conversations, messages, runs, vectors,
    memories, keys, sessions, archive files, Redis keys. Cannot be undone. Run it again to
    finish a deletion that was interrupted."""
    if not yes:
        typer.confirm(f"Delete {name} and everything it owns, for good?", abort=True)

    async def work(services: Services):
        assert services.deletion is not None
        return await services.deletion.delete_user(OPERATOR, name)

    report = run_with_services(work)
    out.print(f"Deleted {report.username}: {report.detail()}", markup=False)


@users_app.command("disable")
def disable_user(name: str) -> None:
    """Stop an account signing in; its sessions end and its keys are revoked now."""
    done = run_with_services(lambda services: services.users.disable(OPERATOR, name))
    out.print(
        f"Disabled {done.user.username}: {done.sessions_ended} session(s) ended, "
        f"{done.keys_revoked} key(s) revoked",
        markup=False,
    )


@users_app.command("enable")
def enable_user(name: str) -> None:
    """Let a disabled account sign in again (its old sessions and keys stay ended)."""
    user = run_with_services(lambda services: services.users.enable(OPERATOR, name))
    out.print(f"Enabled {user.username}", markup=False)


@users_app.command("reset-password")
def reset_password(
    name: str,
    password_stdin: PasswordStdin = False,
    keep_sessions: Annotated[
        bool, typer.Option("--keep-sessions", help="Leave the account's browsers signed in.")
    ] = False,
    keep_keys: Annotated[
        bool, typer.Option("--keep-keys", help="Leave the account's API keys working.")
    ] = False,
) -> None:
    """Set an account's password; its signed-in sessions end and its API keys are revoked
    (unless kept with --keep-sessions / --keep-keys)."""
    password = _password(password_stdin)

    done = run_with_services(
        lambda services: services.users.reset_password(
            OPERATOR, name, password, end_sessions=not keep_sessions, revoke_keys=not keep_keys
        )
    )
    sessions = "sessions kept" if keep_sessions else f"{done.sessions_ended} session(s) ended"
    keys = "keys kept" if keep_keys else f"{done.keys_revoked} key(s) revoked"
    out.print(f"Set a new password for {done.user.username}: {sessions}, {keys}", markup=False)


@users_app.command("claim")
def claim(name: str) -> None:
    """Give the local operator's data (made in local mode, before any account) to an
    account: its conversations, runs, idempotency keys and sessions, in one transaction."""
    counts = run_with_services(lambda services: services.users.claim_local_data(OPERATOR, name))
    dropped = (
        f" ({counts.idempotency_dropped} already used by the account, dropped)"
        if counts.idempotency_dropped
        else ""
    )
    out.print(
        f"Moved to {name.strip().lower()}: {counts.conversations} conversation(s), "
        f"{counts.runs} run(s), {counts.idempotency_keys} idempotency key(s){dropped}, "
        f"{counts.sessions} session(s)",
        markup=False,
    )


# -- keys ----------------------------------------------------------------------------------


@keys_app.command("create")
def create_key(
    user: Annotated[str, typer.Argument(help="The account the key acts as.")],
    name: Annotated[str, typer.Option(help="What the key is for, shown in lists.")] = "cli",
) -> None:
    """Make an API key for an account and print it: this is the only time it is shown."""
    key, info = run_with_services(lambda services: services.users.issue_key(OPERATOR, user, name))
    err.print(f"Key {info.id} ({info.name}) for {info.username}; store it now:", markup=False)
    out.print(key, markup=False)


@keys_app.command("list")
def list_keys(
    user: Annotated[str | None, typer.Option(help="Only this account's keys.")] = None,
) -> None:
    """Live keys, newest first: never the key, only its first characters."""
    table = Table("id", "user", "name", "prefix", "created", "last used")
    for key in run_with_services(lambda services: services.users.list_keys(OPERATOR, user)):
        table.add_row(
            str(key.id),
            key.username,
            key.name,
            key.prefix + "…",
            _when(key.created_at),
            _when(key.last_used_at),
        )
    out.print(table)


@keys_app.command("revoke")
def revoke_key(key_id: Annotated[int, typer.Argument(metavar="ID")]) -> None:
    """Revoke a key; requests with it are refused from now on (other running servers:
    within 5 s)."""
    key = run_with_services(lambda services: services.users.revoke_key(OPERATOR, key_id))
    out.print(f"Revoked key {key.id} ({key.name}) of {key.username}", markup=False)
