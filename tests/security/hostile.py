"""Running ``python -m lumina_app import`` as a child process, reading what it left in SQL,
and building hostile archives: folders with files written as they are, and zips written
byte by byte so their headers can lie."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.conftest import ROOT, Database

TIMEOUT = 60
CONVERSATIONS = "agents/demo/conversations"


# -- running the CLI -----------------------------------------------------------------------


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    peak_rss_mb: float
    seconds: float

    def error_line(self, prefix: str) -> str:
        """The one ``error:`` line about ``prefix`` (a path, as the CLI prints it)."""
        lines = [line for line in self.stderr.splitlines() if line.startswith(f"error: {prefix}")]
        assert len(lines) == 1, f"{prefix!r} in:\n{self.stderr}"
        return lines[0]


# The child is started by a small launcher: a process forked from pytest would report
# pytest's own peak RSS as its maximum (Linux keeps the high-water mark across exec).
_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
child.returncode = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as report:
    report.write(str(usage.ru_maxrss))
sys.exit(child.returncode)
"""


def run_import(database: Database, tmp_path: Path, *args: str, **env: str) -> Run:
    """``python -m lumina_app import ARGS`` in a child process, with its peak RSS."""
    rss = tmp_path / "peak-rss-kb.txt"
    command = [sys.executable, "-m", "lumina_app", "import", *args]
    child_env = {
        **os.environ,
        "LUMINA_DATABASE_URL": database.url,
        "LUMINA_DATA_DIR": str(tmp_path / "data"),
        "LUMINA_REDIS_URL": "",
        **env,
    }
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(rss), *command],
        cwd=ROOT,
        env=child_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # so a hung import can be killed with its launcher
    )
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"import still running after {TIMEOUT} s")
    return Run(
        code=proc.returncode,
        stdout=stdout.decode("utf-8"),
        stderr=stderr.decode("utf-8"),
        peak_rss_mb=int(rss.read_text()) / 1024,
        seconds=time.monotonic() - started,
    )


def assert_no_crash(run: Run) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code == 1, (run.code, run.stdout, run.stderr)


# -- reading SQL directly ------------------------------------------------------------------


def rows(database: Database, query: str, **params: object) -> list[tuple]:
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(query), params)]
    finally:
        engine.dispose()


def stored_ids(database: Database) -> list[str]:
    return [r[0] for r in rows(database, "SELECT uuid FROM lumina_conversation ORDER BY uuid")]


def all_stored_text(database: Database) -> str:
    titles = rows(database, "SELECT title, owner FROM lumina_conversation")
    contents = rows(database, "SELECT content, turn_id FROM lumina_message")
    return "\n".join(str(value) for row in titles + contents for value in row)


def conversation_state(database: Database, uuid: str) -> tuple[list[tuple], list[tuple]]:
    """Every column of the conversation row and of its messages, as stored."""
    conv = rows(database, "SELECT * FROM lumina_conversation WHERE uuid = :u", u=uuid)
    msgs = rows(
        database,
        "SELECT m.* FROM lumina_message m JOIN lumina_conversation c "
        "ON m.conversation_id = c.id WHERE c.uuid = :u ORDER BY m.seq",
        u=uuid,
    )
    return conv, msgs


# -- building archives -----------------------------------------------------------------------


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def good_history(text: str = "hello") -> list[dict]:
    return [
        {
            "role": "user",
            "content": text,
            "messageId": "msg-1",
            "timestamp": "2026-03-23T10:00:01Z",
        },
        {
            "role": "assistant",
            "content": "hi",
            "messageId": "msg-1",
            "timestamp": "2026-03-23T10:00:02Z",
        },
    ]


def write_conversation(
    folder: Path, meta: dict | str | bytes | None = None, history: object = None
) -> Path:
    """A conversation folder; ``str``/``bytes`` values are written as they are."""
    folder.mkdir(parents=True, exist_ok=True)
    if meta is None:
        meta = {"agentId": "demo", "title": folder.name, "status": "completed"}
    history = good_history() if history is None else history
    for name, value in (("meta.json", meta), ("history.json", history)):
        if isinstance(value, bytes):
            (folder / name).write_bytes(value)
        elif isinstance(value, str):
            (folder / name).write_text(value, encoding="utf-8")
        else:
            (folder / name).write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return folder


@dataclass
class Member:
    """One member of a hand-built zip: raw deflate ``data``, the real ``crc``/``size``, and
    the sizes its headers claim (by default the true ones)."""

    name: str
    data: bytes
    crc: int
    size: int
    claimed_size: int | None = None


def deflated(chunks: list[bytes]) -> tuple[bytes, int, int]:
    """(raw deflate stream, crc32, size) of the concatenated chunks."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = b"".join(packer.compress(chunk) for chunk in chunks) + packer.flush()
    crc = size = 0
    for chunk in chunks:
        crc, size = zlib.crc32(chunk, crc), size + len(chunk)
    return data, crc, size


def bomb_member(name: str, megabytes: int) -> Member:
    """history.json holding one ``megabytes`` MiB message, about 1 KB compressed per MiB.

    After a full flush deflate starts afresh, so one compressed MiB can be repeated
    instead of compressing hundreds of MiB in the test."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    head, tail, mib = b'[{"role": "user", "content": "', b'"}]', b"a" * (1 << 20)
    first = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(mib) + packer.flush(zlib.Z_FULL_FLUSH)
    assert packer.compress(mib) + packer.flush(zlib.Z_FULL_FLUSH) == block
    last = packer.compress(tail) + packer.flush()
    crc = zlib.crc32(head)
    for _ in range(megabytes):
        crc = zlib.crc32(mib, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + megabytes * len(mib) + len(tail)
    return Member(name, first + block * megabytes + last, crc, size)


def hand_made_zip(path: Path, members: list[Member], *, claimed_count: int | None = None) -> Path:
    """Write the zip byte by byte, so its headers can say what an attacker wants."""
    body, directory = bytearray(), bytearray()
    for member in members:
        name = member.name.encode()
        claimed = member.size if member.claimed_size is None else member.claimed_size
        sizes = (member.crc, len(member.data), claimed)
        offset = len(body)
        body += struct.pack(
            "<4s2B4HL2L2H", b"PK\x03\x04", 20, 0, 0, 8, 0, 0x21, *sizes, len(name), 0
        )
        body += name + member.data
        directory += struct.pack(
            "<4s4B4HL2L5H2L", b"PK\x01\x02", 20, 3, 20, 0, 0, 8, 0, 0x21, *sizes,
            len(name), 0, 0, 0, 0, 0o100644 << 16, offset,
        )  # fmt: skip
        directory += name
    count = len(members) if claimed_count is None else claimed_count
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(directory), len(body), 0)
    path.write_bytes(bytes(body + directory + end))
    return path
