"""File access an agent process can influence, made so it cannot block the server: only
regular files (checked on the opened descriptor: no FIFO, device, socket), no symbolic
link in any part of the path (each folder opened with ``O_NOFOLLOW`` from the root down),
a size limit, and a deadline — on a small thread pool owned by the ACP layer, never the
default executor the rest of the server shares. A read that still hangs (a stuck disk)
holds one of these threads, never one of the server's."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

MAX_FILE_BYTES = 4 * 1024 * 1024  # one fs/read_text_file or fs/write_text_file
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class FileRefused(Exception):
    """Why a file is not read or written: ``reason`` is what the agent is told."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class AgentFiles:
    """The ACP layer's own bounded pool for file work an agent can influence, each call
    with a deadline; closed with the pool at shutdown."""

    def __init__(
        self, *, workers: int = 4, timeout: float = 10.0, max_bytes: int = MAX_FILE_BYTES
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="lumina-acp-fs")

    async def run(self, work: Callable[[], T], *, deadline: float | None = None) -> T:
        """``work`` on the pool within the deadline, else FileRefused("timed out ...")."""
        future = asyncio.get_running_loop().run_in_executor(self._executor, work)
        seconds = self.timeout if deadline is None else deadline
        try:
            async with asyncio.timeout(seconds):
                return await asyncio.shield(future)
        except TimeoutError:
            raise FileRefused(f"timed out after {seconds:g} s") from None

    async def read(self, root: Path, path: str) -> bytes:
        return await self.run(lambda: read_regular(root, path, self.max_bytes))

    async def write(self, root: Path, path: str, data: bytes) -> None:
        if len(data) > self.max_bytes:
            raise FileRefused(f"file too large (over {self.max_bytes} bytes)")
        await self.run(lambda: write_regular(root, path, data))

    async def remove_tree(self, folder: Path) -> None:
        """Remove ``folder`` (links inside are removed, never followed)."""
        await self.run(lambda: remove_tree(folder), deadline=max(self.timeout, 60.0))

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def parts_within(root: Path, path: str) -> list[str]:
    """``path`` (absolute, or relative to ``root``) as names below ``root``, taken
    lexically: ``..`` may not leave the root, and no link is resolved (none is allowed)."""
    if "\0" in path:
        raise FileRefused("outside the conversation's folder")
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    normal = Path(os.path.normpath(candidate))
    if normal != root and root not in normal.parents:
        raise FileRefused("outside the conversation's folder")
    return list(normal.relative_to(root).parts)


def _open_folder(root: Path, names: list[str], *, create: bool) -> int:
    """An fd of the folder ``root/names...``, each step opened without following a link."""
    try:
        fd = os.open(root, _DIR)
    except OSError as exc:
        raise FileRefused(f"the conversation's folder cannot be opened: {exc.strerror}") from exc
    try:
        for name in names:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=fd)
            try:
                inner = os.open(name, _DIR, dir_fd=fd)
            except OSError as exc:
                raise _refusal(exc, folder=True) from exc
            os.close(fd)
            fd = inner
        return fd
    except BaseException:
        os.close(fd)
        raise


def _refusal(exc: OSError, *, folder: bool = False) -> FileRefused:
    if exc.errno == errno.ELOOP:
        return FileRefused("a symbolic link is not followed")
    if exc.errno == errno.ENOTDIR:
        return FileRefused("a symbolic link is not followed" if folder else "not a folder")
    if exc.errno == errno.ENXIO:
        return FileRefused("not a regular file")
    if exc.errno == errno.ENOENT:
        return FileRefused("no such file")
    return FileRefused(exc.strerror or str(exc))


def _open_file(root: Path, path: str, flags: int, *, create: bool) -> int:
    parts = parts_within(root, path)
    if not parts:
        raise FileRefused("not a regular file")
    folder = _open_folder(root, parts[:-1], create=create)
    try:
        fd = os.open(parts[-1], flags, 0o644, dir_fd=folder)
    except OSError as exc:
        raise _refusal(exc) from exc
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileRefused("not a regular file")
    return fd


def read_regular(root: Path, path: str, max_bytes: int) -> bytes:
    """The bytes of a regular file inside ``root``; FileRefused otherwise."""
    fd = _open_file(root, path, _READ, create=False)
    try:
        if os.fstat(fd).st_size > max_bytes:
            raise FileRefused(f"file too large (over {max_bytes} bytes)")
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # it grew while being read
                raise FileRefused(f"file too large (over {max_bytes} bytes)")
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_regular(root: Path, path: str, data: bytes) -> None:
    """Replace the content of a regular file inside ``root`` (made, with its folders, if
    missing); FileRefused for anything else."""
    fd = _open_file(root, path, _WRITE, create=True)
    try:
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def read_small(path: Path, max_bytes: int) -> bytes | None:
    """A file Lumina keeps beside the agent (its session record): read only if it is a
    regular file; None if missing or not one."""
    try:
        return read_regular(path.parent, path.name, max_bytes)
    except (FileRefused, OSError):
        return None


def write_small(path: Path, data: bytes) -> None:
    """Replace a file Lumina keeps beside the agent, never through a link or into a FIFO."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_regular(path.parent, path.name, data)


def open_log(path: Path) -> int:
    """An fd for an agent's stderr (appended to by it, its tail read by Lumina): a regular
    file, never a FIFO left there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise _refusal(exc) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileRefused("not a regular file")
    os.set_blocking(fd, True)
    return fd


def remove_tree(folder: Path) -> None:
    """``folder`` and what it holds; a link named ``folder`` is removed, not followed."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(folder)  # fd-based on Linux: links inside are unlinked, not followed
    else:
        folder.unlink()
