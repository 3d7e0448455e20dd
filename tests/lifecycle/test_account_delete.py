"""Deleting an account and all it owns, on every SQL backend, looked for afterwards in every
table, every Redis key of the test's prefix and every archive file: nothing of it is left,
while another account's data (found by the same scan) stays whole. An interrupted deletion
finishes when run again. Deleting one conversation leaves nothing of it either."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
import sqlalchemy as sa

from lumina_app.domain import OPERATOR, AuditEvent, Role
from tests.api.helpers import client_for, error_of
from tests.lifecycle.conftest import PASSWORD, account_with_everything, login
from tests.lifecycle.scan import scan_files, scan_redis, scan_sql


def everywhere(services, needles: list[str], *, audit_names: set[str] = frozenset()) -> list[str]:
    """Every place a needle is found. The audit log is kept (a security record, no
    content): its entries may name the account and its keys' prefixes."""
    settings = services.settings
    return [
        *scan_sql(settings.database_url, needles, skip={"lumina_audit": set(audit_names)}),
        *scan_redis(settings.redis_prefix, needles),
        *scan_files(settings.data_dir / "agents", needles),
    ]


async def cannot_sign_in(services, name: str) -> None:
    async with client_for(services, "127.0.0.1") as browser:
        body = {"username": name, "password": PASSWORD}
        error_of(await browser.post("/api/v1/auth/login", json=body), 401)


def counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        names = (
            "lumina_message_vector",
            "lumina_run",
            "lumina_memory",
            "lumina_idempotency",
            "lumina_file",
            "lumina_file_blob",
            "lumina_file_chunk",
        )
        found = {n: conn.execute(sa.text(f"SELECT COUNT(*) FROM {n}")).scalar() for n in names}
    engine.dispose()
    return found


async def test_an_account_is_deleted_with_everything_it_owns(site) -> None:
    services, _admin = site
    zoe = await account_with_everything(services, "zoe-del")
    yan = await account_with_everything(services, "yan-kept", conversations=1)
    before = counts(services.settings.database_url)
    assert all(before.values()), before  # vectors, runs, memories, idempotency, files: there
    assert everywhere(services, zoe.needles)  # the scan sees it all before
    async with client_for(services, "127.0.0.1") as browser:
        await login(browser, "zoe-del")
        error_of(
            await browser.post(
                "/api/v1/account/delete", json={"password": PASSWORD, "confirm": "zoe"}
            ),
            422,
        )
        error_of(
            await browser.post(
                "/api/v1/account/delete", json={"password": "wrong pass", "confirm": "zoe-del"}
            ),
            422,
        )
        resp = await browser.post(
            "/api/v1/account/delete", json={"password": PASSWORD, "confirm": "zoe-del"}
        )
        assert resp.status_code == 200, resp.text
        assert resp.json() == {"username": "zoe-del", "conversations": 3, "messages": 12,
                               "runs": 6, "memories": 1, "sessions": 2, "keys": 1}  # fmt: skip
        error_of(await browser.get("/api/v1/me"), 401)
    left = everywhere(services, zoe.needles, audit_names={"zoe-del", zoe.key_prefix})
    assert left == []  # her file's name, bytes and owner too
    after = counts(services.settings.database_url)
    for table in ("lumina_file", "lumina_file_blob", "lumina_file_chunk"):
        assert after[table] == before[table] - 1 == 1, (table, before, after)  # yan's stays
    kept = everywhere(services, yan.needles)
    assert any(k.startswith("lumina_message:") for k in kept), kept
    assert any(k.startswith("redis ") for k in kept) and any(k.startswith("file ") for k in kept)
    await cannot_sign_in(services, "zoe-del")
    entries = await services.users.audit_entries(OPERATOR, username="zoe-del")
    deleted = [e for e in entries if e.event is AuditEvent.USER_DELETED]
    assert len(deleted) == 1 and deleted[0].actor == "zoe-del"
    assert deleted[0].detail.startswith("3 conversation(s), 12 message(s), 6 run(s)")
    assert deleted[0].detail.endswith(", 1 file(s)")
    assert not any(text in e.detail for e in entries for text in zoe.texts)


