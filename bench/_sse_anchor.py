"""bench/api.py's anchor: a bare Starlette app under the same granian as Lumina, sending
the SSE frames Lumina sent for the same task (recorded from it), nothing else."""

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
import asyncio, json, os
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

with open(os.environ["ANCHOR_FRAMES"], encoding="utf-8") as f:
    FRAMES = {k: [x.encode() for x in v] for k, v in json.load(f).items()}
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


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


async def idle(request):
    async def gen():
        yield FRAMES["short"][0]
        await asyncio.Event().wait()

    return StreamingResponse(gen(), media_type="text/event-stream", headers=HEADERS)


async def ping(request):
    return PlainTextResponse("pong")


app = Starlette(routes=[Route("/stream", stream, methods=["POST"]), Route("/idle", idle),
                        Route("/ping", ping)])
'''


@contextlib.contextmanager
def anchor_server(workdir: Path, frames: dict[str, list[str]]) -> Iterator[tuple[str, int]]:
    """The anchor under granian in its own process group; yields (URL, process group)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "anchor_app.py").write_text(ANCHOR_APP, encoding="utf-8")
    (workdir / "frames.json").write_text(json.dumps(frames), encoding="utf-8")
    port = free_port()
    args = [str(Path(sys.executable).parent / "granian"), "--interface", "asgi"]
    args += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    args += ["--log-level", "warning", "--working-dir", str(workdir), "anchor_app:app"]
    env = dict(os.environ, ANCHOR_FRAMES=str(workdir / "frames.json"))
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
