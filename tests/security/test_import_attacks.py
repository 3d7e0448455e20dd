"""Hostile archives against the real ``python -m lumina_app import``, run as an attacker (or
a careless operator) would: a child process over a real database, its exit code, its
output, its peak memory, and what ends up in SQL.

Nothing may reach someone else's conversation, follow a link out of the tree, crash the
importer or exhaust its memory; each bad conversation is reported by file and skipped.
"""

from __future__ import annotations

import json
import stat
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lumina_app.composition import open_services
from lumina_app.settings import load_settings
from tests.archive.conftest import seed_conversation
from tests.conftest import Database
from tests.security.hostile import (
    CONVERSATIONS,
    Member,
    all_stored_text,
    assert_no_crash,
    bomb_member,
    conversation_state,
    deflated,
    good_history,
    hand_made_zip,
    rows,
    run_import,
    stamp,
    stored_ids,
    write_conversation,
)

NOW = datetime.now(UTC)


# -- 1. someone else's conversation ------------------------------------------------------------


async def seed_alice(database: Database, tmp_path: Path) -> tuple[str, dict]:
    """Alice's conversation, made in the app; returns its id and its export."""
    settings = load_settings(
        database_url=database.url, redis_url=None, data_dir=tmp_path / "alice-data"
    )
    services = await open_services(settings, recover=False)
    try:
        conv = await seed_conversation(services.archive, owner="alice", title="alice's plans")
        return conv.uuid, await services.archive.document(conv)
    finally:
        await services.close()


async def test_another_owners_conversation_id_gets_a_new_one_and_hers_is_left_byte_identical(
    database: Database, tmp_path: Path
) -> None:
    alice_id, exported = await seed_alice(database, tmp_path)
    before = conversation_state(database, alice_id)

    # Bob's archive: Alice's id and her messages (so an append would line up), two more
    # messages, another status and a later updatedAt; and one conversation of his own.
    history = [*exported["history"], *good_history("bob was here")]
    for entry in history[-2:]:
        entry["messageId"] = "msg-bob"
    meta = {**exported["meta"], "status": "failed", "updatedAt": stamp(NOW)}
    root = tmp_path / "bob"
    write_conversation(root / CONVERSATIONS / alice_id, meta, history)
    write_conversation(root / CONVERSATIONS / "conv-bob00001")

    run = run_import(database, tmp_path, str(root), "--owner", "bob")

    assert (run.code, run.stderr) == (0, "")
    assert "alice" not in run.stdout  # Bob does not learn whose it is
    assert "2 created, 0 appended, 0 unchanged, 0 failed" in run.stdout
    assert conversation_state(database, alice_id) == before  # hers, untouched
    bobs = rows(database, "SELECT uuid FROM lumina_conversation WHERE owner = 'bob'")
    assert len(bobs) == 2 and (alice_id,) not in bobs  # his copy under an id of its own
    again = run_import(database, tmp_path, str(root), "--owner", "bob")
    assert "0 created, 0 appended, 2 unchanged, 0 failed" in again.stdout  # idempotent


# -- 2. links out of the tree ------------------------------------------------------------------


