"""Walking an archive tree that may come from someone else: find the conversation folders
and read their files without following a symbolic link or reading past a size limit.

The path given to an import is the operator's choice and may itself be a link; below it
a link where the layout has a folder (``agents``, an agent, ``conversations``, a
conversation) is refused and reported, and a conversation holding a link anywhere inside
it is refused as a whole. Files are opened with ``O_NOFOLLOW`` and must be regular files.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from lumina_app.archive.format import HISTORY, MEMORY_FOLDER, META, ArchiveError
from lumina_app.archive.limits import FILE_LIMIT, too_large

LINK_REFUSED = "is a symbolic link: refused (an import follows no links)"
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)


@dataclass(slots=True)
class FoundFolders:
    """The conversation folders under an import path, and what was refused on the way
    (links, unreadable folders)."""

    folders: list[Path] = field(default_factory=list)
    refused: list[ArchiveError] = field(default_factory=list)


def find_conversation_folders(path: Path) -> FoundFolders:
    """Conversation folders under ``path``: an archive root (holding ``agents/``), an
    ``agents`` folder, one agent's folder, or a single conversation folder.

    ``path`` itself may be a link (the operator named it); below it a link standing where
    a folder of the layout would be is refused, never followed.
    """
    if not path.exists():
        raise ArchiveError(path, "no such file or directory")
    if not path.is_dir():
        raise ArchiveError(path, "not a directory (expected an archive folder or a .zip)")
    if os.path.lexists(path / HISTORY) or os.path.lexists(path / META):
        return FoundFolders([path])
    found = FoundFolders()
    if _is_folder(path / "conversations", found):
        found.folders = _subfolders(path / "conversations", found)
        return found
    agents = path / "agents" if _is_folder(path / "agents", found) else path
    found.folders = [
        folder
        for agent in _subfolders(agents, found)
        if _is_folder(agent / "conversations", found)
        for folder in _subfolders(agent / "conversations", found)
    ]
    if not found.folders and not found.refused and agents is path and not find_agent_folders(path):
        raise ArchiveError(
            path,
            "no archive here: expected agents/<agentId>/conversations/<convId>/ "
            "or a conversation folder holding history.json",
        )
    return found


def find_agent_folders(path: Path) -> list[Path]:
    """The agent folders under an import path whose ``memory/`` may hold memory files: the
    path itself if it is one, else ``[agents/]<agentId>`` folders holding ``memory/``. Links
    are not followed (and are reported by :func:`find_conversation_folders`)."""
    if not path.is_dir() or os.path.lexists(path / HISTORY) or os.path.lexists(path / META):
        return []
    ignored = FoundFolders()
    if _is_folder(path / MEMORY_FOLDER, ignored):
        return [path]
    agents = path / "agents" if _is_folder(path / "agents", ignored) else path
    return [a for a in _subfolders(agents, ignored) if os.path.lexists(a / MEMORY_FOLDER)]


def _is_folder(path: Path, found: FoundFolders) -> bool:
    """A real folder; a link there is refused (recorded in ``found``)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    if stat.S_ISLNK(mode):
        found.refused.append(ArchiveError(path, LINK_REFUSED))
        return False
    return stat.S_ISDIR(mode)


def _subfolders(path: Path, found: FoundFolders) -> list[Path]:
    """The real folders in ``path`` (dot-names skipped); links and an unreadable folder
    are recorded in ``found``."""
    folders = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                if entry.is_symlink():
                    found.refused.append(ArchiveError(Path(entry.path), LINK_REFUSED))
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
    except OSError as exc:
        found.refused.append(ArchiveError(path, f"cannot read: {exc.strerror or exc}"))
    return sorted(folders)


def refuse_links(folder: Path) -> None:
    """Raise ``ArchiveError`` naming the first link anywhere in ``folder`` (turn folders
    and messages.log included): a conversation holding one is refused as a whole."""
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        raise ArchiveError(Path(entry.path), LINK_REFUSED)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
        except OSError as exc:
            raise ArchiveError(current, f"cannot read: {exc.strerror or exc}") from None


def read_text(path: Path, max_bytes: int, *, missing_ok: bool = False) -> str | None:
    """A regular file's UTF-8 text, read without following a link and never past
    ``max_bytes`` (what the file system says about its size is checked, then the read
    itself stops one byte past the limit)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise ArchiveError(path, "file is missing") from None
    except OSError as exc:
        if path.is_symlink():
            raise ArchiveError(path, LINK_REFUSED) from None
        raise ArchiveError(path, f"cannot read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ArchiveError(path, "not a regular file")
        if info.st_size > max_bytes:
            raise ArchiveError(path, too_large(f"{info.st_size:,} bytes", max_bytes, FILE_LIMIT))
        try:
            data = file.read(info.st_size + 1)  # one byte more shows it grew
        except OSError as exc:
            raise ArchiveError(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ArchiveError(path, too_large("larger now", max_bytes, FILE_LIMIT))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArchiveError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
