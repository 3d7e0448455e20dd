"""Reading branches.json back (written by ``format.branches_document``; docs/ARCHIVE.md):
every row of a conversation with edited questions put back in its place, so a switch
after an import brings each branch back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lumina_app.archive.format import ArchiveError
from lumina_app.domain import MessageStatus, Msg

MAX_SEQ = 2**31 - 1
_PARKED_STATUSES = {s.value for s in MessageStatus} - {MessageStatus.SUPERSEDED.value}


def merge_branches(
    path: Path,
    data: Any,
    active: list[Msg],
    parse: Callable[[list[Any]], list[Msg]],
) -> list[Msg]:
    """Every row of the conversation in seq order, numbered 1…: the active ones (from
    history.json) and the parked ones (``parse`` reads their entries as history.json's),
    each put back where its ``seq`` says, branch references renumbered with them."""
    if not isinstance(data, dict):
        raise ArchiveError(path, "expected a JSON object")
    seqs, entries = data.get("seqs"), data.get("parked")
    if not isinstance(seqs, list) or len(seqs) != len(active) or not all(map(_is_seq, seqs)):
        raise ArchiveError(path, "seqs: must be the seq of each history.json entry")
    if not isinstance(entries, list):
        raise ArchiveError(path, "parked: must be an array of history entries")
    parked = parse(entries)
    placed: list[tuple[int, Msg]] = list(zip(seqs, active, strict=True))
    for index, (entry, msg) in enumerate(zip(entries, parked, strict=True)):
        seq, tag = entry.get("seq"), entry.get("parked")
        if not _is_seq(seq):
            raise ArchiveError(path, f"parked[{index}].seq: must be a whole number from 1")
        msg.meta["parked"] = _tag(path, index, tag)
        msg.status = MessageStatus.SUPERSEDED
        placed.append((seq, msg))
    placed.sort(key=lambda pair: pair[0])
    renumber = {old: new for new, (old, _msg) in enumerate(placed, start=1)}
    if len(renumber) != len(placed):
        raise ArchiveError(path, "two rows have the same seq")
    rows = []
    for new, (_old, msg) in enumerate(placed, start=1):
        msg.seq = new
        if "branchOf" in msg.meta:
            msg.meta["branchOf"] = _renumbered(path, renumber, msg.meta["branchOf"])
        if "parked" in msg.meta:
            msg.meta["parked"]["at"] = _renumbered(path, renumber, msg.meta["parked"]["at"])
        rows.append(msg)
    return rows


def _is_seq(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SEQ


def _tag(path: Path, index: int, tag: Any) -> dict[str, Any]:
    where = f"parked[{index}].parked"
    if not isinstance(tag, dict):
        raise ArchiveError(path, f"{where}: must be an object")
    at, n, status = tag.get("at"), tag.get("n"), tag.get("status")
    if not (_is_seq(at) and _is_seq(n)) or status not in _PARKED_STATUSES:
        raise ArchiveError(path, f"{where}: needs at and n (whole numbers) and a status")
    return {"at": at, "n": n, "status": status}


def _renumbered(path: Path, renumber: dict[int, int], seq: Any) -> int:
    if seq not in renumber:
        raise ArchiveError(path, f"a branch refers to seq {seq!r}, which is not in the archive")
    return renumber[seq]
