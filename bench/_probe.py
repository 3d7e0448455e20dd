"""What an operation sends: Redis round trips and commands, SQL statements and commits.

A ``Probe`` patches redis-py's packed sends (one per round trip: a pipeline or an EVALSHA
is one) and listens to SQLAlchemy's cursor / commit events and the pool pre-ping (which
cursor events do not see) on the given engines. Inside ``probe.into(counts)`` everything
is added to ``counts``; blocks may nest (the outer one counts the inner one's work too).
With a Redis admin client, ``INFO commandstats`` deltas name the commands, Lua's inner
ones included. Counting runs in its own, untimed pass: the patches cost time.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import redis
import redis.asyncio.connection as aio_conn
import redis.connection as sync_conn
import sqlalchemy as sa
from _common import fmt_n


@dataclass(eq=False)
class Counts:
    ops: int = 0
    round_trips: int = 0
    commands: Counter = field(default_factory=Counter)
    statements: Counter = field(default_factory=Counter)
    commits: int = 0
    pings: int = 0

    def per_op(self, value: float) -> float:
        return value / self.ops if self.ops else float("nan")

    @property
    def rt(self) -> float:
        return self.per_op(self.round_trips)

    @property
    def stmts(self) -> float:
        return self.per_op(sum(self.statements.values()))

    @property
    def txns(self) -> float:
        return self.per_op(self.commits)

    def redis_detail(self) -> str:
        items = sorted(self.commands.items())
        return ", ".join(f"{k} {fmt_n(self.per_op(v))}" for k, v in items) or "-"

    def sql_detail(self) -> str:
        parts = [f"{k} {fmt_n(self.per_op(v))}" for k, v in sorted(self.statements.items())]
        if self.commits:
            parts.append(f"COMMIT {fmt_n(self.txns)}")
        if self.pings:
            parts.append(f"pre-ping {fmt_n(self.per_op(self.pings))}")
        return ", ".join(parts) or "-"

    def summary(self) -> str:
        """Per operation: ``statements 3, commits 1, round trips 1``."""
        return (
            f"statements {fmt_n(self.stmts)}, commits {fmt_n(self.txns)}, "
            f"round trips {fmt_n(self.rt)}"
        )


_STMT = re.compile(r"^\s*(\w+).*?\b(?:FROM|INTO|UPDATE)\s+[`\"]?(\w+)", re.S | re.I)
_UPDATE = re.compile(r"^\s*UPDATE\s+[`\"]?(\w+)", re.I)


def label(statement: str) -> str:
    """``UPDATE lumina_message``, ``INSERT lumina_run``, ``SELECT lumina_message``..."""
    m = _UPDATE.match(statement)
    if m:
        return f"UPDATE {m.group(1)}"
    m = _STMT.match(statement)
    if m:
        return f"{m.group(1).upper()} {m.group(2)}"
    return statement.split(None, 1)[0].upper() if statement.strip() else "?"


class Probe:
    """Installed for a ``with`` block; counts into the ``into(...)`` blocks inside it.

    PRAGMAs are not counted: on SQLite the app's checkpoint task runs one every second.
    """

    IGNORED_COMMANDS = frozenset({"info", "flushall"})

    def __init__(self, engines: list[sa.Engine], admin: redis.Redis | None = None) -> None:
        self.engines = engines
        self.admin = admin
        self.targets: list[Counts] = []

    def _add(self, attr: str, key: str | None = None) -> None:
        for counts in self.targets:
            if key is None:
                setattr(counts, attr, getattr(counts, attr) + 1)
            else:
                getattr(counts, attr)[key] += 1

    @contextlib.contextmanager
    def into(self, counts: Counts) -> Iterator[Counts]:
        before = self._commandstats()
        self.targets.append(counts)
        try:
            yield counts
        finally:
            assert self.targets.pop() is counts
            counts.ops += 1
            after = self._commandstats()
            for name, calls in after.items():
                delta = calls - before.get(name, 0)
                if delta and name not in self.IGNORED_COMMANDS:
                    counts.commands[name] += delta

    def _commandstats(self) -> dict[str, int]:
        if self.admin is None:
            return {}
        saved, self.targets = self.targets, []  # INFO itself is not the operation's
        try:
            stats = self.admin.info("commandstats")
        finally:
            self.targets = saved
        return {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}

    def __enter__(self) -> Probe:
        probe = self
        self._aio, self._sync = (
            aio_conn.AbstractConnection.send_packed_command,
            sync_conn.AbstractConnection.send_packed_command,
        )
        aio_orig, sync_orig = self._aio, self._sync

        async def aio_send(conn, command, check_health=True):
            probe._add("round_trips")
            return await aio_orig(conn, command, check_health)

        def sync_send(conn, command, check_health=True):
            probe._add("round_trips")
            return sync_orig(conn, command, check_health)

        aio_conn.AbstractConnection.send_packed_command = aio_send
        sync_conn.AbstractConnection.send_packed_command = sync_send

        def on_execute(_conn, _cursor, statement, _params, _context, many) -> None:
            name = label(statement)
            if name != "PRAGMA":
                probe._add("statements", name + (" (many)" if many else ""))

        def on_commit(_conn) -> None:
            probe._add("commits")

        self._listeners = [("before_cursor_execute", on_execute), ("commit", on_commit)]
        for engine in self.engines:
            for name, fn in self._listeners:
                sa.event.listen(engine, name, fn)
            ping = engine.dialect.do_ping

            def do_ping(dbapi_connection, ping=ping) -> bool:
                probe._add("pings")
                return ping(dbapi_connection)

            engine.dialect.do_ping = do_ping
        return self

    def __exit__(self, *exc: object) -> None:
        aio_conn.AbstractConnection.send_packed_command = self._aio
        sync_conn.AbstractConnection.send_packed_command = self._sync
        for engine in self.engines:
            for name, fn in self._listeners:
                sa.event.remove(engine, name, fn)
            del engine.dialect.do_ping
