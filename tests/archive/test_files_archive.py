"""A message's files in the archive (#48), on every database: the export writes them beside
their turn (``<messageId>/files/<name>``) and lists them on the history.json entry; export,
delete, import gives them back byte-identical (sha256 over HTTP downloads) as the
importing owner's, linked to the same messages; a hostile archive (a path climbing out, a
path of another turn, a file over the limit, bytes that are not what the archive says) is
refused and reported, with nothing stored and nothing written outside; the account export
holds every file, attached or not."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from lumina_app.domain import ImportOutcome
from tests.api.conftest import api_factory  # noqa: F401 - fixture
from tests.api.helpers import bearer, messages
from tests.api.test_files import png, uploaded

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
NOTES = "Grüße: the log line the archive keeps\n".encode()


@pytest.fixture
async def opened(api_factory, database):  # noqa: F811
    return await api_factory(database_url=database.url, api_keys=KEYS, max_file_bytes=4096)


async def _turn_with_files(api, files: list[str], task: str = "Look at these") -> dict:
    resp = await api.post(
        "/api/v1/agents/demo/execute/sync", json={"task": task, "files": files}, headers=ALICE
    )
    assert resp.status_code == 200, resp.text
    return resp.json()


async def _sha_of_download(api, file_id: str, headers=ALICE) -> str:
    resp = await api.get(f"/api/v1/files/{file_id}", headers=headers)
    assert resp.status_code == 200, resp.text
    return hashlib.sha256(resp.content).hexdigest()


async def _file_ids(api, headers=ALICE) -> set[str]:
    resp = await api.get("/api/v1/files", params={"limit": 100}, headers=headers)
    assert resp.status_code == 200, resp.text
    return {f["id"] for f in resp.json()["items"]}


async def _exported(api) -> tuple[str, bytes, dict]:
    """A conversation whose question carries a PNG and a text file, exported as a zip."""
    image = await uploaded(api, "pixel.png", png(3, 2))
    notes = await uploaded(api, "notes.txt", NOTES)
    done = await _turn_with_files(api, [image["id"], notes["id"]])
    uuid = done["conversationId"]
    resp = await api.get(
        f"/api/v1/conversations/{uuid}/export", params={"format": "archive"}, headers=ALICE
    )
    assert resp.status_code == 200, resp.text
    return uuid, resp.content, {"image": image, "notes": notes}


def _rezip(data: bytes, change: dict[str, bytes | None]) -> bytes:
    """The zip with members replaced (bytes), removed (None) or added."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            if name not in change:
                target.writestr(name, source.read(name))
        for name, content in change.items():
            if content is not None:
                target.writestr(name, content)
    return out.getvalue()


async def test_export_delete_import_keeps_the_files(opened, tmp_path: Path) -> None:
    services, api = opened
    uuid, data, sent = await _exported(api)
    zipped = zipfile.ZipFile(io.BytesIO(data))
    base = f"agents/demo/conversations/{uuid}"
    history = json.loads(zipped.read(f"{base}/history.json"))
    question = history[0]
    turn = question["messageId"]
    assert question["files"] == [
        {"id": sent["image"]["id"], "name": "pixel.png", "type": "image/png",
         "size": len(png(3, 2)), "sha256": sent["image"]["sha256"],
         "path": f"{turn}/files/pixel.png"},
        {"id": sent["notes"]["id"], "name": "notes.txt", "type": "text/plain",
         "size": len(NOTES), "sha256": sent["notes"]["sha256"], "path": f"{turn}/files/notes.txt"},
    ]  # fmt: skip
    assert zipped.read(f"{base}/{turn}/files/pixel.png") == png(3, 2)
    assert zipped.read(f"{base}/{turn}/files/notes.txt") == NOTES
    assert "files" not in history[1]  # the answer carries none

    deleted = await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)
    assert deleted.status_code == 204
    (tmp_path / "export.zip").write_bytes(data)
    report = await services.archive.import_path(tmp_path / "export.zip", owner="alice")
    assert report.errors == [] and report.count(ImportOutcome.CREATED) == 1

    stored = await messages(api, uuid, headers=ALICE)
    files = stored[0]["files"]
    assert [(f["name"], f["type"], f["size"]) for f in files] == [
        ("pixel.png", "image/png", len(png(3, 2))),
        ("notes.txt", "text/plain", len(NOTES)),
    ]
    assert {f["id"] for f in files}.isdisjoint({sent["image"]["id"], sent["notes"]["id"]})
    assert [await _sha_of_download(api, f["id"]) for f in files] == [
        hashlib.sha256(png(3, 2)).hexdigest(),
        hashlib.sha256(NOTES).hexdigest(),
    ]
    assert "files" not in stored[1]
    for f in files:  # the new files are alice's only
        assert (await api.get(f"/api/v1/files/{f['id']}", headers=BOB)).status_code == 404

    # importing again adds nothing: no message, no file
    before = await _file_ids(api)
    again = await services.archive.import_path(tmp_path / "export.zip", owner="alice")
    assert again.errors == [] and again.count(ImportOutcome.UNCHANGED) == 1
    assert await _file_ids(api) == before

    # and the imported conversation exports its files again, byte-identical
    export = await api.get(
        f"/api/v1/conversations/{uuid}/export", params={"format": "archive"}, headers=ALICE
    )
    again_zip = zipfile.ZipFile(io.BytesIO(export.content))
    assert again_zip.read(f"{base}/{turn}/files/pixel.png") == png(3, 2)


