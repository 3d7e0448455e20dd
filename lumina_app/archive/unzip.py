"""Unpacking a .zip for import without trusting it.

A zip's headers say how many members it has and how big each one is; a hostile zip lies.
So the member count is taken from the central directory itself, walked entry by entry
before ``zipfile`` parses it (its parse keeps every entry in memory), and sizes are
counted on the bytes actually decompressed, in 1 MiB chunks, against a per-member and a
running total cap. Only the files an import reads (meta.json, history.json, memory
files and the messages' ``<messageId>/files/``) are decompressed at all, and only if
stored or deflated (``zipfile`` inflates bzip2 and lzma
a whole input chunk at a time, without a cap on the output). Links, special files,
encrypted members, names leaving the folder and names given twice are refused.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from lumina_app.archive.attachments import FILES_FOLDER
from lumina_app.archive.format import BRANCHES, HISTORY, MEMORY_FOLDER, META, ArchiveError
from lumina_app.archive.limits import (
    FILE_LIMIT,
    MEMBERS_LIMIT,
    ZIP_LIMIT,
    ImportLimits,
    too_large,
)

READ_FILES = frozenset({META, HISTORY, BRANCHES})
_CHUNK = 1 << 20
_MAX_ENTRY_HEADER = 1024  # one central directory record: 46 bytes + name + extra + comment
_EOCD = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # its zip64 form, 56 bytes
_EOCD64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes, between the two
_ENTRY = struct.Struct("<4s24x3H12x")  # central directory record: name/extra/comment lengths
_EOCD_SIG, _EOCD64_SIG, _EOCD64_LOCATOR_SIG = b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07"
_ENTRY_SIG = b"PK\x01\x02"
_MEMBER_ERRORS = (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, ValueError)
_MEMBER_ERRORS += (zlib.error,)


def _is_memory_file(parts: tuple[str, ...]) -> bool:
    """``…/<agentId>/memory/<owner>.json``: read by an import, so extracted."""
    return len(parts) >= 3 and parts[-2] == MEMORY_FOLDER and parts[-1].endswith(".json")


def _is_message_file(parts: tuple[str, ...]) -> bool:
    """``…/<messageId>/files/<name>``: a message's file, uploaded by an import."""
    return len(parts) >= 3 and parts[-2] == FILES_FOLDER


@dataclass(slots=True)
class RefusedMember:
    """A member not extracted: its name in the zip and why."""

    name: str
    reason: str

    @property
    def parts(self) -> tuple[str, ...]:
        """Its path in the extracted tree; empty if the name would leave it."""
        return _safe_parts(self.name) or ()


class _Refused(Exception):
    """One member is not extracted; the message says why."""


def extract(archive: Path, target: Path, limits: ImportLimits) -> list[RefusedMember]:
    """Extract the meta.json and history.json members of ``archive`` into ``target``.

    Returns the members refused one by one (a link, an unsafe name, too large, corrupt).
    Raises ``ArchiveError`` when the zip is refused as a whole: unreadable, too many
    members, or more than ``max_zip_bytes`` decompressed in total.
    """
    try:
        with archive.open("rb") as fp:
            count_members(fp, limits.max_zip_members, archive)
            with zipfile.ZipFile(fp) as zipped:
                if len(zipped.infolist()) > limits.max_zip_members:  # the walk above missed?
                    raise ArchiveError(archive, _too_many(limits.max_zip_members))
                return _extract_members(zipped, archive, target, limits)
    except (zipfile.BadZipFile, EOFError, ValueError, struct.error) as exc:
        raise ArchiveError(archive, f"bad zip file: {exc}") from None
    except OSError as exc:
        raise ArchiveError(archive, f"cannot read: {exc.strerror or exc}") from None


def count_members(fp: BinaryIO, limit: int, archive: Path) -> int:
    """Walk the central directory the way ``zipfile`` will parse it and count its
    entries, refusing past ``limit`` entries or an entry header over 1 KiB, before
    anything is kept in memory."""
    start, size = _central_directory(fp)
    fp.seek(start)
    count = seen = 0
    while seen < size:
        header = fp.read(_ENTRY.size)
        if len(header) < _ENTRY.size or not header.startswith(_ENTRY_SIG):
            raise zipfile.BadZipFile("bad central directory entry")
        _, name, extra, comment = _ENTRY.unpack(header)
        entry = _ENTRY.size + name + extra + comment
        count += 1
        if count > limit:
            raise ArchiveError(archive, _too_many(limit))
        if entry > _MAX_ENTRY_HEADER:
            raise ArchiveError(
                archive, f"member {count} has a {entry:,}-byte header: refused, nothing imported"
            )
        fp.seek(entry - _ENTRY.size, os.SEEK_CUR)
        seen += entry
    return count


