"""An agent's long-term memories in the archive: ``agents/<agentId>/memory/<owner>.json``,
one file per owner (#27, docs/ARCHIVE.md "Memories").

The file may come from someone else: it is read capped and without following a link,
every field is checked, and a file is taken whole or not at all. Whose memories it holds
is the file's own business only as a check: an import writes them for the importing owner,
so a file written for another owner is refused rather than merged into the wrong person.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lumina_app.archive.format import MEMORY_FOLDER, ArchiveError
from lumina_app.archive.reader import FUTURE_SLACK, MAX_COUNT, _Fields, _kind, _show, parse_json
from lumina_app.archive.tree import LINK_REFUSED, read_text
from lumina_app.domain import utcnow
from lumina_app.domain.access import is_conversation_id
from lumina_app.domain.memories import MAX_MEMORY_CHARS, Memory, MemoryStatus
from lumina_app.domain.views import iso_ms

MAX_MEMORIES_PER_FILE = 100_000
_SAFE = "-@+"  # with letters and digits: kept as is in a file name; the rest is %XX
_EMPTY_OWNER = "_"  # the loopback owner "" (an owner "_" is written %5F)
# Exported: what the person still has (active) and the record of what replaced what.
# A forgotten (deleted) memory stays forgotten: it is not written to any file.
EXPORTED = (MemoryStatus.ACTIVE, MemoryStatus.SUPERSEDED)


def file_name(owner: str) -> str:
    """``<owner>.json``, the owner percent-encoded into one safe, visible file name."""
    if not owner:
        return f"{_EMPTY_OWNER}.json"
    kept = (
        c
        if c.isascii() and (c.isalnum() or c in _SAFE)
        else "".join(f"%{b:02X}" for b in c.encode())
        for c in owner
    )
    return f"{''.join(kept)}.json"


def owner_of(name: str) -> str | None:
    """The owner a memory file's name stands for, or None for a name this layout never
    writes (a file that is not a memory file)."""
    if not name.endswith(".json") or name.startswith("."):
        return None
    stem = name.removesuffix(".json")
    if stem == _EMPTY_OWNER:
        return ""
    try:
        owner = unquote(stem, errors="strict")
    except UnicodeDecodeError:
        return None
    return owner if owner and file_name(owner) == name else None


def memory_document(agent_id: str, owner: str, memories: Sequence[Memory]) -> dict[str, Any]:
    """The file's JSON: the memories oldest first, ids only to say what superseded what."""
    return {
        "agentId": agent_id,
        "owner": owner,
        "memories": [
            {
                "id": m.id,
                "text": m.text,
                "status": m.status.value,
                "pinned": m.pinned,
                "conversationId": m.conversation_uuid,
                "seq": m.seq,
                "createdAt": iso_ms(m.created_at),
                "updatedAt": iso_ms(m.updated_at),
                **({"supersededBy": m.superseded_by} if m.superseded_by else {}),
                **({"origin": m.origin} if m.origin else {}),  # e.g. "added over MCP by …"
            }
            for m in sorted(memories, key=lambda m: (m.created_at, m.id))
            if m.status in EXPORTED
        ],
    }


@dataclass(slots=True)
class MemoryFile:
    """A memory file as read: each memory's ``id`` and ``superseded_by`` are the file's own
    numbers (they say what replaced what), not rows of this install."""

    path: Path
    agent_id: str
    owner: str
    memories: list[Memory] = field(default_factory=list)


def find_memory_files(agent_folders: Sequence[Path]) -> tuple[list[Path], list[ArchiveError]]:
    """The memory files in each agent folder's ``memory/`` (dot-names skipped); a link
    where the folder or a file would be is refused, never followed."""
    files: list[Path] = []
    refused: list[ArchiveError] = []
    for agent in agent_folders:
        folder = agent / MEMORY_FOLDER
        try:
            mode = folder.lstat().st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            refused.append(ArchiveError(folder, LINK_REFUSED))
            continue
        if not stat.S_ISDIR(mode):
            continue
        try:
            with os.scandir(folder) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.name.startswith(".") or not entry.name.endswith(".json"):
                        continue
                    if entry.is_symlink():
                        refused.append(ArchiveError(Path(entry.path), LINK_REFUSED))
                    else:
                        files.append(Path(entry.path))
        except OSError as exc:
            refused.append(ArchiveError(folder, f"cannot read: {exc.strerror or exc}"))
    return files, refused


