"""Where a database stands against the migrations, read without changing anything: ``check``
runs before ``migrate`` on a first start and on an upgrade, so it must neither fail on an
empty database nor create one (opening a missing SQLite file would)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from lumina_app.domain import StoreUnavailable

ROOT = Path(__file__).resolve().parents[3]  # the checkout: alembic.ini, alembic/
# What comes next, said once: `make run` checks, then migrates (so no "run make migrate"
# one line before make does it), and an operator outside make has the CLI.
MIGRATES = "`make run` migrates it next; alone: `make migrate` or `python -m lumina_app migrate`"


@dataclass(frozen=True, slots=True)
class SchemaState:
    current: str | None  # None: never migrated (no database yet, or no alembic_version)
    head: str

    @property
    def migrated(self) -> bool:
        return self.current == self.head

    def describe(self) -> str:
        """One line for the operator; empty when the database is at head."""
        if self.current is None:
            return f"database not migrated yet ({MIGRATES})"
        if not self.migrated:
            return f"database at revision {self.current}, the code needs {self.head} ({MIGRATES})"
        return ""


def alembic_config(database_url: str) -> Config:
    """Alembic's configuration for this checkout and ``database_url`` (a sync URL)."""
    cfg = Config(str(ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(ROOT / "alembic"))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    cfg.attributes["configure_logger"] = False
    return cfg


def schema_state(database_url: str) -> SchemaState:
    """The database's revision beside the code's head; ``StoreUnavailable`` if unreachable."""
    head = ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()
    if _missing_sqlite_file(database_url):
        return SchemaState(None, head)
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
    except (sa.exc.OperationalError, sa.exc.DBAPIError, OSError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        raise StoreUnavailable(f"database unavailable: {(reason or ['?'])[0][:200]}") from exc
    finally:
        engine.dispose()
    return SchemaState(current, head)


def _missing_sqlite_file(database_url: str) -> bool:
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return False
    path = url.database or ""
    if path in ("", ":memory:") or path.startswith("file:"):
        return False
    return not Path(path).exists()
