"""Holding back frames of the UI socket (Playwright ``route_web_socket``), to make a race
that a loaded machine produces now and then happen every time."""

from __future__ import annotations

import re

from playwright.sync_api import Page, WebSocketRoute

REDIRECT = '"_redirect"'  # the server's frame moving the page to another address
LIVE_FEED = 'live_state.watch"'  # the page's event starting its live feed


def hold_frames(page: Page, marker: str, *, from_page: bool) -> list[tuple[WebSocketRoute, str]]:
    """Keep back the text frames holding ``marker`` that the page sends (``from_page``) or
    that the server sends it, on every socket the page opens; everything else passes. Each
    is held with the side it was going to: release it with ``side.send(frame)``."""
    held: list[tuple[WebSocketRoute, str]] = []

    def route(ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        source, target = (ws, server) if from_page else (server, ws)

        def relay(message: str | bytes) -> None:
            if isinstance(message, str) and marker in message:
                held.append((target, message))
            else:
                target.send(message)

        source.on_message(relay)

    page.route_web_socket(re.compile(r"/_event"), route)
    return held
