"""Deleting an account deletes its files, the ones its messages carry (with their links)
and the ones it uploaded and never sent; another account's sent files stay. On every SQL
backend, through HTTP."""

from __future__ import annotations

import sqlalchemy as sa

from lumina_app.domain import OPERATOR, AuditEvent, Role
from tests.api.helpers import client_for
from tests.api.test_files import png
from tests.lifecycle.conftest import PASSWORD, login


def rows(url: str, owner: str) -> dict[str, int]:
    """The owner's file rows and blobs, and the links to the owner's files."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        found = {
            "files": conn.execute(
                sa.text("SELECT COUNT(*) FROM lumina_file WHERE owner = :o"), {"o": owner}
            ).scalar(),
            "blobs": conn.execute(
                sa.text("SELECT COUNT(*) FROM lumina_file_blob WHERE owner = :o"), {"o": owner}
            ).scalar(),
            "links": conn.execute(
                sa.text(
                    "SELECT COUNT(*) FROM lumina_message_file l JOIN lumina_file f"
                    " ON f.id = l.file_pk WHERE f.owner = :o"
                ),
                {"o": owner},
            ).scalar(),
        }
    engine.dispose()
    return found


async def sends_and_keeps_files(services, name: str) -> None:
    """``name`` uploads three files, sends two of them in a conversation, keeps one."""
    await services.users.create(OPERATOR, name, role=Role.MEMBER, password=PASSWORD)
    async with client_for(services, "127.0.0.1") as client:
        await login(client, name)
        ids = []
        for n, data in enumerate((png(), b"notes\n", b"kept\n")):
            upload = {"file": (f"{name}-{n}.bin", data, "application/octet-stream")}
            resp = await client.post(
                "/api/v1/files", files=upload, headers={"X-Requested-With": "fetch"}
            )
            assert resp.status_code == 201, resp.text
            ids.append(resp.json()["id"])
        body = {"task": "look", "files": ids[:2]}
        resp = await client.post(
            "/api/v1/agents/demo/execute/sync", json=body, headers={"X-Requested-With": "fetch"}
        )
        assert resp.status_code == 200, resp.text


async def test_account_deletion_removes_sent_and_unsent_files(site) -> None:
    services, _admin = site
    url = services.settings.database_url
    await sends_and_keeps_files(services, "zed-files")
    await sends_and_keeps_files(services, "amy-files")
    assert rows(url, "zed-files") == {"files": 3, "blobs": 3, "links": 2}
    async with client_for(services, "127.0.0.1") as browser:
        await login(browser, "zed-files")
        resp = await browser.post(
            "/api/v1/account/delete",
            json={"password": PASSWORD, "confirm": "zed-files"},
            headers={"X-Requested-With": "fetch"},
        )
        assert resp.status_code == 200, resp.text
    assert rows(url, "zed-files") == {"files": 0, "blobs": 0, "links": 0}
    entries = await services.users.audit_entries(OPERATOR, username="zed-files")
    deleted = [e for e in entries if e.event is AuditEvent.USER_DELETED]
    assert deleted[0].detail.endswith(", 3 file(s)")  # the sent ones counted too
    assert rows(url, "amy-files") == {"files": 3, "blobs": 3, "links": 2}
