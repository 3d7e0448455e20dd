"""Prometheus's multi-process mode for the server ``reflex run`` starts (granian, several
worker processes): one fresh directory per server, chosen in the supervising process before
any worker starts (workers inherit the variable), and each worker's live gauges dropped
when it ends."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Read by prometheus-client when it is first imported: this module must not import it.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare() -> None:
    """In the supervising process (from ``rxconfig.py``): a fresh, empty directory, removed
    at exit. A worker (which inherits the variable) and an operator's own choice are left
    as they are."""
    if os.environ.get(MULTIPROC_ENV):
        return
    path = tempfile.mkdtemp(prefix="lumina-metrics-")
    os.environ[MULTIPROC_ENV] = path
    atexit.register(shutil.rmtree, path, True)


def worker_exited() -> None:
    """A worker shutting down: its live gauges (open streams, breaker) stop counting."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())
