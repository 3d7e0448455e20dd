"""Exporting everything an account has (one streamed zip) and retention, on every SQL
backend: the zip holds exactly the caller's conversations, messages and memories, in the
archive layout with a Markdown transcript each, and no password hash or key; retention
deletes an old conversation (every part) and keeps a recent one, and an agent's own
``retentionDays`` wins over LUMINA_RETENTION_DAYS."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import timedelta

import sqlalchemy as sa

from lumina_app.domain import utcnow
from tests.api.helpers import client_for, messages, say
from tests.conftest import write_agent
from tests.lifecycle.conftest import PASSWORD, account_with_everything, login
from tests.lifecycle.scan import scan_files, scan_redis, scan_sql


async def test_the_export_holds_everything_of_the_caller_and_no_secret(site) -> None:
    services, _admin = site
    mine = await account_with_everything(services, "ann-exp", conversations=3)
    other = await account_with_everything(services, "ben-exp", conversations=1)
    async with client_for(services, "127.0.0.1") as browser:
        await login(browser, "ann-exp")
        resp = await browser.get("/api/v1/account/export")
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-type"] == "application/zip"
        assert "attachment" in resp.headers["content-disposition"]
        expected = {c: await messages(browser, c) for c in mine.conversations}
    archive = zipfile.ZipFile(io.BytesIO(resp.content))
    assert archive.testzip() is None
    names = archive.namelist()
    for conversation, stored in expected.items():
        base = f"agents/demo/conversations/{conversation}"
        history = json.loads(archive.read(f"{base}/history.json"))
        assert [(h["role"].upper(), h["content"]) for h in history] == [
            (m["role"], m["content"]) for m in stored
        ]
        meta = json.loads(archive.read(f"{base}/meta.json"))
        assert meta["conversationId"] == conversation
        markdown = archive.read(f"markdown/demo/{conversation}.md").decode()
        assert all(m["content"] in markdown for m in stored)
    assert len([n for n in names if n.endswith("/meta.json")]) == 3
    memory_file = json.loads(archive.read("agents/demo/memory/ann-exp.json"))
    assert [m["text"] for m in memory_file["memories"]] == [mine.memory]
    account = json.loads(archive.read("account.json"))
    assert account["username"] == "ann-exp" and account["contents"] == {
        "conversations": 3,
        "messages": 12,
        "memories": 1,
        "files": 1,
    }
    assert [(k["name"], k["prefix"]) for k in account["apiKeys"]] == [
        ("ann-exp-laptop", mine.key_prefix)
    ]
    everything = b"".join(archive.read(n) for n in names).decode()
    assert not any(n in everything for n in other.needles)  # nobody else's
    engine = sa.create_engine(services.settings.database_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        hashes = conn.execute(sa.text("SELECT password_hash FROM lumina_user")).scalars().all()
        key_hashes = conn.execute(sa.text("SELECT key_hash FROM lumina_api_key")).scalars().all()
    engine.dispose()
    assert not any(h in everything for h in [*hashes, *key_hashes])
    assert PASSWORD not in everything and "password" not in account
    # what the export wrote is an archive the import reads back
    assert all(not n.startswith("/") and ".." not in n for n in names)


async def test_retention_deletes_what_is_old_and_keeps_the_rest(api_factory, database) -> None:
    services, client = await api_factory(database_url=database.url, retention_days=30)
    agents = services.settings.data_dir / "agents"
    write_agent(agents, "forever", {"name": "Forever", "retentionDays": 0})
    write_agent(agents, "brief", {"name": "Brief", "retentionDays": 2})
    made = {}
    for name, agent in (("old", "demo"), ("recent", "demo"), ("kept", "forever"),
                        ("brief-old", "brief"), ("brief-new", "brief")):  # fmt: skip
        done = await say(client, f"{name}-text-{agent}", agent=agent)
        made[name] = done["conversationId"]
    ages = {"old": 40, "recent": 10, "kept": 400, "brief-old": 3, "brief-new": 1}
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        for name, days in ages.items():
            conn.execute(
                sa.text("UPDATE lumina_conversation SET updated_at = :at WHERE uuid = :uuid"),
                {"at": utcnow() - timedelta(days=days), "uuid": made[name]},
            )
    engine.dispose()
    assert await services.retention.sweep() == 2
    gone = [made["old"], made["brief-old"], "old-text-demo", "brief-old-text-brief"]
    settings = services.settings
    assert scan_sql(settings.database_url, gone) == []
    assert scan_redis(settings.redis_prefix, gone) == []
    assert scan_files(settings.data_dir / "agents", gone) == []
    for name in ("recent", "kept", "brief-new"):
        resp = await client.get(f"/api/v1/conversations/{made[name]}/messages")
        assert resp.status_code == 200 and len(resp.json()["items"]) == 2
    assert await services.retention.sweep() == 0


async def test_retention_is_off_by_default(api_factory, sqlite_database) -> None:
    services, client = await api_factory()
    done = await say(client, "kept forever", agent="demo")
    engine = sa.create_engine(sqlite_database.url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE lumina_conversation SET updated_at = '2001-01-01'"))
    engine.dispose()
    assert services.settings.retention_days == 0
    assert await services.retention.sweep() == 0
    resp = await client.get(f"/api/v1/conversations/{done['conversationId']}/messages")
    assert resp.status_code == 200
