"""Uploaded files (#48, part 1) through ``/api/v1/files``, on every database: the type
sniffed from the bytes, downloads byte-identical with headers a browser neither sniffs nor
runs, the same bytes stored once per owner, another owner's id a 404, hostile uploads a
clean 4xx with nothing stored, the size limits and the per-owner quota, and two instances
over one database serving each other's files."""

from __future__ import annotations

import hashlib
import struct
import unicodedata
import zlib
from urllib.parse import quote

import httpx
import pytest
import sqlalchemy as sa

from lumina_app.api import create_api
from lumina_app.composition import install
from tests.api.helpers import bearer, error_of
from tests.pdf_bytes import pdf_of

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
TABLES = ("lumina_file", "lumina_file_blob", "lumina_file_chunk")


def png(width: int = 2, height: int = 1) -> bytes:
    """A real PNG (grey pixels), built by hand."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\0" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def pdf() -> bytes:
    """A minimal valid PDF: one empty page, with its cross-reference table."""
    return pdf_of(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        ]
    )


ZIP = b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 4


def counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        found = {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar() for t in TABLES}
    engine.dispose()
    return found


NOTHING = dict.fromkeys(TABLES, 0)


@pytest.fixture
async def opened(api_factory, database):
    return await api_factory(database_url=database.url, api_keys=KEYS)


@pytest.fixture
def api(opened):
    return opened[1]


async def upload(api, name: str, data: bytes, headers=ALICE) -> httpx.Response:
    """A multipart body written by hand: the name's characters as given (httpx would
    percent-encode quotes and control characters, as browsers do)."""
    part = (
        b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="'
        + name.encode()
        + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
        + data
        + b"\r\n--xyz--\r\n"
    )
    content_type = {"Content-Type": "multipart/form-data; boundary=xyz"}
    return await api.post("/api/v1/files", content=part, headers={**headers, **content_type})


async def uploaded(api, name: str, data: bytes, headers=ALICE) -> dict:
    resp = await upload(api, name, data, headers)
    assert resp.status_code == 201, resp.text
    return resp.json()


CASES = [
    ("pixel.png", png(), "image/png", "image/png"),
    ("notes.txt", "Grüße, a log line\n".encode(), "text/plain", "text/plain; charset=utf-8"),
    ("spec.pdf", pdf(), "application/pdf", "application/pdf"),
    ("readme.md", b"# Title\n\n*Markdown*.\n", "text/markdown", "text/markdown; charset=utf-8"),
    ("table.csv", b"a,b\n1,2\n", "text/csv", "text/csv; charset=utf-8"),
    ("data.json", b'{"a": 1}', "application/json", "application/json; charset=utf-8"),
    # the name says PNG, the bytes are text: text it is
    ("fake.png", b"just text\n", "text/plain", "text/plain; charset=utf-8"),
]


@pytest.mark.parametrize(("name", "data", "kind", "content_type"), CASES)
async def test_an_upload_is_sniffed_and_downloads_byte_identical(
    api, name, data, kind, content_type
) -> None:
    body = await uploaded(api, name, data)
    assert body["id"].startswith("file-") and len(body["id"]) == 29
    assert (body["name"], body["type"], body["size"]) == (name, kind, len(data))
    assert body["sha256"] == hashlib.sha256(data).hexdigest() and body["createdAt"]
    resp = await api.get(f"/api/v1/files/{body['id']}", headers=ALICE)
    assert resp.status_code == 200 and resp.content == data
    h = resp.headers
    assert h["content-type"] == content_type
    assert h["content-length"] == str(len(data))
    assert h["x-content-type-options"] == "nosniff"
    assert h["content-disposition"] == f"attachment; filename=\"{name}\"; filename*=UTF-8''{name}"
    assert h["content-security-policy"] == "default-src 'none'; sandbox"
    assert h["cache-control"] == "private"
    inline = await api.get(f"/api/v1/files/{body['id']}", params={"inline": 1}, headers=ALICE)
    shown = inline.headers["content-disposition"].split(";")[0]
    assert shown == ("inline" if kind == "image/png" else "attachment")  # never text or PDF


async def test_same_bytes_twice_are_one_blob_kept_while_a_file_uses_it(api, database) -> None:
    data = b"the same log, twice\n" * 100
    first = await uploaded(api, "first.log", data)
    second = await uploaded(api, "second.log", data)
    assert first["id"] != second["id"] and first["sha256"] == second["sha256"]
    assert counts(database.url) == {"lumina_file": 2, "lumina_file_blob": 1, "lumina_file_chunk": 1}
    page = (await api.get("/api/v1/files", params={"limit": 1}, headers=ALICE)).json()
    assert [f["id"] for f in page["items"]] == [second["id"]]  # newest first
    rest = await api.get("/api/v1/files", params={"after": page["nextCursor"]}, headers=ALICE)
    assert [f["name"] for f in rest.json()["items"]] == ["first.log"]
    assert rest.json()["nextCursor"] is None
    assert (await api.delete(f"/api/v1/files/{first['id']}", headers=ALICE)).status_code == 204
    assert counts(database.url) == {"lumina_file": 1, "lumina_file_blob": 1, "lumina_file_chunk": 1}
    error_of(await api.get(f"/api/v1/files/{first['id']}", headers=ALICE), 404)
    assert (await api.get(f"/api/v1/files/{second['id']}", headers=ALICE)).content == data
    assert (await api.delete(f"/api/v1/files/{second['id']}", headers=ALICE)).status_code == 204
    assert counts(database.url) == NOTHING
    error_of(await api.delete(f"/api/v1/files/{second['id']}", headers=ALICE), 404)
    error_of(await api.get("/api/v1/files", params={"after": "nope"}, headers=ALICE), 422)


async def test_a_large_file_is_stored_in_chunks_and_read_back_whole(api, database) -> None:
    data = ("".join(f"line {i}: ünïcode across chunk edges\n" for i in range(40_000))).encode()
    assert len(data) > 2 * 512 * 1024
    body = await uploaded(api, "big.txt", data)
    assert counts(database.url)["lumina_file_chunk"] == -(-len(data) // (512 * 1024))
    resp = await api.get(f"/api/v1/files/{body['id']}", headers=ALICE)
    assert resp.content == data and resp.headers["content-type"].startswith("text/plain")


async def test_another_owners_file_is_a_404_everywhere(api) -> None:
    mine = await uploaded(api, "mine.txt", b"alice's\n")
    for method in ("GET", "DELETE"):
        error_of(await api.request(method, f"/api/v1/files/{mine['id']}", headers=BOB), 404)
        for wrong in ("file-" + "0" * 24, "nope", mine["id"].upper(), mine["id"] + "0"):
            error_of(await api.request(method, f"/api/v1/files/{wrong}", headers=ALICE), 404)
    assert (await api.get("/api/v1/files", headers=BOB)).json()["items"] == []
    theirs = await uploaded(api, "theirs.txt", b"alice's\n", headers=BOB)  # same bytes
    assert theirs["sha256"] == mine["sha256"]
    assert (await api.get(f"/api/v1/files/{mine['id']}", headers=ALICE)).content == b"alice's\n"


HOSTILE = [
    ("polyglot.png", png() + b"<html><script>alert(1)</script>", 415),
    ("polyglot.pdf", pdf() + b"<svg onload=alert(1)>", 415),
    ("evil.svg", b'<?xml version="1.0"?><svg><script>alert(1)</script></svg>', 415),
    ("page.txt", b"<!DOCTYPE html><title>x</title>", 415),
    ("page.html", b"  <HTML><body>hi</body></HTML>", 415),
    ("archive.zip", ZIP, 415),
    ("tool", b"\x7fELF\x02\x01\x01" + b"\0" * 64, 415),
    ("nul.txt", b"text with a NUL\0 byte", 415),
    ("latin1.txt", "café".encode("latin-1"), 415),
    ("../etc/passwd", b"root:x:0:0\n", 422),
    ("..\\boot.ini", b"[boot]\n", 422),
    ("a/b.txt", b"x\n", 422),
    ("\u202e\u200f\x07", b"x\n", 422),  # nothing left of the name
    ("empty.txt", b"", 422),
]


@pytest.mark.parametrize(("name", "data", "status"), HOSTILE, ids=[h[0] for h in HOSTILE])
async def test_a_hostile_upload_is_a_clean_4xx_and_stores_nothing(
    api, database, name, data, status
) -> None:
    error_of(await upload(api, name, data), status)
    assert counts(database.url) == NOTHING


async def test_names_are_cleaned_and_sent_back_safely(api) -> None:
    decomposed = unicodedata.normalize("NFD", "Résumé \u202eexe.txt")
    body = await uploaded(api, "\x1b[31m" + decomposed, b"cv\n")
    assert body["name"] == "[31mRésumé exe.txt"  # NFC; control and bidi characters gone
    long = await uploaded(api, "x" * 300 + ".md", b"# long\n")
    assert long["name"] == "x" * 197 + ".md" and long["type"] == "text/markdown"
    resp = await api.get(f"/api/v1/files/{body['id']}", headers=ALICE)
    assert resp.headers["content-disposition"] == (
        'attachment; filename="[31mR_sum_ exe.txt"; '
        f"filename*=UTF-8''{quote('[31mRésumé exe.txt', safe='')}"
    )
    quoted = await uploaded(api, "say 'hi'; x=1.txt", b"hi\n")
    resp = await api.get(f"/api/v1/files/{quoted['id']}", headers=ALICE)
    assert resp.headers["content-disposition"] == (
        "attachment; filename=\"say 'hi'_ x=1.txt\"; filename*=UTF-8''say%20%27hi%27%3B%20x%3D1.txt"
    )
    # what a browser sends for a name with quotes: percent-encoded, kept as sent
    browser = await api.post(
        "/api/v1/files", files={"file": ('a "b".txt', b"b\n", "text/plain")}, headers=ALICE
    )
    assert browser.json()["name"] == "a %22b%22.txt"


async def test_a_declared_gigabyte_is_refused_before_the_body_is_read(opened, database) -> None:
    services, _api = opened
    app = create_api(services.settings)
    reads: list[str] = []
    sent: list[dict] = []

    async def receive() -> dict:
        reads.append("read")
        return {"type": "http.request", "body": b"x" * 1024, "more_body": True}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/v1/files",
        "raw_path": b"/api/v1/files",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", b"Bearer ka"),
            (b"content-type", b"multipart/form-data; boundary=xyz"),
            (b"content-length", str(10**9).encode()),
        ],
        "client": ("127.0.0.1", 50123),
        "server": ("testserver", 80),
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 413
    assert reads == []  # answered from the head alone
    assert counts(database.url) == NOTHING


async def test_a_streamed_body_over_the_limit_is_cut_off(api_factory, database) -> None:
    _services, api = await api_factory(
        database_url=database.url, api_keys=KEYS, max_file_bytes=64 * 1024
    )
    pieces: list[int] = []
    boundary = b"xyz"

    async def body():
        yield b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n'
        for _ in range(64):  # 4 MiB, without a Content-Length
            pieces.append(1)
            yield b"a" * 64 * 1024
        yield b"\r\n--xyz--\r\n"

    resp = await api.post(
        "/api/v1/files",
        content=body(),
        headers={**ALICE, "Content-Type": f"multipart/form-data; boundary={boundary.decode()}"},
    )
    error_of(resp, 413)
    assert "content-length" not in resp.request.headers
    assert len(pieces) < 64  # cut off as it passed the limit, not read whole
    # under the request's limit but over the file's: refused by the file's own check
    error = error_of(await upload(api, "b.txt", b"b" * (64 * 1024 + 1)), 413)
    assert "LUMINA_MAX_FILE_BYTES" in error["message"]
    assert counts(database.url) == NOTHING


async def test_the_owners_file_quota(api_factory, database) -> None:
    _services, api = await api_factory(
        database_url=database.url, api_keys=KEYS, max_file_bytes_per_owner=2048
    )
    first = b"1" * 1500
    await uploaded(api, "one.txt", first)
    error = error_of(await upload(api, "two.txt", b"2" * 1000), 413)
    assert error["code"] == "quota_exceeded"
    assert "LUMINA_MAX_FILE_BYTES_PER_OWNER" in error["message"]
    await uploaded(api, "again.txt", first)  # bytes it has already cost nothing
    await uploaded(api, "bobs.txt", b"2" * 1000, headers=BOB)  # per owner
    assert counts(database.url) == {"lumina_file": 3, "lumina_file_blob": 2, "lumina_file_chunk": 2}


async def test_two_instances_over_one_database_serve_each_others_files(
    api_factory, database
) -> None:
    one, api_one = await api_factory(database_url=database.url, api_keys=KEYS)
    two, api_two = await api_factory(database_url=database.url, api_keys=KEYS)
    assert one.files is not two.files and one.db is not two.db
    install(one)
    body = await uploaded(api_one, "shared.png", png(3, 2))
    install(two)
    resp = await api_two.get(f"/api/v1/files/{body['id']}", headers=ALICE)
    assert resp.content == png(3, 2)
    assert (await api_two.delete(f"/api/v1/files/{body['id']}", headers=ALICE)).status_code == 204
    install(one)
    error_of(await api_one.get(f"/api/v1/files/{body['id']}", headers=ALICE), 404)
