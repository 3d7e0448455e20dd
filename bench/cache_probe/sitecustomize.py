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
"""

import os
import threading
import time
from pathlib import Path

_out = os.environ.get("PROBE_OUT")

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
        parts.append(f"blocks={sys.getallocatedblocks()} gc={gc.get_count()}")
        with Path(f"{_out}.{os.getpid()}").open("a") as f:
            f.write(time.strftime("%H:%M:%S") + " " + " ".join(parts) + "\n")


def _start() -> None:
    threading.Thread(target=_loop, daemon=True).start()


if _out:  # granian forks its worker: a thread does not survive the fork
    _start()
    os.register_at_fork(after_in_child=_start)
