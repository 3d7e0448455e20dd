"""The shape of the code, checked: imports flow one way (ui/api → services → agents/archive
→ memory → storage → domain), only the memory layer (lumina_app/memory/) touches the cold
and hot tiers, and lumina_app has no import cycle. Static (AST), so imports inside functions
count too."""

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
    "memory": {"storage"},
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
    "api": {"services", "composition", "granian_limits", "observability"},
    "ui": {"services", "composition"},
    "cli": {"services", "composition", "archive", "cli_common", "cli_accounts"},
    "cli_common": {"composition"},
    "cli_accounts": {"services", "composition", "cli_common"},
    "lifespan": {"composition", "observability"},
    "observability": set(),  # metrics and logs: hooked on from the composition root
    "lumina_app": {"api", "ui", "lifespan"},
    "__main__": {"cli"},
    "settings": set(),
    "granian_limits": set(),  # imported by rxconfig.py before Reflex builds the server
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
}


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


def test_only_memory_touches_the_cold_and_hot_tiers() -> None:
    reaching = [
        f"{name}:{node.lineno} .{node.attr}"
        for name, tree in modules().items()
        if name.split(".")[0] != "memory"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("cold", "hot")
    ]
    assert not reaching, reaching


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
