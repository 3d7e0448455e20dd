"""Files (#48) on two real app processes over one MariaDB database (as deploy/cluster.sh
runs them): a file uploaded to one is served, byte for byte, by the other, and deleted
there for both; a request declaring a gigabyte gets its 413 while the client has sent only
its head and a few bytes, over a real socket."""

from __future__ import annotations

import os
import socket

import httpx
import pytest

from tests.faults.realserver import two_instances

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path, _databases):
    database = _databases("mariadb")
    database.truncate()
    with two_instances(tmp_path, database.url) as servers:
        yield servers


def test_two_instances_serve_each_others_files_and_refuse_a_gigabyte_at_once(cluster) -> None:
    one, two = (httpx.Client(base_url=s.url, timeout=30) for s in cluster)
    text = b"line of text, shared between instances\n" * 40_000  # 1.6 MB, four chunks
    made = one.post("/api/v1/files", files={"file": ("shared.txt", text, "text/plain")})
    assert made.status_code == 201, made.text
    file_id = made.json()["id"]
    got = two.get(f"/api/v1/files/{file_id}")
    assert got.status_code == 200 and got.content == text
    assert got.headers["content-length"] == str(len(text))
    assert two.delete(f"/api/v1/files/{file_id}").status_code == 204
    assert one.get(f"/api/v1/files/{file_id}").status_code == 404
    binary = b"\0" + os.urandom(4096)  # a NUL: no text, no magic
    refused = one.post("/api/v1/files", files={"file": ("random.bin", binary, "x/y")})
    assert refused.status_code == 415  # random bytes are no accepted type

    with socket.create_connection(("127.0.0.1", cluster[0].port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/v1/files HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: multipart/form-data; boundary=xyz\r\n"
            b"Content-Length: 1000000000\r\n\r\n--xyz\r\n"
        )
        answer = sock.recv(65536)  # nothing more is sent: the answer comes from the head
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"connection: close" in answer.lower()
    assert one.get("/api/v1/files").json()["items"] == []
