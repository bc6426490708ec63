"""The import graph of `src/medspot` (docs/architecture.md): every import of one medspot module
by another, at module level or inside a function, goes to the importer's own layer or a layer
below it, and the module-level imports have no circle (a module importing its own package, as
a package's modules import their siblings' names, is not one). Read from the sources with
`ast`, so a lazy import counts as much as a top-level one."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "medspot"

# bottom to top; a module's layer is that of its longest listed prefix
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "geometry", "_version", "_gc", "interrupts", "cache", "progress", "limits"),
    ("dataset",),
    ("scoring",),
    ("runfolder",),
    ("adapters",),
    ("runner", "pipeline", "dryrun", "synth", "testing"),
    ("live",),
    ("report",),
    ("commands", "cli", "__main__", ""),  # "": the package's public face (medspot/__init__)
)
LIVE_LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("services",),
    ("drivers",),
    ("envs",),
    ("agents",),
    ("loop",),
    ("gym",),
    ("serve",),  # `medspot live serve`: MCP and OpenEnv servers over the loop's episodes
    ("",),  # medspot.live itself: its public face
)


def _module(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(imported medspot module, at module level) for every import in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from pkg import sub` imports the module pkg.sub when there is one
            subs = [f"{node.module}.{a.name}" for a in node.names]
            mods = [m for m in subs if _is_module(m)]
            names = mods if len(mods) == len(subs) else [node.module, *mods]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name == "medspot" or name.startswith("medspot."):
                yield name, id(node) in top


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (SRC / rel.with_suffix(".py")).is_file() or (SRC / rel / "__init__.py").is_file()


def _graph() -> dict[str, list[tuple[str, bool]]]:
    return {_module(p): list(_imports(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def _rank(module: str) -> tuple[int, int]:
    parts = module.split(".")[1:]
    first = parts[0] if parts else ""
    rank = next(i for i, names in enumerate(LAYERS) if first in names)
    if first != "live":
        return rank, 0
    second = parts[1] if len(parts) > 1 else ""
    return rank, next(i for i, names in enumerate(LIVE_LAYERS) if second in names)


GRAPH = _graph()


def test_every_module_has_a_layer() -> None:
    for module in GRAPH:
        try:
            _rank(module)
        except StopIteration:
            pytest.fail(f"{module} is in no layer of this test (docs/architecture.md)")


def test_no_import_goes_to_a_layer_above() -> None:
    upward = [
        f"{a} -> {b}"
        for a, imports in GRAPH.items()
        for b, _ in imports
        if b in GRAPH and _rank(b) > _rank(a)
    ]
    assert upward == []


def test_module_level_imports_have_no_circle() -> None:
    edges = {
        a: {b for b, top in imports if top and b in GRAPH and not (a + ".").startswith(b + ".")}
        for a, imports in GRAPH.items()
    }
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return [*path[path.index(n) :], n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (circle := visit(m)):
            pytest.fail("import circle: " + " -> ".join(circle))


def test_the_rules_see_an_upward_import() -> None:
    """The checks above are not vacuous: the layers order what the package really imports."""
    assert _rank("medspot.live.loop.scheduler") > _rank("medspot.live.core.episode")
    assert _rank("medspot.commands.live") > _rank("medspot.live")
    assert any(b.startswith("medspot.live.core") for b, _ in GRAPH["medspot.live.loop.scheduler"])
