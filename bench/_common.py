"""Small helpers shared by the benchmarks: timing loops, percentiles and table printing."""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Samples:
    """Latencies of one measured operation, in nanoseconds."""

    ns: list[int] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.ns)

    def pct_us(self, p: float) -> float:
        return percentile(self.ns, p) / 1000.0

    @property
    def p50(self) -> float:
        return self.pct_us(50)

    @property
    def p99(self) -> float:
        return self.pct_us(99)


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default); ``p`` in 0..100."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def time_sync(
    op: Callable[[], object],
    *,
    n: int,
    warmup: int,
    before: Callable[[], object] | None = None,
    budget_s: float | None = None,
    min_n: int = 20,
) -> Samples:
    """Run ``op`` ``warmup`` then up to ``n`` times; ``before`` runs untimed each time.

    ``budget_s`` stops the timed loop early (after at least ``min_n`` samples) so a slow
    anchor cannot blow the run time; the sample count is reported with the result.
    """
    for _ in range(warmup):
        if before:
            before()
        op()
    gc.collect()
    out = Samples()
    deadline = time.perf_counter() + budget_s if budget_s else None
    clock = time.perf_counter_ns
    for i in range(n):
        if before:
            before()
        t0 = clock()
        op()
        out.ns.append(clock() - t0)
        if deadline and i + 1 >= min_n and time.perf_counter() > deadline:
            break
    return out


async def time_async(
    op: Callable[[], Awaitable[object]],
    *,
    n: int,
    warmup: int,
    before: Callable[[], object] | None = None,
    budget_s: float | None = None,
    min_n: int = 20,
) -> Samples:
    """The async twin of :func:`time_sync` (timed inside the running event loop)."""
    for _ in range(warmup):
        if before:
            before()
        await op()
    gc.collect()
    out = Samples()
    deadline = time.perf_counter() + budget_s if budget_s else None
    clock = time.perf_counter_ns
    for i in range(n):
        if before:
            before()
        t0 = clock()
        await op()
        out.ns.append(clock() - t0)
        if deadline and i + 1 >= min_n and time.perf_counter() > deadline:
            break
    return out


def fmt_us(value: float) -> str:
    """Microseconds, compact: 87.3, 1,204, 153,880."""
    if value != value:  # NaN
        return "-"
    if value < 100:
        return f"{value:.1f}"
    return f"{value:,.0f}"


def fmt_ratio(value: float) -> str:
    if value != value:
        return "-"
    return f"{value:.2f}x" if value < 10 else f"{value:.0f}x"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown pipe table, padded so it also reads well in a terminal."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep, *(line(r) for r in cells[1:])])


# -- added for bench/engine.py and bench/api.py (additive: nothing above changed) ---------


def fmt_ms(value_ms: float) -> str:
    """Milliseconds, compact: 0.84, 12.3, 1,204."""
    if value_ms != value_ms:  # NaN
        return "-"
    if value_ms < 10:
        return f"{value_ms:.2f}"
    if value_ms < 100:
        return f"{value_ms:.1f}"
    return f"{value_ms:,.0f}"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def migrate(sync_url: str) -> None:
    """``alembic upgrade head`` on ``sync_url`` with the repository's migrations."""
    from pathlib import Path

    from alembic import command
    from alembic.config import Config

    root = Path(__file__).resolve().parent.parent
    cfg = Config(str(root / "alembic.ini"))
    cfg.set_main_option("script_location", str(root / "alembic"))
    cfg.set_main_option("sqlalchemy.url", sync_url.replace("%", "%%"))
    cfg.attributes["configure_logger"] = False
    command.upgrade(cfg, "head")


def machine_line() -> str:
    """``2 cores (CPU model), load average a, b, c`` for the report header."""
    import os
    from pathlib import Path

    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores ({cpu}), load average {load}"


def server_database(backend: str) -> tuple[str, Callable[[], None]]:
    """A throw-away, migrated database on the local MariaDB or PostgreSQL server (admin
    URLs from LUMINA_BENCH_MARIADB_URL / LUMINA_BENCH_POSTGRES_URL, the same defaults as
    bench/memory.py); returns its sync URL and the clean-up that drops it."""
    import os
    import secrets

    import sqlalchemy as sa

    admin_url = {
        "mariadb": os.environ.get(
            "LUMINA_BENCH_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/test"
        ),
        "postgresql": os.environ.get(
            "LUMINA_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
        ),
    }[backend]
    name = f"lumina_bench_{secrets.token_hex(3)}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        extra = " CHARACTER SET utf8mb4" if admin.dialect.name == "mysql" else ""
        conn.exec_driver_sql(f"CREATE DATABASE {name}{extra}")
    admin.dispose()
    url = sa.engine.make_url(admin_url).set(database=name).render_as_string(False)

    def cleanup() -> None:
        eng = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        with eng.connect() as conn:
            force = " WITH (FORCE)" if eng.dialect.name == "postgresql" else ""
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {name}{force}")
        eng.dispose()

    migrate(url)
    return url, cleanup
