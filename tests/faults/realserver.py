"""Helpers for fault tests against a real server (``tests.server.AppServer``): its memory,
raw-socket requests, and polling the stored conversation."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import RedisServer, write_agent
from tests.server import AppServer

MB = 1024 * 1024


def start_server(workdir: Path, agents: dict[str, dict] | None = None, **env: str) -> AppServer:
    """A backend-only server with the in-process hot window (no Redis), the shipped agents
    and ``agents`` (id → config.json) besides."""
    server = AppServer(workdir, backend_only=True, env={"LUMINA_REDIS_URL": "", **env})
    server.prepare()
    for agent_id, config in (agents or {}).items():
        write_agent(server.data_dir / "agents", agent_id, config)
    server.start()
    return server


@contextmanager
def two_instances(tmp_path: Path, database_url: str, **env: str) -> Iterator[list[AppServer]]:
    """Two backend-only servers over one database and one private Redis of their own,
    with ``env``; both stopped and the Redis killed on the way out."""
    redis = RedisServer(tmp_path)
    redis.start()
    servers = [
        AppServer(
            tmp_path / f"i{n}",
            backend_only=True,
            env={"LUMINA_REDIS_URL": redis.url, **env},
            database_url=database_url,
        )
        for n in (1, 2)
    ]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()
        redis.kill()


def group_rss(server: AppServer) -> int:
    """Resident memory, in bytes, of every process in the server's process group."""
    assert server.proc is not None
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != server.proc.pid:  # pgrp
                continue
            with (proc / "status").open() as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return total


def settled_rss(server: AppServer, pause: float = 0.3) -> int:
    """RSS once it has stopped moving (the server finished what it was doing)."""
    previous = group_rss(server)
    for _ in range(10):
        time.sleep(pause)
        current = group_rss(server)
        if abs(current - previous) < 256 * 1024:
            return current
        previous = current
    return previous


def raw_request(
    server: AppServer,
    method: str,
    path: str,
    *,
    json_body: object = None,
    recv_buffer: int | None = None,
    close: bool = False,
) -> socket.socket:
    """Send one HTTP/1.1 request on a fresh socket and return the socket, unread."""
    body = json.dumps(json_body).encode() if json_body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
    if close:
        head += "Connection: close\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    sock = socket.socket()
    if recv_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def read_until_closed(sock: socket.socket, idle: float = 3.0) -> tuple[bytes, bool]:
    """Everything the socket delivers; and whether the server closed it (True) or it just
    went quiet for ``idle`` seconds (False)."""
    sock.settimeout(idle)
    data = b""
    try:
        while chunk := sock.recv(1 << 20):
            data += chunk
        return data, True
    except TimeoutError:
        return data, False
    except ConnectionResetError:
        return data, True
    finally:
        sock.close()


def wait_answer(client: httpx.Client, conversation: str, within: float = 30) -> dict:
    """The conversation's last message once it is no longer streaming."""
    deadline = time.monotonic() + within
    while True:
        items = client.get(
            f"/api/v1/conversations/{conversation}/messages", params={"limit": 100}
        ).json()["items"]
        if items and items[-1]["role"] == "ASSISTANT" and items[-1]["status"] != "streaming":
            return items[-1]
        assert time.monotonic() < deadline, "the answer did not finish"
        time.sleep(0.05)


def latest_conversation(client: httpx.Client, agent: str, within: float = 10) -> str:
    deadline = time.monotonic() + within
    while True:
        items = client.get("/api/v1/conversations", params={"agentId": agent}).json()["items"]
        if items:
            return items[0]["uuid"]
        assert time.monotonic() < deadline, "no conversation was created"
        time.sleep(0.05)
