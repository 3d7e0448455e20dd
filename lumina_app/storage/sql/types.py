"""Column types that behave the same on SQLite, MariaDB/MySQL and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.ext.compiler import compiles


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


class _Unhex(sa.sql.expression.ColumnElement):
    """A bound value sent as hex text and turned back into bytes by MariaDB/MySQL."""

    inherit_cache = True

    def __init__(self, value: sa.BindParameter) -> None:
        self.value = value
        self.type = value.type


@compiles(_Unhex)
def _unhex_elsewhere(element: _Unhex, compiler: sa.sql.compiler.SQLCompiler, **kw: object) -> str:
    return compiler.process(element.value, **kw)


@compiles(_Unhex, "mysql")
@compiles(_Unhex, "mariadb")
def _unhex_mysql(element: _Unhex, compiler: sa.sql.compiler.SQLCompiler, **kw: object) -> str:
    return f"UNHEX({compiler.process(element.value, **kw)})"


class ChunkBytes(sa.types.TypeDecorator):
    """Bytes of a stored file's chunk: MEDIUMBLOB on MariaDB/MySQL (BLOB stops at 64 KiB),
    sent there as hex text, since aiomysql 0.3 cannot bind ``bytes`` with PyMySQL 1.2
    (its ``escape_bytes_prefixed`` is gone); BLOB / BYTEA elsewhere, bound as they are."""

    impl = sa.LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.MEDIUMBLOB())
        return dialect.type_descriptor(sa.LargeBinary())

    def bind_expression(self, bindvalue: sa.BindParameter) -> sa.ColumnElement:
        return _Unhex(bindvalue)

    def bind_processor(self, dialect: sa.Dialect):
        """The hex text as it is (the BLOB's own processor would make it bytes again)."""
        if dialect.name not in ("mysql", "mariadb"):
            return super().bind_processor(dialect)

        def process(value: bytes | None) -> str | None:
            return None if value is None else bytes(value).hex()

        return process
