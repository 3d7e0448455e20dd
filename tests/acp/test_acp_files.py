"""What Lumina reads or writes for an ACP agent (agents/providers/acp/files.py): regular files only,
checked on the descriptor; no link in any part of the path; a size limit; a deadline on
threads of the ACP layer's own."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from lumina_app.agents.providers.acp.files import (
    AgentFiles,
    FileRefused,
    read_regular,
    write_regular,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "conv"
    folder.mkdir()
    (folder / "notes.txt").write_text("inside")
    (tmp_path / "secret.txt").write_text("outside")
    return folder


def refused(call) -> str:
    with pytest.raises(FileRefused) as exc:
        call()
    return exc.value.reason


def test_a_regular_file_inside_is_read_and_written(root: Path) -> None:
    assert read_regular(root, "notes.txt", 100) == b"inside"
    assert read_regular(root, str(root / "notes.txt"), 100) == b"inside"
    write_regular(root, "sub/dir/new.txt", b"made")
    assert (root / "sub" / "dir" / "new.txt").read_bytes() == b"made"
    write_regular(root, "notes.txt", b"x")  # replaced, not appended
    assert (root / "notes.txt").read_bytes() == b"x"


def test_a_fifo_is_refused_at_once_for_reading_and_writing(root: Path) -> None:
    os.mkfifo(root / "pipe")
    began = time.monotonic()
    assert refused(lambda: read_regular(root, "pipe", 100)) == "not a regular file"
    assert refused(lambda: write_regular(root, "pipe", b"x")) == "not a regular file"
    assert time.monotonic() - began < 0.5


def test_a_socket_and_a_folder_are_not_regular_files(root: Path) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock"))
        assert refused(lambda: read_regular(root, "sock", 100)) in (
            "not a regular file",
            "No such device or address",
        )
    (root / "dir").mkdir()
    assert refused(lambda: read_regular(root, "dir", 100)) == "not a regular file"
    assert refused(lambda: read_regular(root, ".", 100)) == "not a regular file"


def test_no_link_in_any_part_of_the_path(root: Path, tmp_path: Path) -> None:
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    (root / "up").symlink_to(tmp_path)
    (root / "null").symlink_to("/dev/null")
    for path in ("link.txt", "up/secret.txt", "null"):
        assert refused(lambda p=path: read_regular(root, p, 100)) == (
            "a symbolic link is not followed"
        )
    assert refused(lambda: write_regular(root, "up/x.txt", b"x")) == (
        "a symbolic link is not followed"
    )
    assert not (tmp_path / "x.txt").exists()
    assert refused(lambda: write_regular(root, "link.txt", b"x")) == (
        "a symbolic link is not followed"
    )
    assert (tmp_path / "secret.txt").read_text() == "outside"


def test_nothing_outside_the_folder(root: Path, tmp_path: Path) -> None:
    for path in ("../secret.txt", str(tmp_path / "secret.txt"), "a/../../secret.txt", "x\0y"):
        assert refused(lambda p=path: read_regular(root, p, 100)) == (
            "outside the conversation's folder"
        )


def test_a_file_over_the_limit_is_too_large(root: Path) -> None:
    (root / "big").write_bytes(b"x" * 101)
    assert refused(lambda: read_regular(root, "big", 100)) == "file too large (over 100 bytes)"


async def test_slow_work_times_out_on_the_acp_pool_not_the_default_one(root: Path) -> None:
    files = AgentFiles(workers=2, timeout=0.2)
    release = threading.Event()
    names: list[str] = []

    def stuck() -> None:
        names.append(threading.current_thread().name)
        release.wait(5)

    try:
        began = time.monotonic()
        with pytest.raises(FileRefused, match=r"timed out after 0\.2 s"):
            await files.run(stuck)
        assert time.monotonic() - began < 1.0
        assert names[0].startswith("lumina-acp-fs")
        with pytest.raises(FileRefused, match="file too large"):
            await files.write(root, "x", b"x" * (files.max_bytes + 1))
        assert await asyncio.to_thread(lambda: "default executor free") == "default executor free"
    finally:
        release.set()
        files.close()
