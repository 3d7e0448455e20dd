"""The sizes of a running server's in-process caches, every ``PROBE_EVERY`` s (60), one
line each to ``$PROBE_OUT.<pid>``: warm sessions (count, characters), recall's index cache
(conversations, rows, characters, agents known), long-term memory's (owners), the
in-process hot window (windows, characters), and the interpreter's allocated blocks.

    PYTHONPATH=bench/cache_probe PROBE_OUT=/tmp/caches python bench/soak.py --minutes 40

Loaded by the server as ``sitecustomize`` (the environment reaches it through the tests'
AppServer). The caches are found from the services the lifespan installed
(``composition._current``): reflex freezes the collector's objects before it forks its
worker, so ``gc.get_objects()`` does not list them; granian forks the worker, so the
sampling thread is started again in the child. Reading sizes costs microseconds a minute.

``PROBE_MEMRAY=START:SECONDS`` records every allocation of the worker, Python and native
(memray, with native stacks), from START seconds after the fork for SECONDS, into
``$PROBE_OUT.<pid>.memray.bin``; ``bench/cache_probe/leaks.py`` lists what was allocated in
that window and is still held at its end, biggest first: over a steady window that is
what grows (a native cache showed only there: the tokenizer's, in recall/embedders.py).

``PROBE_TRACE=N`` also traces the worker's allocations (``tracemalloc``, N frames each,
from the fork on) and writes a snapshot at every sample to ``$PROBE_OUT.<pid>.<n>.snap``:
``python -m tracemalloc``-style comparisons of two of them show what grew between them
(``bench/cache_probe/compare.py``). Tracing slows the server several times over: it says
what grows, not how fast.
"""

import os
import threading
import time
from pathlib import Path

_out = os.environ.get("PROBE_OUT")
_trace = int(os.environ.get("PROBE_TRACE", "0"))

_SIZES = {
    "SessionPool": lambda s: (len(s), s.chars),
    "Retriever": lambda r: (len(r._cache), r._cached_rows, r._cached_chars, len(r._agents)),
    "LongTermMemory": lambda m: (len(m._cache),),
    "LocalHotWindow": lambda h: (len(h), h.chars),
}


def _loop() -> None:
    import gc
    import sys

    every = float(os.environ.get("PROBE_EVERY", "60"))
    taken = 0
    while True:
        time.sleep(every)
        composition = sys.modules.get("lumina_app.composition")
        services = getattr(composition, "_current", None)
        if services is None:  # reflex freezes the collector's objects: found from the root
            continue
        found = [
            services.chat.sessions,
            services.recall.retriever,
            services.memories.store if services.memories else None,
            services.memory.hot,
        ]
        parts = []
        for obj in found:
            size = _SIZES.get(type(obj).__name__)
            if size is not None:
                try:
                    parts.append(f"{type(obj).__name__}={size(obj)}")
                except Exception as exc:  # a cache's shape changed: say so, keep sampling
                    parts.append(f"{type(obj).__name__}=err:{exc}")
        parts.append(f"blocks={sys.getallocatedblocks()} gc={gc.get_count()} {_malloc()}")
        parts.append(_sqlite())
        with Path(f"{_out}.{os.getpid()}").open("a") as f:
            f.write(time.strftime("%H:%M:%S") + " " + " ".join(parts) + "\n")
        import tracemalloc

        if tracemalloc.is_tracing():
            taken += 1
            tracemalloc.take_snapshot().dump(f"{_out}.{os.getpid()}.{taken}.snap")


def _malloc() -> str:
    """glibc's heap: bytes in use by malloc (``used``, the interpreter's arenas and every
    native library's), held free inside the heap (``free``: fragmentation), and in mmap'd
    blocks (``mmap``), in MB; RSS growing with ``free`` is fragmentation, with ``used`` a
    holder."""
    try:
        import ctypes

        class Info(ctypes.Structure):
            _fields_ = [(name, ctypes.c_size_t) for name in (
                "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                "uordblks", "fordblks", "keepcost")]  # fmt: skip

        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = Info
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return "malloc=n/a"
    mb = 1024 * 1024
    return (f"malloc_used={info.uordblks / mb:.1f} malloc_free={info.fordblks / mb:.1f} "
            f"malloc_mmap={info.hblkhd / mb:.1f}")  # fmt: skip


def _sqlite() -> str:
    """SQLite's own heap in MB (page caches, schemas, statements of every connection), now
    and at its highest: it allocates with malloc, so it is part of ``malloc_used``."""
    try:
        import ctypes

        lib = ctypes.CDLL("libsqlite3.so.0")
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        lib.sqlite3_memory_highwater.restype = ctypes.c_int64
        used, high = lib.sqlite3_memory_used(), lib.sqlite3_memory_highwater(0)
    except (OSError, AttributeError):
        return "sqlite=n/a"
    return f"sqlite_used={used / 1024 / 1024:.1f} sqlite_high={high / 1024 / 1024:.1f}"


def _start() -> None:
    threading.Thread(target=_loop, daemon=True).start()


def _record(start: float, seconds: float) -> None:
    import memray

    time.sleep(start)
    tracker = memray.Tracker(f"{_out}.{os.getpid()}.memray.bin", native_traces=True)
    tracker.__enter__()
    time.sleep(seconds)
    tracker.__exit__(None, None, None)


def _start_in_child() -> None:
    if _trace:  # the worker's allocations only, from the fork on
        import tracemalloc

        tracemalloc.start(_trace)
    memray_window = os.environ.get("PROBE_MEMRAY")
    if memray_window:
        start, seconds = (float(part) for part in memray_window.split(":"))
        threading.Thread(target=_record, args=(start, seconds), daemon=True).start()
    _start()


if _out:  # granian forks its worker: a thread does not survive the fork
    _start()
    os.register_at_fork(after_in_child=_start_in_child)
