"""The shape of the code, checked: imports flow one way (ui/api → services → agents/archive
→ memory → storage → domain), only the memory layer (lumina_app/memory/) writes messages or
touches the hot tier, lumina_app has no import cycle, and only platform/ reaches a library's
private names. Static (AST), so imports inside functions count too."""

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
    "storage": {"platform"},  # the fast lanes' private names: platform/*_private.py
    "memory": {"storage", "recall"},  # long-term memories rank with recall's path
    # ranked retrieval and embeddings, beside the memory layer (platform: the tokenizers
    # internal the local embedder turns off)
    "recall": {"storage", "platform"},
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


# Underscore names that are public API of the library they belong to (SQLAlchemy's Row).
PUBLIC_UNDERSCORE = {"_mapping", "_asdict", "_fields", "_replace", "_make", "_t", "_tuple"}


def own_private_names(mods: dict[str, ast.Module]) -> set[str]:
    """The ``_names`` lumina_app defines itself: functions, classes, attributes it assigns,
    class fields and slots. Any other ``x._name`` is a library's private name."""
    own: set[str] = set()
    for tree in mods.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                own.add(node.value)  # __slots__ entries, setattr/getattr names
    return {n for n in own if n.startswith("_")}


def private_reaches(mods: dict[str, ast.Module]) -> list[str]:
    """``x._name`` outside platform/ where ``_name`` is none of lumina_app's own (a
    library's internal: those are read through platform/*_private.py, version-guarded)."""
    own = own_private_names({n: t for n, t in mods.items() if not n.startswith("platform")})
    found = []
    for name, tree in mods.items():
        if name.split(".")[0] == "platform":
            continue
        for node in ast.walk(tree):
            attr = node.attr if isinstance(node, ast.Attribute) else ""
            if (
                attr.startswith("_")
                and not attr.startswith("__")
                and attr not in own | PUBLIC_UNDERSCORE
            ):
                found.append(f"{name}:{node.lineno} .{attr}")
    return found


def test_only_platform_reaches_private_names() -> None:
    reaching = private_reaches(modules())
    assert not reaching, "\n".join(reaching)


def test_the_check_sees_a_private_name() -> None:
    """The fast lanes as they were before #44 read SQLAlchemy's, aiosqlite's and
    tokenizers' internals in storage/ and recall/: each is seen (``_connection`` too, but a
    method of Lumina's has that name, so it passes)."""
    planted = {
        **modules(),
        "storage.sql.planted": ast.parse(
            "processors = compiled._bind_processors\n"
            "many = compiled._insertmanyvalues\n"
            "events = conn._has_events or conn.engine._has_events\n"
            "class C(aiosqlite.Connection):\n"
            "    def __init__(self):\n"
            "        self._thread.daemon = True\n"
            "    async def run(self):\n"
            "        return self._running and self._connection\n"
        ),
        "recall.planted": ast.parse("tokenizer.model._resize_cache(0)\n"),
    }
    seen = {r.split(" ", 1)[1] for r in private_reaches(planted) if ".planted:" in r}
    assert seen == {
        "._bind_processors",
        "._insertmanyvalues",
        "._has_events",
        "._thread",
        "._running",
        "._resize_cache",
    }


def test_one_road_for_reads_and_one_for_writes() -> None:
    """The cold store's contract writes and reads the window only; every other read of
    conversations and messages is a query of ``storage/sql`` behind a repository of
    ``memory/`` (``ConversationQueries``), never a pass-through of the cold store."""
    from lumina_app.storage.cold_store import ColdStore
    from lumina_app.storage.sql.cold_store import SQLColdStore
    from lumina_app.storage.sql.conversation_queries import ConversationQueries

    reads = {n for n in vars(ConversationQueries) if not n.startswith("_")}
    assert not reads & {n for n in vars(ColdStore) if not n.startswith("_")}
    assert not reads & {n for n in vars(SQLColdStore) if not n.startswith("_")}
    window_users = {
        name
        for name, tree in modules().items()
        if name.startswith("memory.") and "storage.cold_store" in set(imported(tree))
    }
    assert window_users <= {"memory.manager", "memory.reads", "memory.context_reads"}


# agents/ by job, lowest first: a module imports (at run time) only from its own
# sub-package or one below it.
AGENT_JOBS = ["definitions", "tools", "providers", "run", "after_run"]
# which tools exist is what a definition's "tools" list is checked against
AGENT_JOB_EXCEPTIONS = {("definitions/tool_config.py", "tools")}


def runtime_imports(tree: ast.Module) -> set[str]:
    """Modules imported outside ``if TYPE_CHECKING:`` blocks."""
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for inner in ast.walk(node)
    }
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_agents_sub_packages_import_downwards_only() -> None:
    agents = PACKAGE / "agents"
    top = sorted(p.name for p in agents.glob("*.py") if p.name != "__init__.py")
    assert top == [], f"agents/ keeps its modules in sub-packages by job: {top}"
    assert sorted(p.name for p in agents.iterdir() if p.is_dir() and p.name[0] != "_") == sorted(
        AGENT_JOBS
    )
    upward = []
    for path in agents.rglob("*.py"):
        rel = path.relative_to(agents)
        job = rel.parts[0]
        for module in runtime_imports(ast.parse(path.read_text())):
            parts = module.split(".")
            if parts[:2] != ["lumina_app", "agents"] or len(parts) < 3 or parts[2] == job:
                continue
            target = parts[2]
            if (rel.as_posix(), target) in AGENT_JOB_EXCEPTIONS:
                continue
            if AGENT_JOBS.index(target) > AGENT_JOBS.index(job):
                upward.append(f"{rel} -> {module}")
    assert not upward, "\n".join(upward)


def test_routes_take_the_services_they_use_not_the_bag() -> None:
    """A route, or a helper of the routes, takes the services it uses (``RunsDep``,
    ``ConversationsDep``... of api/deps.py), never the whole ``Services``: deps.py alone
    reads the bag."""
    bag = []
    for path in sorted((PACKAGE / "api").glob("*.py")):
        if path.name == "deps.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.arg) and node.annotation is not None:
                names = {n.id for n in ast.walk(node.annotation) if isinstance(n, ast.Name)}
                if names & {"Services", "ServicesDep"}:
                    bag.append(f"{path.name}:{node.lineno} {node.arg}")
    assert not bag, "\n".join(bag)