def _central_directory(fp: BinaryIO) -> tuple[int, int]:
    """(offset, size) of the central directory, found as ``zipfile`` finds it: the end
    record at the very end, else the last one in the final 64 KiB (a comment may follow
    it); the zip64 record when a locator precedes it; the directory ends where that
    record starts."""
    end = fp.seek(0, os.SEEK_END)
    tail_size = min(end, _EOCD.size + 0xFFFF)
    fp.seek(end - tail_size)
    tail = fp.read(tail_size)
    at = len(tail) - _EOCD.size
    if not (at >= 0 and tail.startswith(_EOCD_SIG, at) and tail.endswith(b"\0\0")):
        at = tail.rfind(_EOCD_SIG)
    if at < 0 or len(tail) - at < _EOCD.size:
        raise zipfile.BadZipFile("File is not a zip file")
    record_at = end - tail_size + at
    size = _EOCD.unpack_from(tail, at)[5]
    before = record_at - _EOCD64.size - _EOCD64_LOCATOR.size
    if before >= 0:
        fp.seek(before)
        zip64 = fp.read(_EOCD64.size + _EOCD64_LOCATOR.size)
        if zip64.startswith(_EOCD64_LOCATOR_SIG, _EOCD64.size) and zip64.startswith(_EOCD64_SIG):
            record_at, size = before, _EOCD64.unpack_from(zip64)[7]
    if size > record_at:
        raise zipfile.BadZipFile("Bad offset for central directory")
    return record_at - size, size


def _extract_members(
    zipped: zipfile.ZipFile, archive: Path, target: Path, limits: ImportLimits
) -> list[RefusedMember]:
    refused: list[RefusedMember] = []
    wanted: list[tuple[zipfile.ZipInfo, tuple[str, ...]]] = []
    seen: set[tuple[str, ...]] = set()
    for info in zipped.infolist():
        parts = _safe_parts(info.filename)
        twice = parts in seen and not info.is_dir()
        reason = _refusal(info, parts) or ("appears twice: refused" if twice else None)
        seen.add(parts)
        if reason:
            refused.append(_refuse(info, reason, target))
        elif info.is_dir():
            _make_folder(target.joinpath(*parts))
        elif parts[-1] in READ_FILES or _is_memory_file(parts) or _is_message_file(parts):
            wanted.append((info, parts))
    declared = sum(info.file_size for info, _ in wanted)
    if declared > limits.max_zip_bytes:  # honest headers: refuse before inflating a byte
        raise ArchiveError(archive, _over_total(f"declares {declared:,}", limits))
    total = 0
    for info, parts in wanted:
        try:
            total = _extract_one(zipped, info, target.joinpath(*parts), total, archive, limits)
        except _Refused as exc:
            refused.append(_refuse(info, str(exc), target))
        except _MEMBER_ERRORS as exc:
            refused.append(_refuse(info, f"cannot be extracted: {exc}", target))
    return refused


def _refuse(info: zipfile.ZipInfo, reason: str, target: Path) -> RefusedMember:
    """Record a refused member; its folder is still made, so the conversation it belongs
    to is found and skipped as refused rather than reported once more as incomplete."""
    refused = RefusedMember(info.filename, reason)
    if len(refused.parts) > 1:
        _make_folder(target.joinpath(*refused.parts[:-1]))
    return refused


def _make_folder(path: Path) -> None:
    """Best effort: a name clash (a file where a folder would go) shows up later as a
    missing or unreadable file of that conversation."""
    with contextlib.suppress(OSError):
        path.mkdir(parents=True, exist_ok=True)


def _extract_one(
    zipped: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    dest: Path,
    total: int,
    archive: Path,
    limits: ImportLimits,
) -> int:
    """Copy one member in chunks, counting what is decompressed; returns the new total."""
    limit = limits.max_file_bytes
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        # bzip2 and lzma inflate a whole input chunk at once, with no cap on the output
        raise _Refused(
            f"uses compression method {info.compress_type}: only stored and "
            "deflated members are read"
        )
    if info.file_size > limit:
        raise _Refused(too_large(f"declared as {info.file_size:,} bytes", limit, FILE_LIMIT))
    dest.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with zipped.open(info) as source, dest.open("xb") as out:
            while chunk := source.read(_CHUNK):
                written += len(chunk)
                total += len(chunk)
                if written > limit:
                    raise _Refused(too_large(f"{written:,} bytes or more", limit, FILE_LIMIT))
                if total > limits.max_zip_bytes:
                    over = f"expands to {total:,} or more"
                    raise ArchiveError(archive, _over_total(over, limits))
                out.write(chunk)
    except BaseException:
        with contextlib.suppress(OSError):
            dest.unlink(missing_ok=True)
        raise
    return total


def _refusal(info: zipfile.ZipInfo, parts: tuple[str, ...] | None) -> str | None:
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        return "is a symbolic link: refused (an import follows no links)"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "is not a regular file: refused"
    if parts is None:
        return "has a name leading outside the archive: refused"
    if info.flag_bits & 0x1:
        return "is encrypted: refused"
    return None


def _safe_parts(name: str) -> tuple[str, ...] | None:
    """The path parts of a member name, or None if it is absolute, climbs out with '..',
    or holds a NUL."""
    if name.startswith("/") or "\x00" in name:
        return None
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    return parts if parts and ".." not in parts else None


def _too_many(limit: int) -> str:
    return f"has more than {limit:,} members ({MEMBERS_LIMIT}): refused, nothing imported"


def _over_total(size: str, limits: ImportLimits) -> str:
    return (
        f"{size} bytes, over the {limits.max_zip_bytes:,}-byte limit for one zip "
        f"({ZIP_LIMIT}): refused, nothing imported"
    )