async def test_a_folder_export_writes_the_files_beside_the_turn(opened, tmp_path: Path) -> None:
    services, api = opened
    uuid, _data, _sent = await _exported(api)
    report = await services.archive.export_all(tmp_path / "out", conversation_uuid=uuid)
    assert report.conversations == 1
    folder = tmp_path / "out" / "agents" / "demo" / "conversations" / uuid
    history = json.loads((folder / "history.json").read_text())
    paths = [f["path"] for f in history[0]["files"]]
    assert [(folder / p).read_bytes() for p in paths] == [png(3, 2), NOTES]
    await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)
    imported = await services.archive.import_path(tmp_path / "out", owner="alice")
    assert imported.errors == [] and imported.count(ImportOutcome.CREATED) == 1
    stored = await messages(api, uuid, headers=ALICE)
    assert [f["name"] for f in stored[0]["files"]] == ["pixel.png", "notes.txt"]


def _with_entry(data: bytes, uuid: str, edit) -> bytes:
    base = f"agents/demo/conversations/{uuid}"
    history = json.loads(zipfile.ZipFile(io.BytesIO(data)).read(f"{base}/history.json"))
    extra = edit(history, base) or {}
    return _rezip(data, {f"{base}/history.json": json.dumps(history).encode(), **extra})


def _path(history: list, value: str) -> None:
    history[0]["files"][0]["path"] = value


HOSTILE = {
    "climbs out": (
        lambda h, b: _path(h, "../../../../escaped.png"),
        "'files' [0].path must be",
    ),
    "another turn's folder": (
        lambda h, b: _path(h, "turn-of-nobody/files/pixel.png"),
        "a file of this message's own folder",
    ),
    "an absolute path": (lambda h, b: _path(h, "/etc/passwd"), "'files' [0].path must be"),
    "a hidden name": (lambda h, b: _path(h, f"{h[0]['messageId']}/files/.."), "[0].path"),
    "missing bytes": (
        lambda h, b: {f"{b}/{h[0]['files'][0]['path']}": None},
        "it is missing",
    ),
    "bytes changed": (
        lambda h, b: {f"{b}/{h[0]['files'][1]['path']}": b"other text\n"},
        "the archive says",
    ),
    "over the file limit": (
        lambda h, b: {f"{b}/{h[0]['files'][1]['path']}": b"x" * 5000},
        "LUMINA_MAX_FILE_BYTES",
    ),
    "HTML in a PNG's place": (
        lambda h, b: {f"{b}/{h[0]['files'][0]['path']}": b"<html><script>x</script></html>"},
        "HTML and SVG are not accepted",
    ),
    "not a list": (lambda h, b: h[0].update(files={"path": "x"}), "must be a list"),
    "a bad sha256": (
        lambda h, b: h[0]["files"][0].update(sha256="../x"),
        "sha256 must be 64",
    ),
}


