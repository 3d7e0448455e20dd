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
