"""The import graph of bot/ and sandbox/, read from the source: no cycle, and the sandbox knows nothing of the App."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "sandbox")


def module_name(path: Path) -> str:
    """`bot/ledger/__init__.py` -> `bot.ledger`; `bot/web/app.py` -> `bot.web.app`."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, Path]:
    """Every module of the two packages, by dotted name."""
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def imported(tree: ast.AST, known: set[str]) -> set[str]:
    """Our modules a module imports, at any depth (function-level imports count: they run too)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a import b` needs the module a.b when there is one, else a's own names.
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return {name for name in found if name in known}


def graph() -> dict[str, set[str]]:
    """Module -> the modules it imports, each with the packages above it (importing one runs their __init__)."""
    mods = sources()
    known = set(mods)
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets = imported(ast.parse(path.read_text(), str(path)), known)
        # Importing `a.b.c` runs `a` and `a.b` too, except those this module is itself inside of.
        parents = {".".join(t.split(".")[:i]) for t in targets for i in range(1, t.count(".") + 1)}
        parents = {p for p in parents if p in known and not name.startswith(f"{p}.")}
        edges[name] = (targets | parents) - {name}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str]:
    """One import cycle, or [] when there is none."""
    try:
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def test_the_source_tree_is_read():
    edges = graph()
    assert "bot.pipeline.run" in edges and "sandbox.docker" in edges
    assert "bot.github.gateway" in edges["bot.pipeline.run"]


def test_no_module_import_cycle():
    assert cycle(graph()) == []


def test_no_cycle_between_packages():
    def package(name: str) -> str:
        return ".".join(name.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for name, targets in graph().items():
        packages.setdefault(package(name), set()).update(package(t) for t in targets if package(t) != package(name))
    assert cycle(packages) == []


def part(name: str) -> str:
    """`bot.pipeline.judge.verify` -> `bot.pipeline.judge`; `bot.pipeline.run` stays itself (a part of its own)."""
    return ".".join(name.split(".")[:3])


def test_the_pipelines_parts_import_only_downward():
    # Sub-packages and modules of bot/pipeline/ in one order: no two parts reach each other, however indirectly.
    parts: dict[str, set[str]] = {}
    for name, targets in graph().items():
        if name.startswith("bot.pipeline."):
            inside = {part(t) for t in targets if t.startswith("bot.pipeline.")}
            parts.setdefault(part(name), set()).update(inside - {part(name)})
    assert len(parts) > 10
    assert cycle(parts) == []


def test_the_workers_git_is_at_the_pipelines_base():
    edges = {name: targets for name, targets in graph().items() if name.startswith("bot.pipeline.git.")}
    assert {"bot.pipeline.git.gitops", "bot.pipeline.git.hostgit", "bot.pipeline.git.quarantine"} <= set(edges)
    above = {
        t
        for targets in edges.values()
        for t in targets
        if t.startswith("bot.pipeline.") and part(t) != "bot.pipeline.git"
    }
    assert above == set()


def test_the_pipeline_imports_nothing_of_the_webhooks():
    reaching = {
        name
        for name, targets in graph().items()
        if name.startswith("bot.pipeline") and any(t.startswith("bot.webhooks") for t in targets)
    }
    assert reaching == set()


def test_sandbox_imports_nothing_of_bot():
    offending = {name: sorted(t for t in targets if t.startswith("bot")) for name, targets in graph().items()}
    assert {name: t for name, t in offending.items() if name.startswith("sandbox") and t} == {}


def test_a_cycle_is_found():
    assert set(cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}})) == {"a", "b", "c"}
