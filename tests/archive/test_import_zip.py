"""Zip members an import refuses one by one: the conversation they belong to is skipped and
reported once, by the member's place in the zip; the rest of the zip goes in."""

from __future__ import annotations

import dataclasses
import json
import zipfile
from pathlib import Path

import pytest

from lumina_app.archive.limits import DEFAULT_LIMITS
from lumina_app.domain import ImportOutcome

BASE = "agents/demo/conversations"
HISTORY = json.dumps([{"role": "user", "content": "q", "timestamp": "2026-03-23T10:00:00Z"}])


def _zip(path: Path, members: list[tuple[str | zipfile.ZipInfo, str]], **kwargs: object) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, **kwargs) as zipped:
        for name, text in members:
            zipped.writestr(name, text)
    return path


async def _import(archive, path: Path, **limits: int):
    return await archive.import_path(path, limits=dataclasses.replace(DEFAULT_LIMITS, **limits))


async def test_only_stored_and_deflated_members_are_inflated(sqlite_archive, tmp_path) -> None:
    """bzip2 and lzma inflate a whole input chunk at once, without a cap on the output."""
    path = tmp_path / "bz.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr(f"{BASE}/conv-bzip2/history.json", HISTORY, zipfile.ZIP_BZIP2)
        zipped.writestr(f"{BASE}/conv-bzip2/meta.json", "{}", zipfile.ZIP_DEFLATED)
        zipped.writestr(f"{BASE}/conv-stored/history.json", HISTORY, zipfile.ZIP_STORED)

    report = await sqlite_archive.import_path(path)

    assert report.errors == [
        f"{path}/{BASE}/conv-bzip2/history.json: uses compression method 12: only stored "
        "and deflated members are read"
    ]
    assert [(i.conversation_uuid, i.outcome) for i in report.items if i.outcome] == [
        ("conv-stored", ImportOutcome.CREATED)
    ]


@pytest.mark.filterwarnings("ignore:Duplicate name")
async def test_a_member_named_twice_is_refused(sqlite_archive, tmp_path: Path) -> None:
    """Two members with one name: which one a tool extracts differs; take neither."""
    name = f"{BASE}/conv-twice/history.json"
    path = tmp_path / "twice.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr(name, HISTORY)
        zipped.writestr(name, HISTORY.replace('"q"', '"other"'))  # zipfile warns, keeps both

    report = await sqlite_archive.import_path(path)

    assert report.errors == [f"{path}/{name}: appears twice: refused"]
    assert [i.outcome for i in report.items] == [None]


async def test_a_refused_member_at_the_root_skips_its_conversation(
    sqlite_archive, tmp_path: Path
) -> None:
    """A zip of one conversation folder's files: the folder is the zip's root."""
    path = _zip(tmp_path / "one.zip", [("history.json", HISTORY * 3), ("meta.json", "{}")])

    report = await _import(sqlite_archive, path, max_file_bytes=len(HISTORY) + 10)

    (error,) = report.errors
    assert error.startswith(f"{path}/history.json: is declared as {len(HISTORY) * 3} bytes")
    assert [i.outcome for i in report.items] == [None]


async def test_an_oversized_directory_entry_refuses_the_zip(sqlite_archive, tmp_path) -> None:
    """A member's directory record over 1 KiB (here, its comment): zipfile would keep it
    in memory for every member, so the zip is refused before it is parsed."""
    info = zipfile.ZipInfo(f"{BASE}/conv-comment/history.json")
    info.comment = b"x" * 2000
    path = _zip(tmp_path / "comment.zip", [(info, HISTORY)])

    (error,) = (await sqlite_archive.import_path(path)).errors

    size = 46 + len(info.filename) + len(info.comment)
    assert error == f"{path}: member 1 has a {size:,}-byte header: refused, nothing imported"