def test_links_out_of_a_folder_tree_are_refused_and_the_secret_stays_out(
    sqlite_database: Database, tmp_path: Path
) -> None:
    secret = write_conversation(
        tmp_path / "secret",
        {"agentId": "demo", "title": "SECRET-TITLE-7f3a"},
        [{"role": "user", "content": "SECRET-CONTENT-7f3a"}],
    )
    outside = tmp_path / "outside"
    write_conversation(outside / "conversations" / "conv-outside1", history=json.loads(
        (secret / "history.json").read_text(encoding="utf-8")
    ))  # fmt: skip
    tree = tmp_path / "tree"
    convs = tree / CONVERSATIONS
    link_file = write_conversation(convs / "conv-linkfile", history=[])
    (link_file / "history.json").unlink()
    (link_file / "history.json").symlink_to(secret / "history.json")
    (convs / "conv-linkdir").symlink_to(secret, target_is_directory=True)
    turn_link = write_conversation(convs / "conv-turnlink")
    (turn_link / "msg-1").symlink_to(secret, target_is_directory=True)
    (tree / "agents" / "evil").symlink_to(outside, target_is_directory=True)
    (tree / "agents" / "other").mkdir()
    (tree / "agents" / "other" / "conversations").symlink_to(outside / "conversations")
    write_conversation(convs / "conv-good0001")
    given = tmp_path / "given-path"  # the path on the command line may be a link
    given.symlink_to(tree, target_is_directory=True)

    run = run_import(sqlite_database, tmp_path, str(given))

    assert_no_crash(run)
    for link in (
        convs / "conv-linkfile" / "history.json",
        convs / "conv-linkdir",
        convs / "conv-turnlink" / "msg-1",
        tree / "agents" / "evil",
        tree / "agents" / "other" / "conversations",
    ):
        shown = given / link.relative_to(tree)
        assert "is a symbolic link: refused" in run.error_line(f"{shown}: ")
    assert "1 created, 0 appended, 0 unchanged, 5 failed" in run.stdout
    assert stored_ids(sqlite_database) == ["conv-good0001"]
    assert "7f3a" not in all_stored_text(sqlite_database)


def test_a_link_inside_a_zip_is_refused(sqlite_database: Database, tmp_path: Path) -> None:
    secret = write_conversation(
        tmp_path / "secret", history=[{"role": "user", "content": "SECRET-CONTENT-9c1d"}]
    )
    path = tmp_path / "links.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        link = zipfile.ZipInfo(f"{CONVERSATIONS}/conv-ziplink1/history.json")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zipped.writestr(link, str(secret / "history.json"))
        zipped.writestr(f"{CONVERSATIONS}/conv-ziplink1/meta.json", json.dumps({"title": "x"}))
        zipped.writestr(f"{CONVERSATIONS}/conv-zipgood1/history.json", json.dumps(good_history()))
        zipped.writestr("../../escape/history.json", "[]")

    run = run_import(sqlite_database, tmp_path, str(path))

    assert_no_crash(run)
    line = run.error_line(f"{path}/{CONVERSATIONS}/conv-ziplink1/history.json: ")
    assert line.endswith("is a symbolic link: refused (an import follows no links)")
    assert "name leading outside the archive" in run.error_line(f"{path}/../../escape/")
    assert "1 created, 0 appended, 0 unchanged, 2 failed" in run.stdout
    assert stored_ids(sqlite_database) == ["conv-zipgood1"]  # not even conv-ziplink1's meta
    assert "9c1d" not in all_stored_text(sqlite_database)


# -- 3. one bad conversation never stops the others ----------------------------------------


