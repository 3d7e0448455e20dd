"""Alembic environment: migrates LUMINA_DATABASE_URL, targeting the app's SQLModel metadata."""

from __future__ import annotations

from logging.config import fileConfig
from pathlib import Path

import sqlalchemy as sa
from alembic import context
from sqlalchemy.engine import make_url

from lumina_app.settings import get_settings
from lumina_app.storage.sql.models import is_search_object, metadata

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = metadata


def include_name(name: str | None, type_: str, _parent: object) -> bool:
    """Autogenerate leaves the full-text index alone: it is made by hand per backend."""
    return not (type_ in ("table", "index", "column") and is_search_object(name))


def _database_url() -> str:
    """An explicit ``sqlalchemy.url`` (tests) wins; otherwise the app's setting."""
    return config.get_main_option("sqlalchemy.url") or get_settings().database_url


def run_migrations_offline() -> None:
    context.configure(url=_database_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    url = make_url(_database_url())
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    if url.get_backend_name() == "mysql" and "charset" not in url.query:
        url = url.update_query_dict({"charset": "utf8mb4"})
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        if url.get_backend_name() == "sqlite":
            connection.exec_driver_sql("PRAGMA journal_mode=WAL")
            connection.commit()  # close the autobegun transaction so Alembic owns its own
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=url.get_backend_name() == "sqlite",
            include_name=include_name,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
