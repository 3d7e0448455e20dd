"""Column types that behave the same on SQLite, MariaDB/MySQL and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql


def utc_datetime_column_type() -> sa.types.TypeEngine:
    """DDL type: ``TIMESTAMPTZ`` on PostgreSQL, ``DATETIME(6)`` on MySQL (microseconds)."""
    return sa.DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def long_text_column_type() -> sa.types.TypeEngine:
    """Message text: MySQL's TEXT stops at 64 KiB, so use LONGTEXT there."""
    return sa.Text().with_variant(mysql.LONGTEXT(), "mysql", "mariadb")


class UTCDateTime(sa.types.TypeDecorator):
    """Stores UTC, always returns timezone-aware UTC, whatever the backend keeps."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def bind_processor(self, dialect: sa.Dialect):
        """On SQLite, the text SQLAlchemy's DATETIME stores (``YYYY-MM-DD HH:MM:SS.ffffff``)
        in one ``isoformat`` call: every write of a turn binds two or three of these, and
        the generic path (this decorator, then a ``%``-format of seven fields) cost more
        than the statement that carries them."""
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)

        def process(value: datetime | None) -> str | None:
            if value is None:
                return None
            if value.tzinfo is None:
                raise ValueError("naive datetime given to a UTC column")
            return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")

        return process

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # SQLite may hand back text for raw expressions
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
