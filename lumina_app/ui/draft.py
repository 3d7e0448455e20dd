"""What the person is typing survives the page moving to a new conversation's address.

A new conversation's page moves to ``/chat/<agent>/<uuid>`` once its first run has
started; the router mounts the page afresh there, and an uncontrolled composer comes back
empty. On a slow connection that move can land after the first answer, while the next
question is being typed. So the move first keeps the composer's text in the tab's
``sessionStorage``, and the composer, when it mounts, puts back what was kept (once).
All of it runs in the browser: no keystroke goes to the server."""

from __future__ import annotations

import reflex as rx

KEY = "lumina-draft"

KEEP = rx.call_script(
    "(() => { const box = document.getElementById('composer');"
    f" if (box && box.value) sessionStorage.setItem('{KEY}', box.value); }})()"
)

PUT_BACK = rx.call_script(
    f"(() => {{ const kept = sessionStorage.getItem('{KEY}');"
    f" sessionStorage.removeItem('{KEY}');"
    " const box = document.getElementById('composer');"
    " if (kept && box && !box.value) box.value = kept; })()"
)


def move_to(url: str) -> list[rx.event.EventSpec]:
    """Replace the page's address with ``url``, keeping the composer's text."""
    return [KEEP, rx.redirect(url, replace=True)]
