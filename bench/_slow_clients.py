"""The soak's slow clients (bench/soak.py): waves of slow-header sockets, slow request
bodies and never-reading SSE readers against the real server, each watched until the
server closes it; and the server's open descriptors (``fds``), which a wave samples."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from _servers import group_pids

# What the soak's server is given: its agent, the load's key and the slow readers' keys.
AGENT = "/api/v1/agents/assistant"
LONG_TASK = "Please write a long answer /long"
LOAD_KEY = "k-load-0123456789abcdef"
SLOW_OWNERS = 10


def slow_key(i: int) -> str:
    return f"k-slow-{i:02d}-0123456789abcdef"


@dataclass
class Wave:
    started: float
    header_closed_s: list[float] = field(default_factory=list)
    header_open: int = 0
    bodies_closed_s: list[float] = field(default_factory=list)
    bodies_held: int = 0
    readers_started: int = 0
    readers_refused: int = 0
    readers_closed_s: list[float] = field(default_factory=list)
    readers_open: int = 0
    fds_before: int = 0
    fds_peak: int = 0
    fds_after: int = 0


def _raw(port: int, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock


async def _closed_within(sock: socket.socket, wait: float) -> bool:
    """Whether the server closes ``sock`` within ``wait`` s (what it sends is dropped)."""
    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + wait
    while (left := deadline - time.monotonic()) > 0:
        try:
            data = await asyncio.wait_for(loop.sock_recv(sock, 65536), left)
        except TimeoutError:
            return False
        except OSError:
            return True
        if not data:
            return True
    return False


async def slow_headers(port: int, n: int, wave: Wave) -> None:
    head = b"GET /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200

    async def one() -> None:
        sock = _raw(port)
        t0 = time.monotonic()
        try:
            for byte in head:  # one byte every 2 s, never the blank line
                try:
                    sock.send(bytes([byte]))
                except OSError:
                    wave.header_closed_s.append(time.monotonic() - t0)
                    return
                if await _closed_within(sock, 2.0):
                    wave.header_closed_s.append(time.monotonic() - t0)
                    return
                if time.monotonic() - t0 > 60:
                    break
            wave.header_open += 1
        finally:
            sock.close()

    await asyncio.gather(*(one() for _ in range(n)))


async def slow_bodies(port: int, n: int, hold: float, wave: Wave) -> None:
    async def one() -> None:
        sock = _raw(port)
        t0 = time.monotonic()
        head = (
            "POST /api/v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {LOAD_KEY}\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n{"
        )
        try:
            sock.send(head.encode())
            while time.monotonic() - t0 < hold:
                if await _closed_within(sock, 2.0):
                    wave.bodies_closed_s.append(time.monotonic() - t0)
                    return
                try:
                    sock.send(b" ")
                except OSError:
                    wave.bodies_closed_s.append(time.monotonic() - t0)
                    return
            wave.bodies_held += 1
        finally:
            sock.close()

    await asyncio.gather(*(one() for _ in range(n)))


async def never_readers(port: int, n: int, hold: float, wave: Wave) -> None:
    """``n`` streams over SLOW_OWNERS owners, never read; how long until the server closes
    each (watched for ``hold`` s, then closed by the client)."""
    body = json.dumps({"task": LONG_TASK}).encode()
    socks: list[tuple[socket.socket, float]] = []
    for i in range(n):
        sock = _raw(port, rcvbuf=1024)
        head = (
            f"POST {AGENT}/execute/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {slow_key(i % SLOW_OWNERS)}\r\nAccept: text/event-stream\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.send(head.encode() + body)
        socks.append((sock, time.monotonic()))
    await asyncio.sleep(1.0)
    for sock, _t0 in socks:  # a 429 is small: it fits the buffer whole
        with contextlib.suppress(BlockingIOError):
            peek = sock.recv(16, socket.MSG_PEEK)
            if peek.startswith(b"HTTP/1.1 429"):
                wave.readers_refused += 1
    wave.readers_started = n - wave.readers_refused
    # The server's close is seen without reading: our end of the socket goes CLOSE_WAIT.
    open_at = {sock.getsockname()[1]: (sock, t0) for sock, t0 in socks}
    deadline = time.monotonic() + hold
    while open_at and time.monotonic() < deadline:
        for port_ in closed_ports(open_at, port):
            sock, t0 = open_at.pop(port_)
            wave.readers_closed_s.append(time.monotonic() - t0)
            sock.close()
        await asyncio.sleep(1.0)
    wave.readers_open = len(open_at)
    for sock, _t0 in open_at.values():
        sock.close()


def closed_ports(ports, server_port: int) -> list[int]:
    """Which of our local ports the server has closed: its end of the connection is no
    longer ESTABLISHED (FIN_WAIT1 with the unread data still queued, or gone), or ours
    is CLOSE_WAIT. A reader that never reads never sees the FIN itself."""
    server_side: dict[int, str] = {}
    ours: dict[int, str] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state = fields[1], fields[2], fields[3]
        local_port, remote_port = int(local.split(":")[1], 16), int(remote.split(":")[1], 16)
        if local_port == server_port:
            server_side[remote_port] = state
        elif local_port in ports:
            ours[local_port] = state
    return [p for p in ports if ours.get(p) == "08" or server_side.get(p) != "01"]


async def wave_of_slow_clients(port: int, pgid: int, args, waves: list[Wave]) -> None:
    wave = Wave(started=time.monotonic())
    wave.fds_before = fds(pgid)
    waves.append(wave)

    async def peak() -> None:
        while True:
            wave.fds_peak = max(wave.fds_peak, fds(pgid))
            await asyncio.sleep(1)

    watcher = asyncio.create_task(peak())
    await asyncio.gather(
        slow_headers(port, args.slow, wave),
        slow_bodies(port, args.slow_bodies, args.body_hold, wave),
        never_readers(port, args.readers, args.reader_hold, wave),
    )
    watcher.cancel()
    await asyncio.sleep(12)  # a keep-alive left by an ended stream closes at the header timeout
    wave.fds_after = fds(pgid)


def fds(pgid: int) -> int:
    total = 0
    for pid in group_pids(pgid):
        with contextlib.suppress(OSError):
            total += sum(1 for _ in Path(f"/proc/{pid}/fd").iterdir())
    return total
