"""The shape of the code, checked: imports flow one way (ui/api → services → agents/archive
→ memory → storage → domain), only the memory layer (lumina_app/memory/) writes messages or
touches the hot tier, and lumina_app has no import cycle. Static (AST), so imports inside
functions count too."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

PACKAGE = Path(__file__).resolve().parents[2] / "lumina_app"

# Top-level part of lumina_app -> the parts it may import (besides itself, settings, domain).
ALLOWED: dict[str, set[str]] = {
    "domain": set(),
    "storage": set(),
    "memory": {"storage", "recall"},  # long-term memories rank with recall's path
    "recall": {"storage"},  # ranked retrieval and embeddings, beside the memory layer
    "archive": {"memory"},
    "agents": {"memory", "recall", "storage:contracts"},
    "services": {"agents", "archive", "memory", "recall", "storage:contracts"},
    "composition": {
        "services",
        "agents",
        "archive",
        "memory",
        "recall",
        "storage",
        "observability",
    },
    "api": {"services", "composition", "platform", "observability"},
    "ui": {"services", "composition"},
    "cli": {"services", "composition", "archive", "cli_common", "cli_accounts"},
    "cli_common": {"composition"},
    "cli_accounts": {"services", "composition", "cli_common"},
    "lifespan": {"composition", "observability", "platform"},
    "observability": set(),  # metrics and logs: hooked on from the composition root
    "lumina_app": {"api", "ui", "lifespan", "platform"},
    "__main__": {"cli"},
    "settings": set(),
    # The patches to the frameworks (rxconfig.py imports platform.granian before Reflex
    # builds the server); they import nothing of Lumina's but settings.
    "platform": set(),
    "__init__": set(),
}
# The storage modules that only define contracts (Protocols), which the layers above may use.
CONTRACTS = {
    "storage.hot_window",
    "storage.run_events",
    "storage.live_bus",
    "storage.run_locks",
    "storage.run_records",
    "storage.sessions",
    "storage.prompts",
    "storage.users",
    "storage.api_keys",
    "storage.audit",
    "storage.claims",
    "storage.slots",
    "storage.files",
    "storage.message_files",
}


# The modules that write messages (and summaries) or serve the hot tier. Only the memory
# layer uses them; storage is where they live, the composition root builds them.
TIERS = {
    "storage.cold_store",
    "storage.hot_window",
    "storage.local.hot_window",
    "storage.redis.hot_window",
    "storage.sql.archive_rows",
    "storage.sql.cold_store",
    "storage.sql.flush_batch",
    "storage.sql.forks",
    "storage.sql.history_match",
    "storage.sql.regenerate",
    "storage.sql.summaries",
    "storage.sql.write_paths",
    "storage.sql.writes",
    "storage.sql.writes_pg",
}
TIER_USERS = {"memory", "storage", "composition"}


def modules() -> dict[str, ast.Module]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = ast.parse(path.read_text(), str(path))
    return found


def imported(tree: ast.Module) -> set[str]:
    """lumina_app modules a module imports, relative to the package (``storage.sql.models``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return {n.removeprefix("lumina_app.") for n in names if n.startswith("lumina_app.")}


def existing(name: str, known: set[str]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def test_imports_flow_one_way() -> None:
    mods = modules()
    wrong = []
    for name, tree in mods.items():
        part = name.split(".")[0]
        allowed = ALLOWED[part] | {part, "settings", "domain"}
        for target in {existing(t, set(mods)) for t in imported(tree)} - {None}:
            top = target.split(".")[0]
            if top in allowed:
                continue
            if top == "storage" and target in CONTRACTS and "storage:contracts" in allowed:
                continue
            wrong.append(f"{name} imports {target}")
    assert not wrong, "\n".join(sorted(wrong))


def tier_reaches(mods: dict[str, ast.Module]) -> list[str]:
    """Code outside the memory layer that writes messages or touches the hot tier: it
    imports a module of ``TIERS``, or reaches a ``.cold`` / ``.hot`` attribute."""
    found = []
    for name, tree in mods.items():
        part = name.split(".")[0]
        if part not in TIER_USERS:
            targets = {existing(t, set(mods)) for t in imported(tree)}
            found += [f"{name} imports {t}" for t in sorted(targets & TIERS)]
        if part != "memory":
            found += [
                f"{name}:{node.lineno} .{node.attr}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and node.attr in ("cold", "hot")
            ]
    return found


def test_only_memory_writes_messages_or_touches_the_hot_tier() -> None:
    reaching = tier_reaches(modules())
    assert not reaching, "\n".join(reaching)


def test_no_import_cycles() -> None:
    mods = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, tree in mods.items():
        for target in imported(tree):
            resolved = existing(target, set(mods))
            if resolved and resolved != name and not name.startswith(resolved + "."):
                graph[name].add(resolved)
    cycles, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = "done"

    for start in sorted(mods):
        if start not in state:
            visit(start, [start])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_check_sees_a_forbidden_import() -> None:
    """The checks above must be able to fail: a planted violation is seen."""
    tree = ast.parse("from lumina_app.storage.sql.models import messages\n")
    assert "storage.sql.models" in imported(tree)
    attr = ast.parse("services.memory.cold.engine")
    assert any(isinstance(n, ast.Attribute) and n.attr == "cold" for n in ast.walk(attr))
    mods = modules()
    planted = {
        **mods,
        "services.planted": ast.parse("from lumina_app.storage.sql import writes\n"),
        "agents.planted": ast.parse("from lumina_app.storage.hot_window import HotWindow\n"),
        "api.planted": ast.parse("services.memory.hot.read(uuid)\n"),
        "memory.planted": ast.parse("from lumina_app.storage.sql import writes_pg\n"),
    }
    assert set(tier_reaches(planted)) - set(tier_reaches(mods)) == {
        "services.planted imports storage.sql.writes",
        "agents.planted imports storage.hot_window",
        "api.planted:1 .hot",
    }
