"""A raw Socket.IO client, as an attacker's script would be: Engine.IO v4 over a websocket,
the UI's ``/_event`` namespace, Reflex events sent by name with whatever payload we like."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import simple_websocket

NAMESPACE = "/_event"
# How long the server may take to open a socket: generous, as a loaded CI machine (two
# cores, servers and browsers of other tests) can take seconds; a refusal is immediate.
OPEN_TIMEOUT = 20


class HandshakeRefused(Exception):
    """The server would not upgrade the connection."""


class _Client(simple_websocket.Client):
    """Sends ``Host: name:port``, as browsers do (simple_websocket drops the port), and
    keeps a frame that arrives with the handshake's answer.

    simple_websocket 1.1's handshake reads the ``101`` response, takes the first event
    (the accept) and leaves the rest of that read unparsed in wsproto's buffer; its reader
    thread then blocks in ``recv`` and parses it only when more bytes come (the server's
    first ping, 25 s later). When the server answers fast, Engine.IO's open packet shares
    the ``101``'s segment and is seen 25 s late: "no Engine.IO open packet" within 20 s,
    the "first handshake after a server start" flake (a quiet server answers fastest)."""

    def handshake(self) -> None:
        self.host = f"{self.host}:{self.port}"
        super().handshake()
        self.connected = self._handle_events()  # what came with the 101, before the thread


class RawSocket:
    def __init__(
        self,
        base_url: str,
        *,
        origin: str | None = None,
        cookie: str | None = None,
        token: str | None = None,  # another socket's: the same browser tab again
    ):
        self.token = token or secrets.token_hex(16)
        url = base_url.replace("http://", "ws://") + "/_event/?EIO=4&transport=websocket"
        url += f"&token={self.token}"
        headers = {}
        if origin is not None:
            headers["Origin"] = origin
        if cookie is not None:
            headers["Cookie"] = cookie
        try:
            self.ws = _Client.connect(url, headers=headers)
        except (simple_websocket.ConnectionError, simple_websocket.ConnectionClosed) as exc:
            raise HandshakeRefused(str(exc)) from exc
        opened = self.ws.receive(timeout=OPEN_TIMEOUT)
        if not opened or not str(opened).startswith("0"):
            raise HandshakeRefused(f"no Engine.IO open packet: {opened!r}")
        self.ws.send(f"40{NAMESPACE},")
        self._expect_connect()

    def _expect_connect(self) -> None:
        deadline = time.monotonic() + OPEN_TIMEOUT
        while time.monotonic() < deadline:
            packet = self._receive(deadline - time.monotonic())
            if packet is None:
                break
            if packet.startswith(f"40{NAMESPACE},"):
                return
            if packet.startswith(f"44{NAMESPACE},"):
                raise HandshakeRefused(f"socket.io connect refused: {packet}")
        raise HandshakeRefused("no socket.io connect reply")

    def _receive(self, timeout: float) -> str | None:
        while True:
            packet = self.ws.receive(timeout=max(0.01, timeout))
            if packet is None:
                return None
            packet = str(packet)
            if packet == "2":  # Engine.IO ping
                self.ws.send("3")
                continue
            return packet

    def emit(self, name: str, payload: dict | None = None, path: str = "/") -> None:
        """A Reflex event by its handler's full name, as the frontend would send it for a
        page at ``path`` (``/chat/<agent>/<conversation>`` fills the route's params)."""
        parts = path.strip("/").split("/")
        query = dict(zip(("agent", "conversation"), parts[1:], strict=False))
        event = {
            "name": name,
            "payload": payload or {},
            "router_data": {"pathname": path, "asPath": path, "query": query},
        }
        self.ws.send(f"42{NAMESPACE}," + json.dumps(["event", event]))

    def updates(self, seconds: float) -> list[dict[str, Any]]:
        """Every state update the server sent within ``seconds``."""
        out = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            packet = self._receive(left)
            if packet is None:
                break
            if packet.startswith(f"42{NAMESPACE},"):
                name, *args = json.loads(packet[len(NAMESPACE) + 3 :])
                if name == "event" and args:
                    out.append(args[0])
        return out

    def close(self) -> None:
        self.ws.close()


def text_of(updates: list[dict[str, Any]]) -> str:
    """Everything the server sent, as one string to search for leaked data."""
    return json.dumps(updates, ensure_ascii=False)