def robustness_tree(root: Path) -> dict[str, tuple[str, str]]:
    """Hostile conversations beside two good ones: {folder: (file at fault, reason)}."""
    meta = {"agentId": "demo", "status": "completed"}
    entry = {"role": "user", "content": "q", "messageId": "msg-1"}
    cases = {
        "conv-int70": ({**meta, "stats": {"toolCallCount": 2**70}}, None, "meta.json",
                       "'stats.toolCallCount' must be a non-negative integer up to 2147483647"),
        "conv-int40": ({**meta, "stats": {"toolCallCount": 2**40}}, None, "meta.json",
                       "'stats.toolCallCount' must be a non-negative integer"),
        "conv-inf": ('{"agentId": "demo", "stats": {"toolCallCount": 1e400}}', None, "meta.json",
                     "got inf"),
        "conv-deep": (None, "[" * 200_000 + "]" * 200_000, "history.json",
                      "invalid JSON: nested too deeply"),
        "conv-deepmeta": ("[" * 200_000 + "]" * 200_000, None, "meta.json",
                          "invalid JSON: nested too deeply"),
        "conv-digits": (None, '[{"role": "user", "content": "x", "n": ' + "9" * 5000 + "}]",
                        "history.json", "invalid JSON: Exceeds the limit (4300 digits)"),
        "conv-surrogate": (None, '[{"role": "user", "content": "a\\ud800b"}]', "history.json",
                           "entry 0: 'content' must not contain lone surrogates"),
        "conv-surrtitle": ('{"agentId": "demo", "title": "\\udfff"}', None, "meta.json",
                           "'title' must not contain lone surrogates"),
        "conv-nul": (None, '[{"role": "user", "content": "a\\u0000b"}]', "history.json",
                     "entry 0: 'content' must not contain NUL characters"),
        "conv-metanum": ("42", None, "meta.json", "expected a JSON object, got a number"),
        "conv-metalist": ("[]", None, "meta.json", "expected a JSON object, got an array"),
        "conv-histstr": (None, '"hello"', "history.json", "expected a JSON array, got a string"),
        "conv-histnull": (None, "null", "history.json", "expected a JSON array, got null"),
        "conv-notutf8": (None, b'[{"role": "user", "content": "\xff"}]', "history.json",
                         "not UTF-8 text"),
        "conv-year9999": (None, [{**entry, "timestamp": "9999-12-31T23:59:59Z"}], "history.json",
                          "entry 0: 'timestamp' is out of range"),
        "conv-year0001": ({**meta, "createdAt": "0001-01-01T00:00:00Z"}, None, "meta.json",
                          "'createdAt' is out of range"),
        "conv-overflow": ({**meta, "updatedAt": "9999-12-31T23:59:59-05:00"}, None, "meta.json",
                          "'updatedAt' is out of range"),
        "conv-y2099": ({**meta, "updatedAt": "2099-01-01T00:00:00Z"}, None, "meta.json",
                       "'updatedAt' is out of range"),
        "conv-tomorrow": (None, [{**entry, "timestamp": stamp(NOW + timedelta(days=2))}],
                          "history.json", "entry 0: 'timestamp' is out of range"),
        "conv-y1999": (None, [{**entry, "timestamp": "1999-12-31T23:59:59Z"}], "history.json",
                       "entry 0: 'timestamp' is out of range"),
        "conv-numstamp": (None, [{**entry, "timestamp": 1e308}], "history.json",
                          "entry 0: 'timestamp' must be a string, got a number"),
        "conv-newline": ({**meta, "conversationId": "conv-x\n"}, None, "meta.json",
                         "'conversationId' must be 1-36 letters"),
        "conv-bigfile": (None, [{**entry, "content": "x" * 1_200_000}], "history.json",
                         "bytes, over the 1,048,576-byte limit (LUMINA_IMPORT_MAX_FILE_BYTES)"),
    }  # fmt: skip
    for name, (meta_value, history, _, _) in cases.items():
        write_conversation(root / CONVERSATIONS / name, meta_value, history)
    # A folder named with a newline and no meta.json: its name is the id, and is refused.
    odd = write_conversation(root / CONVERSATIONS / "conv-y\n")
    (odd / "meta.json").unlink()
    write_conversation(root / CONVERSATIONS / "conv-good0001")
    write_conversation(root / CONVERSATIONS / "conv-good0002")
    return {name: (file, reason) for name, (_, _, file, reason) in cases.items()}


def test_every_bad_conversation_is_reported_and_the_good_ones_go_in(
    database: Database, tmp_path: Path
) -> None:
    root = tmp_path / "tree"
    expected = robustness_tree(root)

    run = run_import(database, tmp_path, str(root), LUMINA_IMPORT_MAX_FILE_BYTES=str(1024 * 1024))

    assert_no_crash(run)
    for name, (file, reason) in expected.items():
        assert reason in run.error_line(f"{root / CONVERSATIONS / name / file}: "), name
    odd = run.error_line(f"{root / CONVERSATIONS}/conv-y\\n/meta.json: ")
    assert "'conversationId' must be 1-36 letters" in odd and "'conv-y\\n'" in odd
    failed = len(expected) + 1
    assert f"2 created, 0 appended, 0 unchanged, {failed} failed" in run.stdout
    assert run.stderr.count("error: ") == failed
    assert stored_ids(database) == ["conv-good0001", "conv-good0002"]
    assert rows(database, "SELECT COUNT(*) FROM lumina_message") == [(4,)]