def _names_under(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*"))


@pytest.mark.parametrize("case", list(HOSTILE))
async def test_a_hostile_archive_is_refused_and_reported(opened, tmp_path: Path, case) -> None:
    services, api = opened
    uuid, data, _sent = await _exported(api)
    await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)
    before = await _file_ids(api)
    edit, reason = HOSTILE[case]
    hostile = tmp_path / "in" / "hostile.zip"
    hostile.parent.mkdir()
    hostile.write_bytes(_with_entry(data, uuid, edit))
    report = await services.archive.import_path(hostile, owner="alice")
    assert len(report.errors) == 1 and reason in report.errors[0], report.errors
    assert report.count(ImportOutcome.CREATED) == 0
    gone = await api.get(f"/api/v1/conversations/{uuid}/messages", headers=ALICE)
    assert gone.status_code == 404  # nothing of the conversation stored
    assert await _file_ids(api) == before  # and no file kept
    assert _names_under(hostile.parent) == ["hostile.zip"]  # nothing written beside it
    assert "escaped.png" not in _names_under(tmp_path)


async def test_a_file_over_the_owners_quota_is_refused(api_factory, database, tmp_path) -> None:  # noqa: F811
    services, api = await api_factory(
        database_url=database.url, api_keys=KEYS, max_file_bytes_per_owner=len(NOTES) + 300
    )
    notes = await uploaded(api, "notes.txt", NOTES)
    done = await _turn_with_files(api, [notes["id"]])
    uuid = done["conversationId"]
    export = await api.get(
        f"/api/v1/conversations/{uuid}/export", params={"format": "archive"}, headers=ALICE
    )
    base = f"agents/demo/conversations/{uuid}"
    zipped = zipfile.ZipFile(io.BytesIO(export.content))
    history = json.loads(zipped.read(f"{base}/history.json"))
    bigger = b"y" * 400  # alice's quota has no room for it beside her notes
    history[0]["files"][0]["sha256"] = hashlib.sha256(bigger).hexdigest()
    history[0]["files"][0]["path"] = f"{history[0]['messageId']}/files/big.txt"
    changed = _rezip(
        export.content,
        {f"{base}/history.json": json.dumps(history).encode(),
         f"{base}/{history[0]['messageId']}/files/big.txt": bigger},
    )  # fmt: skip
    (tmp_path / "q.zip").write_bytes(changed)
    await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)
    before = await _file_ids(api)
    report = await services.archive.import_path(tmp_path / "q.zip", owner="alice")
    assert len(report.errors) == 1 and "LUMINA_MAX_FILE_BYTES_PER_OWNER" in report.errors[0]
    assert await _file_ids(api) == before


async def test_the_account_export_holds_every_file(opened) -> None:
    _services, api = opened
    uuid, _data, sent = await _exported(api)
    loose = await uploaded(api, "loose.md", b"# not on any message\n")
    theirs = await uploaded(api, "bobs.txt", b"bob's own\n", headers=BOB)
    resp = await api.get("/api/v1/account/export", headers=ALICE)
    assert resp.status_code == 200, resp.text
    zipped = zipfile.ZipFile(io.BytesIO(resp.content))
    listed = json.loads(zipped.read("files/files.json"))
    by_id = {f["id"]: f for f in listed}
    assert set(by_id) == {sent["image"]["id"], sent["notes"]["id"], loose["id"]}
    for file in listed:
        body = zipped.read(file["path"])
        assert hashlib.sha256(body).hexdigest() == file["sha256"] and len(body) == file["size"]
    assert zipped.read(by_id[loose["id"]]["path"]) == b"# not on any message\n"
    account = json.loads(zipped.read("account.json"))
    assert account["contents"]["files"] == 3
    base = f"agents/demo/conversations/{uuid}"
    history = json.loads(zipped.read(f"{base}/history.json"))
    assert zipped.read(f"{base}/{history[0]['files'][0]['path']}") == png(3, 2)
    assert theirs["id"] not in resp.content.decode("latin-1")


def _hand_made(root: Path, files: dict[str, bytes]) -> Path:
    """A conversation folder in the layout, written by another system: one turn whose
    question lists ``files`` (name → bytes) under ``t1/files/``, no meta.json."""
    folder = root / "agents" / "demo" / "conversations" / "conv-elsewhere"
    (folder / "t1" / "files").mkdir(parents=True)
    listed = []
    for name, data in files.items():
        (folder / "t1" / "files" / name).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        listed.append({"id": "file-x", "name": name, "path": f"t1/files/{name}", "sha256": digest})
    history = [
        {"role": "user", "content": "see", "messageId": "t1", "files": listed,
         "timestamp": "2026-01-01T00:00:00Z"},
        {"role": "assistant", "content": "ok", "messageId": "t1",
         "timestamp": "2026-01-01T00:00:01Z"},
    ]  # fmt: skip
    (folder / "history.json").write_text(json.dumps(history))
    return folder


