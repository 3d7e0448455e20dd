"""``python -m lumina_app <command>``: archive export/import and maintenance, run beside
(or without) the server. Every command reads the same LUMINA_* settings as the app."""

from __future__ import annotations

import logging
import re
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.engine import make_url

from lumina_app.archive.service import ImportReport
from lumina_app.cli_accounts import keys_app, users_app
from lumina_app.cli_common import err, out
from lumina_app.cli_common import run_with_services as _run
from lumina_app.cli_common import settings_or_exit as _settings
from lumina_app.composition import Services, alembic_config, schema_state
from lumina_app.domain import ImportOutcome, Principal, StoreUnavailable, Via
from lumina_app.services.health import Health
from lumina_app.services.imports import ImportJob, ImportSource
from lumina_app.settings import Settings

app = typer.Typer(
    name="lumina",
    help="Lumina maintenance: archive export/import, hot window, migrations, checks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


app.add_typer(users_app, name="users")
app.add_typer(keys_app, name="keys")


@app.callback()
def _setup() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


# -- plumbing ----------------------------------------------------------------------------


@contextmanager
def _progress(label: str) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr (shown on a terminal only); yields ``update(done, total)``."""
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task(label, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


# -- archive -----------------------------------------------------------------------------


@app.command()
def export(
    agent: Annotated[str | None, typer.Option(help="Only this agent's conversations.")] = None,
    conversation: Annotated[
        str | None, typer.Option(help="Only this conversation (its conversationId).")
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="Archive root to write (default: LUMINA_DATA_DIR)."),
    ] = None,
) -> None:
    """Write conversations to the archive layout.

    Writes agents/<agentId>/conversations/<convId>/ with meta.json, history.json and
    <messageId>/messages.log per turn, every file atomically; existing files are replaced.
    """

    async def work(services: Services):
        with _progress("exporting") as progress:
            return await services.archive.export_all(
                out_dir, agent_id=agent, conversation_uuid=conversation, progress=progress
            )

    report = _run(work)
    memories = f", {report.memories} memory(ies)" if report.memories else ""
    out.print(
        f"Exported {report.conversations} conversation(s), {report.messages} message(s)"
        f"{memories} to {report.root}",
        markup=False,
    )


@app.command("import")
def import_(
    path: Annotated[
        Path,
        typer.Argument(
            help="An archive root (holding agents/), an agent folder, one conversation "
            "folder, or a .zip from the export API."
        ),
    ],
    owner: Annotated[
        str, typer.Option(help="Owner of created conversations (an LUMINA_API_KEYS owner).")
    ] = "",
) -> None:
    """Import an archive (folders or .zip) into the database.

    Idempotent: one transaction per conversation, matched by conversationId; an archive
    holding more messages than the database appends the missing ones (only to the same
    owner's conversation; an id of another owner's gets an id of its own). Links are not
    followed and reads are capped (LUMINA_IMPORT_MAX_*). Errors are printed per file and
    the exit code is 1 if any conversation failed.
    """

    async def work(services: Services) -> ImportReport:
        with _progress("importing") as progress:
            return await services.archive.import_path(path, owner=owner, progress=progress)

    report = _run(work)
    for error in report.errors:
        err.print(f"error: {_printable(error)}", markup=False)
    out.print(
        f"Imported {_printable(str(path))}: {report.count(ImportOutcome.CREATED)} created, "
        f"{report.count(ImportOutcome.APPENDED)} appended, "
        f"{report.count(ImportOutcome.UNCHANGED)} unchanged, {len(report.errors)} failed; "
        f"{report.messages_added} message(s) added"
        + (f", {report.memories_added} memory(ies)" if report.memories_added else ""),
        markup=False,
    )
    if report.errors:
        raise typer.Exit(1)


@app.command("import-chats")
def import_chats(
    path: Annotated[Path, typer.Argument(help="conversations.json, the export's .zip, or a .json")],
    source: Annotated[
        ImportSource,
        typer.Option("--from", help="chatgpt | claude | openwebui | librechat | memories"),
    ],
    owner: Annotated[str, typer.Option(help="Who the conversations belong to.")] = "",
    agent: Annotated[str, typer.Option(help="The agent they are filed under.")] = "assistant",
    extract_memories: Annotated[
        bool, typer.Option("--extract-memories", help="Learn memories from them too.")
    ] = False,
) -> None:
    """Import another product's chat export (docs/IMPORTS.md): the whole file is checked
    first (nothing stored if it is bad), then each conversation goes in once; importing
    the same file again adds nothing. Exit 1 if anything failed."""

    async def work(services: Services) -> ImportJob:
        assert services.imports is not None
        data = path.read_bytes()
        principal = Principal(owner=owner, via=Via.OPERATOR, name="operator")
        return await services.imports.start_import(
            principal,
            wait=True,
            source=source,
            data=data,
            agent_id=agent,
            extract_memories=extract_memories,
            memories_from=source if source is not ImportSource.MEMORIES else ImportSource.CHATGPT,
        )

    job = _run(work)
    for error in job.errors:
        err.print(f"error: {_printable(error)}", markup=False)
    out.print(
        f"Imported {_printable(str(path))} ({source.label}): {job.conversations_added} "
        f"conversation(s) added, {job.conversations_skipped} skipped, {job.messages_added} "
        f"message(s), {job.branches_skipped} other branch(es) left out"
        + (f", {job.memories_added} memory(ies)" if job.memories_added else ""),
        markup=False,
    )
    if job.errors or job.status != "done":
        raise typer.Exit(1)


def _printable(text: str) -> str:
    """Names from an archive as escapes, not as terminal control sequences or as text
    that cannot be encoded (a folder name's undecodable bytes)."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


# -- hot window --------------------------------------------------------------------------


@app.command("rebuild-hot")
def rebuild_hot(
    all_: Annotated[bool, typer.Option("--all", help="Every conversation.")] = False,
    conversation: Annotated[
        str | None, typer.Option(help="One conversation (its conversationId).")
    ] = None,
) -> None:
    """Repopulate the hot window (the last N messages) from SQL."""
    if all_ == (conversation is not None):
        err.print("give exactly one of --all or --conversation ID")
        raise typer.Exit(2)

    async def work(services: Services) -> tuple[int, int, str]:
        memory = services.memory
        conversations = await services.archive.select(conversation_uuid=conversation)
        fallbacks = memory.stats.fallbacks
        with _progress("rebuilding") as progress:
            for done, conv in enumerate(conversations, start=1):
                await memory.rebuild(conv)
                progress(done, len(conversations))
        return len(conversations), memory.stats.fallbacks - fallbacks, memory.hot_backend

    count, failed, backend = _run(work)
    if backend != "redis":
        err.print(
            "note: LUMINA_REDIS_URL is unset, so the hot window is in-process; "
            "a rebuild here does not reach a running server (it rebuilds on demand)."
        )
    if failed:
        err.print(f"error: the hot window did not answer for {failed} conversation(s)")
        raise typer.Exit(1)
    out.print(f"Rebuilt the hot window of {count} conversation(s) ({backend})")


@app.command()
def stats() -> None:
    """Per agent: conversations and messages, and the hot-window hit rate.

    The hit rate is what this command measures by loading each conversation's window once
    (a running server's own counters are not visible from another process).
    """

    async def work(services: Services) -> tuple[Table, str]:
        conversations = await services.archive.select()
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for agent in services.agents.list():
            totals[agent.id] = [0, 0]
        with _progress("loading windows") as progress:
            for done, conv in enumerate(conversations, start=1):
                totals[conv.agent_id][0] += 1
                totals[conv.agent_id][1] += conv.message_count
                await services.memory.load(conv)
                progress(done, len(conversations))
        table = Table("agent", "conversations", "messages")
        for agent_id in sorted(totals):
            table.add_row(agent_id, *(str(n) for n in totals[agent_id]))
        return table, _hit_rate_line(services)

    table, hit_rate = _run(work)
    out.print(table)
    out.print(hit_rate, markup=False)


def _hit_rate_line(services: Services) -> str:
    s = services.memory.stats
    loads = s.hits + s.rebuilds + s.fallbacks
    line = (
        f"Hot window ({services.memory.hot_backend}): hit rate {s.hit_rate:.1%} over {loads} "
        f"load(s) (hits {s.hits}, rebuilds {s.rebuilds}, fallbacks {s.fallbacks}), measured "
        "by this command loading each conversation's window once; a running server keeps "
        "its own counters, which a separate process cannot see."
    )
    if services.memory.hot_backend != "redis":
        line += " The window is in-process here (LUMINA_REDIS_URL unset), so every load rebuilds."
    return line


# -- operations --------------------------------------------------------------------------


@app.command()
def migrate() -> None:
    """Upgrade the database schema to the newest revision (alembic upgrade head)."""
    from alembic import command

    settings = _settings()
    try:
        command.upgrade(alembic_config(settings.database_url), "head")
        state = schema_state(settings.database_url)
    except Exception as exc:
        err.print(f"error: migration failed: {str(exc).splitlines()[0]}", markup=False)
        raise typer.Exit(1) from None
    out.print(f"Database {_safe_url(settings)} is at revision {state.head} (head)", markup=False)


@app.command()
def sweep() -> None:
    """Close runs a crashed process left running (answers become 'interrupted'), delete
    idempotency records past LUMINA_IDEMPOTENCY_TTL_SECONDS, finish account deletions that
    were interrupted, and delete conversations past their retention (LUMINA_RETENTION_DAYS,
    an agent's "retentionDays"; 0 keeps them forever).

    Run it only while no server uses this database: it would cut its live runs.
    """

    async def work(services: Services) -> tuple[int, int, int, int]:
        closed = await services.chat.recover(min_age=0)  # the operator says: none are live
        swept = await services.idempotency.sweep()
        assert services.deletion is not None and services.retention is not None
        finished = len(await services.deletion.finish_pending())
        return closed, swept, finished, await services.retention.sweep()

    closed, swept, finished, expired = _run(work)
    out.print(f"Closed {closed} answer(s) left streaming")
    out.print(f"Deleted {swept} expired idempotency record(s)")
    out.print(f"Finished {finished} interrupted account deletion(s)")
    out.print(f"Deleted {expired} conversation(s) past their retention")


@app.command()
def backup(
    path: Annotated[Path, typer.Argument(help="The file to write (must not exist).")],
) -> None:
    """Copy a SQLite database to PATH with SQLite's online backup: a consistent copy while
    the server keeps serving. For MariaDB/MySQL and PostgreSQL use their own tools
    (docs/OPERATIONS.md)."""
    settings = _settings()
    url = make_url(settings.database_url)
    backend = url.get_backend_name()
    if backend != "sqlite":
        tool = "pg_dump / pg_restore" if backend == "postgresql" else "mariadb-dump"
        err.print(
            f"error: backup copies SQLite databases only; this one is {backend}: use {tool} "
            "(docs/OPERATIONS.md)",
            markup=False,
        )
        raise typer.Exit(2)
    source = Path(url.database or "")
    if not source.is_file():
        err.print(f"error: no database file at {source}", markup=False)
        raise typer.Exit(1)
    if path.exists():
        err.print(f"error: {path} exists: choose a new file", markup=False)
        raise typer.Exit(1)
    try:
        pages = sqlite_backup(source, path)
    except (OSError, sqlite3.Error) as exc:
        path.unlink(missing_ok=True)
        err.print(f"error: backup failed: {exc}", markup=False)
        raise typer.Exit(1) from None
    out.print(f"Backed up {source} to {path} ({pages} pages)", markup=False)


def sqlite_backup(source: Path, target: Path) -> int:
    """SQLite's online backup API in one step: it reads one snapshot (in WAL mode writers
    go on meanwhile; a backup in several steps would restart at every write)."""
    src = sqlite3.connect(source, timeout=30)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
        return dst.execute("PRAGMA page_count").fetchone()[0]
    finally:
        dst.close()
        src.close()


@app.command()
def embed() -> None:
    """Embed stored messages that have no vector of the configured embedder yet (recall's
    semantic half); new messages are embedded by the server as they become final."""

    async def work(services: Services) -> int:
        if services.embeddings is None:
            return -1
        return await services.embeddings.embed_pending()

    written = _run(work)
    if written < 0:
        err.print("error: LUMINA_EMBEDDINGS_PROVIDER is off: nothing to embed", markup=False)
        raise typer.Exit(2)
    out.print(f"Embedded {written} message(s)")


@app.command()
def check() -> None:
    """Validate the settings and summarise what they point at.

    Exit code 2 on a bad setting (one line naming the variable), 1 if the database
    cannot be reached. A database that is not migrated yet (a first start, an upgrade) is
    said in one line, not an error: ``make run`` migrates right after. Creates nothing.
    """
    settings = _settings()
    unreachable = ""
    try:
        schema = schema_state(settings.database_url)
    except StoreUnavailable as exc:
        schema = None
        unreachable = str(exc)

    async def work(services: Services) -> tuple[Health, list[str], list[str], str | None, str]:
        agents = services.agents.list()
        good = [a.id for a in agents if a.available]
        bad = [f"{a.id} ({a.error})" for a in agents if not a.available]
        # An unmigrated database is not pinged: opening a missing SQLite file creates it.
        health = await services.health.check(database=schema is not None and schema.migrated)
        if schema is None or not schema.migrated or health.database != "ok":
            return health, good, bad, None, "unknown (database not ready)"
        users = await services.auth.users_exist()
        keys = bool(settings.api_key_map)
        access = (
            " and ".join(["user accounts"] * users + ["API keys"] * keys)
            or "loopback only (no API keys, no user accounts)"
        )
        return health, good, bad, await services.auth.exposure_problem(), access

    health, agents, broken, exposure, access = _run(work, settings)
    backend = make_url(settings.database_url).get_backend_name()
    database = f"down ({unreachable})" if schema is None else schema.describe() or health.database
    hot = f"redis {_hide_password(settings.redis_url)}" if settings.redis_url else "in-process"
    out.print(f"database:    {backend} {_safe_url(settings)}: {database}", markup=False)
    out.print(f"hot window:  {hot}: {health.hot_window}", markup=False)
    out.print(f"context:     last {settings.context_window} messages", markup=False)
    out.print(
        f"data dir:    {settings.data_dir} (archive mirror "
        f"{'on' if settings.archive_mirror else 'off'})",
        markup=False,
    )
    out.print(f"agents:      {len(agents)} found: {', '.join(agents) or '-'}", markup=False)
    for item in broken:
        out.print(f"unavailable: {item}", markup=False)
    out.print(f"listening:   {settings.host} · access: {access}", markup=False)
    if exposure is not None:
        err.print(f"error: {exposure}", markup=False)
        raise typer.Exit(2)
    if schema is None or (schema.migrated and health.database != "ok"):
        raise typer.Exit(1)


def _safe_url(settings: Settings) -> str:
    return make_url(settings.database_url).render_as_string(hide_password=True)


def _hide_password(url: str) -> str:
    return re.sub(r"//([^:@/]*):[^@/]*@", r"//\1:***@", url)


def main() -> None:
    app(prog_name="python -m lumina_app")
