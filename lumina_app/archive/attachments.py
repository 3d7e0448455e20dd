"""The files a message carries, in the archive (#48; docs/ARCHIVE.md, "Files"): written
beside their turn as ``<messageId>/files/<name>``, listed on the message's history.json
entry (``files``: id, name, type, size, sha256 and the ``path`` inside the conversation
folder), and read back by an import as the importing owner's uploads.

The archive layer does not know how files are stored: ``ArchiveFiles`` is the little it
needs (services/archive_files.py implements it over the file service)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from lumina_app.domain import Msg
from lumina_app.domain.access import is_safe_name

FILES_FOLDER = "files"
ARCHIVED = "_archiveFiles"  # a read message's files, before the import uploads them
MAX_FILES_PER_MESSAGE = 64
MAX_FILE_NAME = 120  # characters of a name in the folder (the stored name may be longer)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_UNSAFE = re.compile(r'[\x00-\x1f\x7f/\\:*?"<>|]')


@dataclass(frozen=True, slots=True)
class AttachedFile:
    """A stored file as the archive sees it."""

    id: str
    name: str
    media_type: str
    size: int
    sha256: str


class ArchiveFiles(Protocol):
    """The file store, as far as an export and an import use it; always one owner's."""

    async def facts(self, owner: str, file_id: str) -> AttachedFile | None:
        """The owner's file, None if it has gone."""

    def content(self, owner: str, file_id: str) -> AsyncIterator[bytes]:
        """Its bytes, chunk by chunk."""

    async def store(self, owner: str, name: str, path: Path) -> AttachedFile:
        """Upload the file at ``path`` as the owner's, with the checks, limits and quota
        of any upload (a refusal raises ``InvalidInput`` or ``QuotaExceeded``)."""

    async def drop(self, owner: str, file_id: str) -> None:
        """Delete one of the owner's files (an import's upload that was not used)."""


def file_ids(msgs: Sequence[Msg]) -> list[str]:
    """The ids of the files the messages carry (``meta["files"]``), each once, in order."""
    seen: dict[str, None] = {}
    for msg in msgs:
        for described in msg.meta.get("files") or ():
            if isinstance(described, dict) and isinstance(described.get("id"), str):
                seen.setdefault(described["id"], None)
    return list(seen)


def folder_name(name: str, taken: set[str]) -> str:
    """A name that is one harmless path component in any file system, unique (case
    folded) among ``taken``, which it joins: ``report (2).pdf`` after ``report.pdf``."""
    clean = _UNSAFE.sub("_", unicodedata.normalize("NFC", name)).strip().lstrip(".").strip()
    stem, dot, extension = clean.rpartition(".")
    if not (dot and stem and 0 < len(extension) <= 16):
        stem, dot, extension = clean, "", ""
    stem = stem[: MAX_FILE_NAME - len(extension) - 8].rstrip() or "file"
    candidate, n = f"{stem}{dot}{extension}", 1
    while candidate.casefold() in taken:
        n += 1
        candidate = f"{stem} ({n}){dot}{extension}"
    taken.add(candidate.casefold())
    return candidate


def render_files(
    msgs: Sequence[Msg],
    found: Mapping[str, tuple[AttachedFile, bytes]],
    taken: dict[str, set[str]] | None = None,
) -> tuple[dict[int, list[dict[str, Any]]], dict[PurePosixPath, bytes]]:
    """Per message (by its index in ``msgs``) its history.json ``files`` entries, and the
    bytes to write, by path inside the conversation folder. A file that has gone keeps
    its entry without a ``path``; a turn that cannot name a folder writes no bytes.
    ``taken``: the names already in each turn's folder (another branch's rows')."""
    entries: dict[int, list[dict[str, Any]]] = {}
    written: dict[PurePosixPath, bytes] = {}
    taken = {} if taken is None else taken
    for index, msg in enumerate(msgs):
        described = [d for d in msg.meta.get("files") or () if isinstance(d, dict)]
        if not described:
            continue
        entries[index] = []
        for item in described:
            entry = {k: item.get(k) for k in ("id", "name", "type", "size")}
            hit = found.get(str(item.get("id")))
            if hit is not None and is_safe_name(msg.turn_id, max_length=64):
                stored, data = hit
                name = folder_name(stored.name, taken.setdefault(msg.turn_id, set()))
                rel = PurePosixPath(msg.turn_id, FILES_FOLDER, name)
                written[rel] = data
                entry |= {"sha256": stored.sha256, "path": str(rel)}
            entries[index].append(entry)
    return entries, written


@dataclass(frozen=True, slots=True)
class ArchivedFile:
    """A file a history.json entry lists, as the import reads it."""

    name: str
    path: str  # inside the conversation folder: <messageId>/files/<name>
    sha256: str


def read_files(value: Any, turn_id: str) -> list[ArchivedFile]:
    """An entry's ``files``, checked: a list of objects, each with a ``name``, the
    ``sha256`` of its bytes and a ``path`` that is ``<this entry's messageId>/files/<one
    plain name>`` (nothing climbing out, nothing of another turn). Entries without a
    ``path`` (a file that had gone at export) are left out. Raises ``ValueError``."""
    if not isinstance(value, list) or len(value) > MAX_FILES_PER_MESSAGE:
        raise ValueError(f"must be a list of at most {MAX_FILES_PER_MESSAGE} files")
    found = []
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            raise ValueError(f"[{n}] must be an object")
        if item.get("path") is None:
            continue
        name, path, sha256 = item.get("name"), item.get("path"), item.get("sha256")
        if not isinstance(name, str) or not name or len(name) > 255 or "\x00" in name:
            raise ValueError(f"[{n}].name must be a file name of 1-255 characters")
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            raise ValueError(f"[{n}].sha256 must be 64 lowercase hex digits")
        if not isinstance(path, str) or not _inside_turn(path, turn_id):
            raise ValueError(
                f"[{n}].path must be '{turn_id}/{FILES_FOLDER}/<name>' (a file of this "
                f"message's own folder), got {path[:80]!r}"
                if isinstance(path, str)
                else f"[{n}].path must be a string"
            )
        found.append(ArchivedFile(name, path, sha256))
    return found


def _inside_turn(path: str, turn_id: str) -> bool:
    parts = path.split("/")
    return (
        len(parts) == 3
        and is_safe_name(turn_id, max_length=64)
        and parts[0] == turn_id
        and parts[1] == FILES_FOLDER
        and parts[2] not in ("", ".", "..")
        and not parts[2].startswith(".")
        and not _UNSAFE.search(parts[2])
    )
