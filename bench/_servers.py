"""Throw-away databases and processes for the benchmarks: a migrated database on SQLite or
a local server, a private redis-server, the real app as a subprocess, /proc probes."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import sqlalchemy as sa
from _common import ROOT, note

# -- databases -----------------------------------------------------------------------------

ADMIN_URLS = {  # the local servers; overridable for another machine
    "mariadb": os.environ.get(
        "LUMINA_BENCH_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test"
    ),
    "postgresql": os.environ.get(
        "LUMINA_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
    ),
}


def migrate(sync_url: str) -> None:
    """``alembic upgrade head`` on ``sync_url`` with the repository's migrations."""
    from alembic import command
    from alembic.config import Config

    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "alembic"))
    cfg.set_main_option("sqlalchemy.url", sync_url.replace("%", "%%"))
    cfg.attributes["configure_logger"] = False
    command.upgrade(cfg, "head")


@contextlib.contextmanager
def database(backend: str, tmp: Path) -> Iterator[str]:
    """A migrated throw-away database (sync URL): a SQLite file in ``tmp``, or a new
    database on the local MariaDB/PostgreSQL server, dropped on the way out."""
    if backend == "sqlite":
        url = f"sqlite:///{tmp / 'bench.db'}"
        migrate(url)
        yield url
        return
    admin_url = ADMIN_URLS[backend]
    name = f"lumina_bench_{secrets.token_hex(3)}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=sa.pool.NullPool)
    charset = " CHARACTER SET utf8mb4" if backend == "mariadb" else ""
    force = " WITH (FORCE)" if backend == "postgresql" else ""
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}{charset}")
    try:
        url = sa.engine.make_url(admin_url).set(database=name).render_as_string(False)
        migrate(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{force}")
        admin.dispose()


def database_version(sync_url: str) -> str:
    """``sqlite 3.40.1`` / ``postgresql 15.x ...`` for the header."""
    engine = sa.create_engine(sync_url, poolclass=sa.pool.NullPool)
    query = "select sqlite_version()" if engine.dialect.name == "sqlite" else "select version()"
    with engine.connect() as conn:
        version = str(conn.exec_driver_sql(query).scalar()).split(" on ")[0]
    engine.dispose()
    return f"{engine.dialect.name} {version}"


# -- processes -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{proc.args[0]} did not listen on {port}") from None
            time.sleep(0.01)


@contextlib.contextmanager
def redis_server(tmp: Path) -> Iterator[str]:
    """A private ``redis-server`` (no persistence) on a free port, so FLUSHALL and
    ``INFO commandstats`` see only this run; yields its URL."""
    port = free_port()
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    args += ["--appendonly", "no", "--dir", str(tmp)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def app_server(
    workdir: Path,
    *,
    backend_only: bool = True,
    env: dict[str, str] | None = None,
    database_url: str | None = None,
    seed: Callable[[str], object] | None = None,
) -> Iterator:
    """The real app (``reflex run --env prod``) through the tests' AppServer: own work
    folder, migrated database (temp SQLite unless given), a copy of data/agents. ``seed``
    gets the database URL before the server starts. Yields the server (``.url``,
    ``.proc.pid`` = its process group); stopped on the way out."""
    from tests.server import AppServer

    server = AppServer(workdir, backend_only=backend_only, env=env, database_url=database_url)
    try:
        server.prepare()
        if seed is not None:
            seed(server.database_url)
        t0 = time.perf_counter()
        server.start()
        note(f"app server up in {time.perf_counter() - t0:.1f} s on {server.url}")
        yield server
    finally:
        server.stop()


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                stat = (entry / "stat").read_text()
                if int(stat[stat.rfind(")") + 2 :].split()[2]) == pgid:  # state, ppid, pgrp
                    pids.append(int(entry.name))
    return pids


def group_cpu_s(pgid: int) -> float:
    """The CPU time of a process group (a server and its workers): each process's CPU clock,
    in ns, its ended threads included; utime + stime from /proc (ticks of 10 ms: ±5-10 % on
    a side's 100-200 ms) where that clock cannot be read."""
    total = 0.0
    for pid in group_pids(pgid):
        try:
            total += time.clock_gettime(_process_cpu_clock(pid))
        except OSError:
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{pid}/stat").read_text()
                fields = stat[stat.rfind(")") + 2 :].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _process_cpu_clock(pid: int) -> int:
    """Linux's clock id for another process's CPU time (MAKE_PROCESS_CPUCLOCK(pid, SCHED))."""
    return ((~pid) << 3) | 2


def group_rss_kb(pgid: int) -> int:
    """The sum of VmRSS over a process group."""
    total = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total
