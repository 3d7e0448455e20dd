"""How SQL failures surface: connection-level trouble becomes ``StoreUnavailable`` (a 503,
nothing acknowledged); integrity errors and bugs stay what they are."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from lumina_app.domain import StoreUnavailable


@asynccontextmanager
async def translated_errors() -> AsyncIterator[None]:
    """Connection-level failures become ``StoreUnavailable``; bugs stay bugs."""
    try:
        yield
    except IntegrityError:
        raise
    except (OperationalError, DBAPIError, OSError, TimeoutError) as exc:
        if (
            isinstance(exc, DBAPIError)
            and not isinstance(exc, OperationalError)
            and not exc.connection_invalidated
        ):
            raise
        raise StoreUnavailable(f"database unavailable: {_short(exc)}") from exc


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