# -- 4. zips that expand ---------------------------------------------------------------------


def test_a_zip_bomb_is_refused_quickly_with_bounded_memory(
    sqlite_database: Database, tmp_path: Path
) -> None:
    """~300 KB expanding to 300 MiB; before the caps the import took ~1 GB of memory and
    stored the 300 MiB message."""
    bomb = bomb_member(f"{CONVERSATIONS}/conv-bomb0001/history.json", 300)
    good = Member(f"{CONVERSATIONS}/conv-good0001/history.json",
                  *deflated([json.dumps(good_history()).encode()]))  # fmt: skip
    path = hand_made_zip(tmp_path / "bomb.zip", [bomb, good])
    assert path.stat().st_size < 400_000

    run = run_import(sqlite_database, tmp_path, str(path))

    assert_no_crash(run)
    line = run.error_line(f"{path}/{CONVERSATIONS}/conv-bomb0001/history.json: ")
    assert "over the 67,108,864-byte limit (LUMINA_IMPORT_MAX_FILE_BYTES)" in line
    assert stored_ids(sqlite_database) == ["conv-good0001"]
    assert run.peak_rss_mb < 200, run.peak_rss_mb
    assert run.seconds < 30, run.seconds


def test_a_zip_whose_headers_understate_its_size_is_refused(
    sqlite_database: Database, tmp_path: Path
) -> None:
    """The headers claim 1 KB; the data inflates to 300 MiB. Only what was claimed is
    inflated, and the checksum then gives the lie away."""
    bomb = bomb_member(f"{CONVERSATIONS}/conv-liar0001/history.json", 300)
    bomb.claimed_size = 1000
    path = hand_made_zip(tmp_path / "liar.zip", [bomb])

    run = run_import(sqlite_database, tmp_path, str(path))

    assert_no_crash(run)
    line = run.error_line(f"{path}/{CONVERSATIONS}/conv-liar0001/history.json: ")
    assert "cannot be extracted: Bad CRC-32" in line
    assert stored_ids(sqlite_database) == []
    assert run.peak_rss_mb < 200, run.peak_rss_mb


def test_members_are_counted_in_the_directory_not_taken_from_the_end_record(
    sqlite_database: Database, tmp_path: Path
) -> None:
    data, crc, size = deflated([b"[]"])
    members = [Member(f"{CONVERSATIONS}/c-{n:05d}/x.log", data, crc, size) for n in range(300)]
    path = hand_made_zip(tmp_path / "many.zip", members, claimed_count=1)

    run = run_import(sqlite_database, tmp_path, str(path), LUMINA_IMPORT_MAX_ZIP_MEMBERS="200")

    assert_no_crash(run)
    line = run.error_line(f"{path}: ")
    assert line.endswith("has more than 200 members (LUMINA_IMPORT_MAX_ZIP_MEMBERS): refused, "
                         "nothing imported")  # fmt: skip
    assert stored_ids(sqlite_database) == []


def test_the_total_a_zip_expands_to_is_capped(sqlite_database: Database, tmp_path: Path) -> None:
    path = tmp_path / "big.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
        for n in range(3):
            history = good_history("x" * 600_000)
            zipped.writestr(f"{CONVERSATIONS}/conv-big{n:05d}/history.json", json.dumps(history))

    run = run_import(
        sqlite_database, tmp_path, str(path), LUMINA_IMPORT_MAX_ZIP_BYTES=str(1024 * 1024)
    )

    assert_no_crash(run)
    line = run.error_line(f"{path}: ")
    assert "over the 1,048,576-byte limit for one zip (LUMINA_IMPORT_MAX_ZIP_BYTES)" in line
    assert stored_ids(sqlite_database) == []