def read_memory_file(path: Path, *, max_file_bytes: int) -> MemoryFile:
    """Parse and check one memory file; ``ArchiveError`` names the file and the entry."""
    agent_id = path.parent.parent.name
    owner = owner_of(path.name)
    if owner is None:
        raise ArchiveError(path, "not a memory file name (expected <owner>.json, %-encoded)")
    data = parse_json(path, read_text(path, max_file_bytes) or "")
    if not isinstance(data, dict):
        raise ArchiveError(path, f"expected a JSON object, got {_kind(data)}")
    latest = utcnow() + FUTURE_SLACK
    fields = _Fields(path, data, latest)
    if fields.text("agentId", default=agent_id, limit=None) != agent_id:
        raise fields.fail("agentId", f"must be the folder's agent {agent_id!r}")
    if fields.text("owner", default=owner, limit=None) != owner:
        raise fields.fail("owner", f"must be the owner the file is named for ({owner!r})")
    entries = data.get("memories", [])
    if not isinstance(entries, list):
        raise fields.fail("memories", f"must be an array, got {_kind(entries)}")
    if len(entries) > MAX_MEMORIES_PER_FILE:
        raise fields.fail("memories", f"holds more than {MAX_MEMORIES_PER_FILE:,} memories")
    found = MemoryFile(path, agent_id, owner)
    for index, entry in enumerate(entries):
        found.memories.append(_memory(path, index, entry, latest, agent_id, owner))
    _check_links(path, found.memories)
    return found


_STATUSES = {s.value for s in MemoryStatus}


def _memory(
    path: Path, index: int, entry: Any, latest: datetime, agent_id: str, owner: str
) -> Memory:
    if not isinstance(entry, dict):
        raise ArchiveError(path, f"entry {index}: expected an object, got {_kind(entry)}")
    item = _Fields(path, entry, latest, f"entry {index}: ")
    said = item.text("text", limit=None)
    if said is None or not said.strip():
        raise item.fail("text", "is missing")
    said = " ".join(said.split())
    if len(said) > MAX_MEMORY_CHARS:
        raise item.fail("text", f"is longer than {MAX_MEMORY_CHARS} characters")
    status = item.choice("status", _STATUSES) or MemoryStatus.ACTIVE.value
    conversation = item.text("conversationId", limit=None)
    if conversation is not None and not is_conversation_id(conversation):
        raise item.fail("conversationId", f"must be a conversation id, got {_show(conversation)}")
    created = item.timestamp("createdAt")
    if created is None:
        raise item.fail("createdAt", "is missing")
    return Memory(
        id=_whole(item, "id", required=True),
        owner=owner,
        agent_id=agent_id,
        text=said,
        status=MemoryStatus(status),
        pinned=_flag(item, "pinned"),
        conversation_uuid=conversation,
        seq=_whole(item, "seq"),
        created_at=created,
        updated_at=item.timestamp("updatedAt") or created,
        superseded_by=_whole(item, "supersededBy"),
        origin=item.text("origin", limit=128),
    )


def _whole(item: _Fields, key: str, *, required: bool = False) -> Any:
    value = item.data.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_COUNT:
        raise item.fail(key, f"must be a whole number from 1 to {MAX_COUNT}")
    return value


def _flag(item: _Fields, key: str) -> bool:
    value = item.data.get(key, False)
    if not isinstance(value, bool):
        raise item.fail(key, f"must be true or false, got {_kind(value)}")
    return value


def _check_links(path: Path, memories: Sequence[Memory]) -> None:
    """Ids once each; a superseded memory names one in the same file."""
    keys: set[int] = set()
    for index, memory in enumerate(memories):
        if memory.id in keys:
            raise ArchiveError(path, f"entry {index}: 'id' {memory.id} appears twice")
        keys.add(memory.id)
    for index, memory in enumerate(memories):
        if memory.superseded_by is not None and memory.superseded_by not in keys:
            raise ArchiveError(
                path, f"entry {index}: 'supersededBy' {memory.superseded_by} is not in this file"
            )