async def test_an_admin_deletes_an_account_over_the_api(site) -> None:
    services, admin = site
    held = await account_with_everything(services, "xena-del", conversations=1)
    await login(admin, "root")
    resp = await admin.post("/api/v1/admin/users/xena-del/delete", json={})
    assert resp.status_code == 200, resp.text
    assert resp.json()["conversations"] == 1
    assert everywhere(services, held.needles, audit_names={"xena-del", held.key_prefix}) == []
    error_of(await admin.post("/api/v1/admin/users/xena-del/delete", json={}), 404)
    error_of(await admin.post("/api/v1/admin/users/root/delete", json={}), 422)  # not oneself
    async with client_for(services, "127.0.0.1") as member:
        await services.users.create(OPERATOR, "wes", role=Role.MEMBER, password=PASSWORD)
        await login(member, "wes")
        error_of(await member.post("/api/v1/admin/users/root/delete", json={}), 404)


async def test_an_interrupted_deletion_finishes_when_run_again(site) -> None:
    services, _admin = site
    held = await account_with_everything(services, "vic-del", conversations=3)
    deletion = services.deletion
    deletion.purge.batch = 1
    calls = []

    async def crash(batch) -> None:
        calls.append(batch)
        raise RuntimeError("killed mid-delete")

    deletion.purge.after_batch = crash
    with pytest.raises(RuntimeError):
        await deletion.delete_user(OPERATOR, "vic-del")
    assert len(calls) == 1
    assert [u.username for u in await services.users.users.deleting()] == ["vic-del"]
    await cannot_sign_in(services, "vic-del")  # shut out already
    assert everywhere(services, held.conversations)  # two conversations still there
    deletion.purge.after_batch = None
    finished = await deletion.finish_pending()  # what start-up and ``sweep`` run
    assert [r.username for r in finished] == ["vic-del"]
    assert finished[0].conversations.conversations == 2
    assert everywhere(services, held.needles, audit_names={"vic-del", held.key_prefix}) == []
    assert await services.users.users.deleting() == []


async def test_a_deleted_conversation_leaves_nothing_anywhere(site) -> None:
    services, _admin = site
    held = await account_with_everything(services, "uma-one", conversations=2)
    gone, kept = held.conversations
    async with client_for(services, "127.0.0.1") as browser:
        await login(browser, "uma-one")
        resp = await browser.delete(f"/api/agent/demo/conversations/{gone}")
        assert resp.status_code in (200, 204), resp.text
    gone_needles = [gone, held.runs[0], held.runs[1], held.texts[0], held.texts[1]]
    assert everywhere(services, gone_needles) == []
    assert everywhere(services, [kept, held.texts[2]])  # the other one is whole


async def test_the_cli_deletes_an_account(api_factory, sqlite_database) -> None:
    services, _client = await api_factory(archive_mirror=True)
    held = await account_with_everything(services, "tom-cli", conversations=1)
    settings = services.settings
    env = {
        **os.environ,
        "LUMINA_DATABASE_URL": settings.database_url,
        "LUMINA_DATA_DIR": str(settings.data_dir),
        "LUMINA_REDIS_URL": settings.redis_url or "",
        "LUMINA_REDIS_PREFIX": settings.redis_prefix,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lumina_app", "users", "delete", "tom-cli", "--yes",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out = (await proc.communicate())[0].decode()
    assert proc.returncode == 0, out
    assert "Deleted tom-cli: 1 conversation(s), 4 message(s), 2 run(s)" in out
    assert everywhere(services, held.needles, audit_names={"tom-cli", held.key_prefix}) == []
    entries = await services.users.audit_entries(OPERATOR, username="tom-cli")
    assert [e.actor for e in entries if e.event is AuditEvent.USER_DELETED] == ["operator"]