async def test_a_hand_made_archive_brings_its_files(opened, tmp_path: Path) -> None:
    services, api = opened
    image = png(5, 5)
    _hand_made(tmp_path / "tree", {"a.png": image, "b.txt": b"hello\n"})
    report = await services.archive.import_path(tmp_path / "tree", owner="alice")
    assert report.errors == [] and report.count(ImportOutcome.CREATED) == 1
    listed = (await api.get("/api/v1/files", headers=ALICE)).json()["items"]
    assert sorted((f["name"], f["type"]) for f in listed) == [
        ("a.png", "image/png"),
        ("b.txt", "text/plain"),
    ]
    assert "file-x" not in {f["id"] for f in listed}  # the archive's ids are not used
    again = await services.archive.import_path(tmp_path / "tree", owner="alice")
    assert again.count(ImportOutcome.UNCHANGED) == 1
    assert len((await api.get("/api/v1/files", headers=ALICE)).json()["items"]) == 2
    export = await api.get(
        "/api/v1/conversations/conv-elsewhere/export", params={"format": "archive"}, headers=ALICE
    )
    zipped = zipfile.ZipFile(io.BytesIO(export.content))
    base = "agents/demo/conversations/conv-elsewhere"
    history = json.loads(zipped.read(f"{base}/history.json"))
    assert [f["path"] for f in history[0]["files"]] == ["t1/files/a.png", "t1/files/b.txt"]
    assert zipped.read(f"{base}/t1/files/a.png") == image
    assert (await api.get("/api/v1/files", headers=BOB)).json()["items"] == []


async def test_an_edited_questions_other_branch_keeps_its_files(opened, tmp_path: Path) -> None:
    """The question asked again keeps its files, and so does the branch it parked: the
    export writes the parked question's files beside its own turn and lists them in
    branches.json (the account export as well); the import links both branches' files,
    and deleting the imported conversation deletes them all."""
    services, api = opened
    uuid, _data, sent = await _exported(api)
    edited = await api.post(
        f"/api/v1/conversations/{uuid}/messages/1/edit",
        json={"message": "Look again", "stream": False},
        headers=ALICE,
    )
    assert edited.status_code == 200, edited.text
    base = f"agents/demo/conversations/{uuid}"
    exports = []
    for url in (f"/api/v1/conversations/{uuid}/export?format=archive", "/api/v1/account/export"):
        resp = await api.get(url, headers=ALICE)
        assert resp.status_code == 200, resp.text
        exports.append(zipfile.ZipFile(io.BytesIO(resp.content)))
    for zipped in exports:
        parked = json.loads(zipped.read(f"{base}/branches.json"))["parked"]
        question = next(p for p in parked if p["role"] == "user")
        assert [f["name"] for f in question["files"]] == ["pixel.png", "notes.txt"]
        for listed in question["files"]:
            assert listed["path"].startswith(f"{question['messageId']}/files/")
        assert zipped.read(f"{base}/{question['files'][1]['path']}") == NOTES
    active = json.loads(exports[0].read(f"{base}/history.json"))
    assert active[-2]["content"] == "Look again" and len(active[-2]["files"]) == 2

    assert (await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)).status_code == 204
    assert not {sent["image"]["id"], sent["notes"]["id"]} & await _file_ids(api)
    (tmp_path / "edited.zip").write_bytes(exports[0].fp.getvalue())  # type: ignore[union-attr]
    report = await services.archive.import_path(tmp_path / "edited.zip", owner="alice")
    assert report.errors == [] and report.count(ImportOutcome.CREATED) == 1
    everything = (
        await api.get(
            f"/api/v1/conversations/{uuid}/messages",
            params={"limit": 100, "branches": "all"},
            headers=ALICE,
        )
    ).json()["items"]
    questions = [m for m in everything if m["role"] == "USER"]
    assert [len(m.get("files") or []) for m in questions] == [2, 2]  # both branches
    ids = {f["id"] for m in questions for f in m["files"]}
    assert ids <= await _file_ids(api)
    for file_id in ids:
        assert await _sha_of_download(api, file_id) in {
            hashlib.sha256(png(3, 2)).hexdigest(),
            hashlib.sha256(NOTES).hexdigest(),
        }
    assert (await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)).status_code == 204
    assert not ids & await _file_ids(api)  # every branch's files went with it
