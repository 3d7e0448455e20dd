"""What every benchmark shares: arguments, the report header, timing loops, percentiles,
tables and PASS/FAIL lines. Databases and processes are in ``_servers.py``."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

# The scripts run as ``python bench/x.py`` (only bench/ is on the path): the app and its
# tests are imported from this checkout.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# The anchors' package announces its own retirement on import; the version is pinned.
warnings.filterwarnings("ignore", message=r".*langchain-community.* is being sunset")

# -- arguments -----------------------------------------------------------------------------


def parse_args(
    doc: str,
    options: Callable[[argparse.ArgumentParser], None],
    quick: dict[str, object],
    argv: list[str] | None = None,
) -> argparse.Namespace:
    """The script's options plus ``--quick``: the ``quick`` values replace every default the
    command line did not set (a smoke run of seconds; its figures mean little)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (seconds)")
    options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        for name, value in quick.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    return args


def header(script: str, args: argparse.Namespace, versions: str) -> None:
    """``== bench/x.py --opt v``, the date and machine, then the software versions."""
    flags = " ".join(
        f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}")
        for k, v in vars(args).items()
        if v not in (None, False)
    )
    print(f"== bench/{script} {flags}".rstrip())
    print(f"date: {date.today().isoformat()}   machine: {machine_line()}")
    print(f"python {platform.python_version()}, {versions}", flush=True)


def machine_line() -> str:
    """``2 cores (CPU model), load average a, b, c``."""
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores ({cpu}), load average {load}"


def note(text: str) -> None:
    """Progress, on stderr (the report is stdout)."""
    sys.stdout.flush()
    print(f"  {text}", file=sys.stderr, flush=True)


# -- samples -------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (numpy's default); ``p`` in 0..100; NaN if empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Samples:
    """Latencies of one measured operation, in nanoseconds."""

    ns: list[int] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.ns)

    def us(self, p: float) -> float:
        return percentile(self.ns, p) / 1e3

    def ms(self, p: float) -> float:
        return percentile(self.ns, p) / 1e6

    @property
    def p50(self) -> float:
        """Microseconds."""
        return self.us(50)

    @property
    def p99(self) -> float:
        return self.us(99)


@dataclass
class Loop:
    """How often to run an operation: ``warmup`` untimed, then ``n`` timed, stopping early
    after ``budget_s`` seconds once ``min_n`` samples are in (so a slow anchor cannot blow
    the run time; the sample count is reported with the result)."""

    n: int
    warmup: int = 0
    budget_s: float | None = None
    min_n: int = 20


def time_sync(op: Callable[[], object], loop: Loop, before: Callable[[], object] | None = None):
    """Time ``op``; ``before`` runs untimed before each call."""
    out = Samples()
    clock = time.perf_counter_ns
    for _ in range(loop.warmup):
        if before:
            before()
        op()
    gc.collect()
    deadline = time.perf_counter() + loop.budget_s if loop.budget_s else None
    for i in range(loop.n):
        if before:
            before()
        t0 = clock()
        op()
        out.ns.append(clock() - t0)
        if deadline and i + 1 >= loop.min_n and time.perf_counter() > deadline:
            break
    return out


async def time_async(
    op: Callable[[], Awaitable[object]], loop: Loop, before: Callable[[], object] | None = None
) -> Samples:
    """:func:`time_sync` for a coroutine function, timed inside the running event loop."""
    out = Samples()
    clock = time.perf_counter_ns
    for _ in range(loop.warmup):
        if before:
            before()
        await op()
    gc.collect()
    deadline = time.perf_counter() + loop.budget_s if loop.budget_s else None
    for i in range(loop.n):
        if before:
            before()
        t0 = clock()
        await op()
        out.ns.append(clock() - t0)
        if deadline and i + 1 >= loop.min_n and time.perf_counter() > deadline:
            break
    return out


# -- report --------------------------------------------------------------------------------


def fmt_us(value: float) -> str:
    """Microseconds, compact: 87.3, 1,204."""
    if value != value:  # NaN
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def fmt_ms(value: float) -> str:
    """Milliseconds, compact: 0.84, 12.3, 1,204."""
    if value != value:
        return "-"
    if value < 10:
        return f"{value:.2f}"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def fmt_ratio(value: float) -> str:
    if value != value:
        return "-"
    return f"{value:.2f}x" if value < 10 else f"{value:,.0f}x"


def fmt_n(value: float) -> str:
    """A count per operation: 3, or 2.25 when it varies."""
    if value != value:
        return "-"
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown pipe table, padded so it also reads well in a terminal."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), sep, *(line(r) for r in cells[1:])])


class Checks:
    """The PASS/FAIL lines against a benchmark's targets (it still exits 0: a report)."""

    def __init__(self) -> None:
        self.items: list[tuple[bool, str]] = []

    def add(self, ok: bool, text: str) -> None:
        self.items.append((bool(ok), text))

    def print(self) -> None:
        print("\nTargets:\n")
        for ok, text in self.items:
            print(f"  {'PASS' if ok else 'FAIL'}  {text}")
        passed = sum(ok for ok, _ in self.items)
        print(f"\n{passed}/{len(self.items)} targets met.")
