"""bench/api.py's anchors: a bare Starlette app under the same granian as Lumina, sending
the SSE frames Lumina sent for the same task (recorded from it), nothing else (``/stream``);
and the same plus the durable minimum of a turn (``/durable``): a new conversation, its
question, a streaming answer row and a run record committed in one transaction before the
first frame, the answer, the conversation and the run updated in a second before the last,
on Lumina's own migrated SQLite schema (its full-text triggers fire), with plain ``sqlite3``
on the event loop's thread (as Lumina's write path runs), WAL, ``synchronous=NORMAL``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from _servers import free_port, wait_for_port

ANCHOR_APP = '''\
"""Bare Starlette SSE anchor for bench/api.py: recorded frames, nothing else."""
import asyncio, json, os, sqlite3, uuid
from datetime import datetime, timezone
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

with open(os.environ["ANCHOR_FRAMES"], encoding="utf-8") as f:
    FRAMES = {k: [x.encode() for x in v] for k, v in json.load(f).items()}
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
ANSWER = "".join(json.loads(f.split(b"data: ", 1)[1]).get("chunk", "")
                 for f in FRAMES["short"] if b"data: " in f)
DB = sqlite3.connect(os.environ["ANCHOR_DB"], isolation_level=None, check_same_thread=False)
for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
    DB.execute("PRAGMA " + pragma)


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")


def accept(question):
    at, turn, run = now(), uuid.uuid4().hex, "run-" + uuid.uuid4().hex[:16]
    DB.execute("BEGIN")
    conv = DB.execute(
        "INSERT INTO lumina_conversation (uuid, agent_id, title, status, message_count,"
        " tool_call_count, last_seq, owner, created_at, updated_at) VALUES (?, 'bare', ?,"
        " 'active', 2, 0, 2, 'local', ?, ?)", (str(uuid.uuid4()), question, at, at)).lastrowid
    ids = [DB.execute(
        "INSERT INTO lumina_message (conversation_id, seq, turn_id, role, content, status,"
        " created_at, updated_at, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (conv, seq, turn, role, text, status, at, at, meta)).lastrowid
        for seq, role, text, status, meta in ((1, "user", question, "complete", "{}"),
        (2, "assistant", "", "streaming", json.dumps({"runId": run})))]
    DB.execute(
        "INSERT INTO lumina_run (run_id, conversation_id, agent_id, owner, scenario, provider,"
        " model, status, context_messages, user_message_id, assistant_message_id, started_at)"
        " VALUES (?, ?, 'bare', 'local', 'new', 'demo', 'demo', 'running', 0, ?, ?, ?)",
        (run, conv, ids[0], ids[1], at))
    DB.execute("COMMIT")
    return conv, ids[1], run


def final(conv, answer_id, run):
    at = now()
    DB.execute("BEGIN")
    DB.execute("UPDATE lumina_message SET content = ?, status = 'complete', updated_at = ?,"
               " meta = ? WHERE id = ? AND status = 'streaming'",
               (ANSWER, at, json.dumps({"runId": run, "model": "demo"}), answer_id))
    DB.execute("UPDATE lumina_conversation SET status = 'idle', updated_at = ? WHERE id = ?",
               (at, conv))
    DB.execute("UPDATE lumina_run SET status = 'completed', finished_at = ? WHERE run_id = ?",
               (at, run))
    DB.execute("COMMIT")


async def stream(request):
    frames = FRAMES[request.query_params.get("kind", "short")]
    delay = float(request.query_params.get("delay_ms", "0")) / 1000

    async def gen():
        yield frames[0]
        for chunk in frames[1:-1]:
            if delay:
                await asyncio.sleep(delay)
            yield chunk
        yield frames[-1]

    return StreamingResponse(gen(), media_type="text/event-stream", headers=HEADERS)


async def durable(request):
    frames = FRAMES["short"]
    turn = accept(request.query_params.get("task", "?"))

    async def gen():
        for chunk in frames[:-1]:
            yield chunk
        final(*turn)
        yield frames[-1]

    return StreamingResponse(gen(), media_type="text/event-stream", headers=HEADERS)


async def idle(request):
    async def gen():
        yield FRAMES["short"][0]
        await asyncio.Event().wait()

    return StreamingResponse(gen(), media_type="text/event-stream", headers=HEADERS)


async def ping(request):
    return PlainTextResponse("pong")


app = Starlette(routes=[Route("/stream", stream, methods=["POST"]), Route("/idle", idle),
                        Route("/durable", durable, methods=["POST"]), Route("/ping", ping)])
'''


@contextlib.contextmanager
def anchor_server(
    workdir: Path, frames: dict[str, list[str]], database: Path
) -> Iterator[tuple[str, int]]:
    """The anchor under granian in its own process group, ``/durable`` writing to the
    migrated SQLite ``database``; yields (URL, process group)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "anchor_app.py").write_text(ANCHOR_APP, encoding="utf-8")
    (workdir / "frames.json").write_text(json.dumps(frames), encoding="utf-8")
    port = free_port()
    args = [str(Path(sys.executable).parent / "granian"), "--interface", "asgi"]
    args += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    args += ["--log-level", "warning", "--working-dir", str(workdir), "anchor_app:app"]
    env = dict(os.environ, ANCHOR_FRAMES=str(workdir / "frames.json"), ANCHOR_DB=str(database))
    log = (workdir / "anchor.log").open("ab")
    proc = subprocess.Popen(args, cwd=workdir, env=env, stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        wait_for_port(port, proc, timeout=60)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        log.close()
