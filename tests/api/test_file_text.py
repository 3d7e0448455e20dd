"""The text read out of a file at upload (#48; docs/FILES.md), on every database: text
types decoded (UTF-8, UTF-16 behind a byte-order mark), a PDF's text read in a worker, a
PDF bomb, too many pages or too slow a reading refused with a 422 and nothing stored, a
broken PDF stored with its text ``failed``; the text row goes with the file."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.api.helpers import error_of
from tests.api.test_files import ALICE, BOB, KEYS, png, upload, uploaded
from tests.pdf_bytes import bomb_pdf, text_pdf

TABLES = ("lumina_file", "lumina_file_blob", "lumina_file_chunk", "lumina_file_text")
NOTHING = dict.fromkeys(TABLES, 0)


def counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        found = {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar() for t in TABLES}
    engine.dispose()
    return found


@pytest.fixture
async def opened(api_factory, database):
    return await api_factory(database_url=database.url, api_keys=KEYS)


async def text_of(services, owner: str, file_id: str):
    return (await services.files.texts(owner, [file_id])).get(file_id)


WIDE = "UTF-16 text: ünïcödé 漢字\n"
PYTHON = 'def greet(name):\n    """Say hello."""\n    return f"hello {name}"\n'
TEXTS = [
    ("notes.txt", "Grüße from the quokka log\n".encode(), "Grüße from the quokka log\n"),
    ("readme.md", b"# Title\n\n*Markdown* body.\n", "# Title\n\n*Markdown* body.\n"),
    ("table.csv", b"city,pop\nPerth,2000000\n", "city,pop\nPerth,2000000\n"),
    ("data.json", b'{"animal": "quokka"}', '{"animal": "quokka"}'),
    ("greet.py", PYTHON.encode(), PYTHON),
    ("bom8.txt", "\ufeffwith a UTF-8 mark".encode(), "with a UTF-8 mark"),
    ("wide.txt", f"\ufeff{WIDE}".encode("utf-16-le"), WIDE),
    ("big.txt", "\ufeffbig-endian".encode("utf-16-be"), "big-endian"),
    ("w32.txt", "\ufeffUTF-32 too".encode("utf-32-le"), "UTF-32 too"),
]


@pytest.mark.parametrize(("name", "data", "text"), TEXTS, ids=[t[0] for t in TEXTS])
async def test_a_text_upload_keeps_its_text(opened, name, data, text) -> None:
    services, api = opened
    body = await uploaded(api, name, data)
    assert body["text"] == {"status": "ok", "chars": len(text)}
    found = await text_of(services, "alice", body["id"])
    assert (found.status, found.text, found.note) == ("ok", text, None)
    assert await text_of(services, "bob", body["id"]) is None  # the owner's only
    download = await api.get(f"/api/v1/files/{body['id']}", headers=ALICE)
    assert download.content == data


async def test_utf16_html_is_still_refused(opened, database) -> None:
    _services, api = opened
    page = "\ufeff<!DOCTYPE html><script>alert(1)</script>".encode("utf-16-le")
    error_of(await upload(api, "page.txt", page), 415)
    error_of(await upload(api, "odd.txt", b"\xff\xfe" + "nul\0".encode("utf-16-le")), 415)
    assert counts(database.url) == NOTHING


async def test_broken_utf16_is_kept_with_a_note_and_long_text_is_cut(api_factory, database) -> None:
    services, api = await api_factory(
        database_url=database.url, api_keys=KEYS, max_file_text_chars=1000
    )
    lone = b"\xff\xfe" + "ok ".encode("utf-16-le") + b"\x00\xd8" + "then".encode("utf-16-le")
    body = await uploaded(api, "lone.txt", lone)
    found = await text_of(services, "alice", body["id"])
    assert found.text == "ok \ufffdthen" and "lossy" in found.note
    body = await uploaded(api, "long.txt", b"word " * 500)
    assert body["text"] == {"status": "ok", "chars": 1000}
    found = await text_of(services, "alice", body["id"])
    assert found.text == ("word " * 200) and "cut at 1000" in found.note
    body = await uploaded(api, "blank.txt", b"  \n\t\n")
    assert body["text"]["status"] == "empty"


async def test_an_image_has_no_text(opened, database) -> None:
    services, api = opened
    body = await uploaded(api, "pixel.png", png())
    assert "text" not in body
    assert await text_of(services, "alice", body["id"]) is None
    assert counts(database.url)["lumina_file_text"] == 0


async def test_a_pdfs_text_is_read(opened, database) -> None:
    services, api = opened
    data = text_pdf("The quarterly (draft) spec", "Second page: wombat budget")
    body = await uploaded(api, "spec.pdf", data)
    assert body["type"] == "application/pdf"
    assert body["text"]["status"] == "ok" and body["text"]["pages"] == 2
    found = await text_of(services, "alice", body["id"])
    assert "The quarterly (draft) spec" in found.text and "wombat budget" in found.text
    # the same bytes again: one blob, one text, read once
    again = await uploaded(api, "copy.pdf", data)
    assert again["text"] == body["text"]
    assert counts(database.url)["lumina_file_text"] == 1
    assert (await text_of(services, "alice", again["id"])).text == found.text


async def test_a_pdf_bomb_is_refused_and_nothing_is_stored(opened, database) -> None:
    _services, api = opened
    bomb = bomb_pdf(200 * 1024 * 1024)  # some 200 KiB that inflate to 200 MiB
    assert len(bomb) < 1024 * 1024
    error = error_of(await upload(api, "bomb.pdf", bomb), 422)
    assert error["code"] == "file_refused" and "limit" in error["message"]
    assert counts(database.url) == NOTHING
    assert (await api.get("/api/v1/files", headers=ALICE)).json()["items"] == []


async def test_pdf_limits_refuse_and_store_nothing(api_factory, database) -> None:
    _s, api = await api_factory(database_url=database.url, api_keys=KEYS, pdf_max_pages=2)
    error = error_of(await upload(api, "long.pdf", text_pdf("a", "b", "c")), 422)
    assert "3 pages, over 2" in error["message"]
    _s, api = await api_factory(database_url=database.url, api_keys=KEYS, pdf_max_chars=1000)
    error = error_of(await upload(api, "wordy.pdf", text_pdf("x" * 600, "y" * 600)), 422)
    assert "1000 characters" in error["message"]
    _s, api = await api_factory(database_url=database.url, api_keys=KEYS, pdf_timeout_seconds=0.01)
    error = error_of(await upload(api, "slow.pdf", text_pdf("a")), 422)
    assert "took over 0.01 s" in error["message"]
    assert counts(database.url) == NOTHING


async def test_the_quota_is_untouched_by_a_refused_pdf(api_factory, database) -> None:
    _services, api = await api_factory(
        database_url=database.url, api_keys=KEYS, max_file_bytes_per_owner=600 * 1024
    )
    error_of(await upload(api, "bomb.pdf", bomb_pdf(200 * 1024 * 1024)), 422)
    assert counts(database.url) == NOTHING
    # the whole quota is still there: a file of all of it fits, one byte more would not
    await uploaded(api, "fits.txt", b"q" * (600 * 1024))
    error_of(await upload(api, "over.txt", b"!"), 413)


async def test_a_broken_pdf_is_stored_with_its_text_failed(opened, database) -> None:
    services, api = opened
    broken = text_pdf("cut short")[:150]
    body = await uploaded(api, "broken.pdf", broken)
    assert body["text"]["status"] == "failed"
    found = await text_of(services, "alice", body["id"])
    assert found.status == "failed" and "could not be read" in found.note
    assert (await api.get(f"/api/v1/files/{body['id']}", headers=ALICE)).content == broken


async def test_the_text_goes_with_its_file(opened, database) -> None:
    services, api = opened
    mine = await uploaded(api, "a.txt", b"shared words\n")
    copy = await uploaded(api, "b.txt", b"shared words\n")
    await uploaded(api, "c.txt", b"shared words\n", headers=BOB)
    assert counts(database.url)["lumina_file_text"] == 2  # one per owner's blob
    assert (await api.delete(f"/api/v1/files/{mine['id']}", headers=ALICE)).status_code == 204
    assert (await text_of(services, "alice", copy["id"])).text == "shared words\n"
    assert (await api.delete(f"/api/v1/files/{copy['id']}", headers=ALICE)).status_code == 204
    assert counts(database.url)["lumina_file_text"] == 1  # the foreign key cascaded
    assert await services.files.delete_owner("bob") == 1
    assert counts(database.url) == NOTHING
