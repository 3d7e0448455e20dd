"""A compute worker (``sandbox.ComputePool``'s child) whose tools misbehave, for
``test_compute_pool.py``: run as ``python -m tests.agents.misbehaving_worker``."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from lumina_app.agents.tools.compute_worker import TOOLS, serve


def spin(_args: dict[str, Any]) -> str:
    return str(sum(range(10**15)))  # minutes of C, deaf to signals a thread could send


def die(_args: dict[str, Any]) -> str:
    os._exit(3)


def boom(_args: dict[str, Any]) -> str:
    raise RuntimeError("kaput in /srv/secret/path")


def hog(_args: dict[str, Any]) -> str:
    return str(len(bytearray(4 * 1024**3)))


def environment(_args: dict[str, Any]) -> str:
    return json.dumps(sorted(os.environ))


if __name__ == "__main__":
    tools = {**TOOLS, "spin": spin, "die": die, "boom": boom, "hog": hog, "env": environment}
    serve(tools, int(sys.argv[1]))
