"""Text every supported database can store: no NUL characters (PostgreSQL refuses them)
and no lone surrogates (not encodable as UTF-8)."""

from __future__ import annotations

from lumina_app.domain.errors import InvalidInput


def check_storable_text(text: str, what: str) -> str:
    if "\x00" in text:
        raise InvalidInput(f"{what} must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} must be valid Unicode text (no lone surrogates)") from None
    return text


def storable(text: str) -> str:
    """Text from outside (a tool's output) made storable: NUL and lone surrogates replaced."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def clip_utf8(text: str, limit: int, marker: str) -> tuple[str, bool]:
    """Storable ``text`` cut to at most ``limit`` UTF-8 bytes with ``marker`` (formatted
    with ``total`` and ``kept`` bytes) at the end when it had to be cut; and whether it was."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    room = max(0, limit - len(marker.format(total=len(data), kept=limit).encode()))
    kept = data[:room].decode("utf-8", "ignore")  # never half a character
    return kept + marker.format(total=len(data), kept=len(kept.encode("utf-8"))), True
