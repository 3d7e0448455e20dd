"""Writing archive folders so a reader never sees half of anything.

A conversation folder that does not exist yet is built under a hidden staging name beside
its final place and renamed into place in one step (one rename instead of one per file:
an export of thousands of turns stays fast). In a folder that exists, each changed file
goes to a temporary file in its own directory and is renamed over the old one; files
whose bytes are unchanged are left alone. Nothing is fsynced: the archive is a copy of
SQL and can always be written again.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path, PurePosixPath

from lumina_app.archive.attachments import AttachedFile
from lumina_app.archive.format import (
    HISTORY,
    META,
    TMP_PREFIX,
    TURN_LOG,
    ArchiveError,
    conversation_dir,
    conversation_files,
    conversation_relpath,
)
from lumina_app.domain import ConversationInfo, Msg, Summary

_WRITERS = 4
_PARALLEL_FROM = 32


def write_conversation(
    root: Path,
    conv: ConversationInfo,
    msgs: Sequence[Msg],
    *,
    turns: Collection[str] | None = None,
    summaries: Sequence[Summary] = (),
    parked: Sequence[Msg] = (),
    attached: Mapping[str, tuple[AttachedFile, bytes]] | None = None,
) -> Path:
    """Write one conversation's folder under ``root``; returns the folder.

    ``turns`` limits which messages.log files are (re)written when the folder exists;
    a new folder always gets every turn's log. ``attached``: the messages' files (by id,
    with their bytes), written beside their turn.
    """
    folder = conversation_dir(root, conv.agent_id, conv.uuid)
    base = conversation_relpath(conv.agent_id, conv.uuid)
    render = partial(
        conversation_files, conv, msgs, summaries=summaries, parked=parked, attached=attached
    )
    if not folder.is_dir():
        inside = {rel.relative_to(base): data for rel, data in render().items()}
        if _write_new_folder(folder, inside):
            return folder
    write_files(root, render(turns=turns))
    _drop_empty_turns(folder, set(turns or ()) - {m.turn_id for m in msgs})
    return folder


def _drop_empty_turns(folder: Path, turns: Collection[str]) -> None:
    """The logs of turns whose every message was deleted (the item delete)."""
    for turn_id in turns:
        log_file = folder / turn_id / TURN_LOG
        log_file.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # not empty (a stray file): left
            log_file.parent.rmdir()


def write_files(root: Path, files: dict[PurePosixPath, bytes]) -> None:
    """Write rendered files under ``root``, each atomically, skipping unchanged ones;
    turn logs first and meta.json last, so a current meta.json means a complete folder."""
    made: set[Path] = set()
    for rel in sorted(files, key=_write_order):
        path = root / rel
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        if not _unchanged(path, files[rel]):
            write_atomic(path, files[rel])


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}-{secrets.token_hex(4)}")
    try:
        _write_new(tmp, data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def remove_conversation(root: Path, agent_id: str, conversation_uuid: str) -> bool:
    """Delete a conversation's folder; False when there was none."""
    try:
        folder = conversation_dir(root, agent_id, conversation_uuid)
    except ArchiveError:
        return False
    if not folder.is_dir():
        return False
    # Renamed away first, so no reader sees a half-deleted folder under its real name.
    trash = folder.with_name(f"{TMP_PREFIX}{folder.name}-{secrets.token_hex(4)}")
    folder.rename(trash)
    shutil.rmtree(trash)
    return True


def _write_new_folder(folder: Path, files: dict[PurePosixPath, bytes]) -> bool:
    """Build the folder under a staging name, then rename it into place. False if the
    folder appeared meanwhile (the caller then writes file by file)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    stage = folder.with_name(f"{TMP_PREFIX}{folder.name}-{secrets.token_hex(4)}")
    stage.mkdir()
    try:
        logs = [rel for rel in files if rel.name == TURN_LOG]

        def write_log(rel: PurePosixPath) -> None:
            (stage / rel).parent.mkdir()
            _write_new(stage / rel, files[rel])

        # File creation is syscall-bound; a few threads overlap it (one folder per turn).
        if len(logs) > _PARALLEL_FROM:
            with ThreadPoolExecutor(_WRITERS, thread_name_prefix="archive-write") as pool:
                list(pool.map(write_log, logs))
        else:
            for rel in logs:
                write_log(rel)
        for rel in sorted(set(files) - set(logs), key=_write_order):
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)  # <turn>/files/
            _write_new(stage / rel, files[rel])
        try:
            stage.rename(folder)
        except OSError:
            if folder.is_dir():  # another writer won the race
                return False
            raise
        return True
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist) with the usual permissions (umask applies)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _unchanged(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except FileNotFoundError:
        return False


def _write_order(rel: PurePosixPath) -> tuple[int, str]:
    return ({TURN_LOG: 0, HISTORY: 1, META: 2}.get(rel.name, 1), str(rel))
