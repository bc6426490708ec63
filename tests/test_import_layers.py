"""The import graph of `src/medspot` (docs/architecture.md): every import of one medspot module
by another, at module level or inside a function (a lazy import, one under `TYPE_CHECKING`),
goes to the importer's own layer or a layer below it, and the imports have no circle (a module
importing its own package, as a package's modules import their siblings' names, is not one).
Read from the sources with `ast`, so a lazy import counts as much as a top-level one; the checks
are functions of a source tree, tried on small packages written here too."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "medspot"

# bottom to top; a module's layer is that of its longest listed prefix
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "errors",
        "geometry",
        "_version",
        "_gc",
        "interrupts",
        "cache",
        "progress",
        "limits",
        "spelling",
        "jsonsafe",
        "atomic_write",
    ),
    ("dataset",),
    ("scoring",),
    # the adapters (the contract, the cards, the backends, the baselines, the zoom-in) are
    # wholly below the run folder that journals their calls: they write no run folder
    ("adapters",),
    ("runfolder",),
    ("runner", "pipeline", "dryrun", "synth", "testing"),
    ("live",),
    # MedSPOT from other harnesses (Inspect): the static pipeline and live serve, from outside
    ("integrations",),
    ("report",),
    ("commands", "cli", "__main__", ""),  # "": the package's public face (medspot/__init__)
)
LIVE_LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("services",),
    ("drivers",),
    ("envs",),
    ("images",),  # the environments' container images: what the container executor runs
    ("agents",),
    ("loop",),
    ("gym",),
    ("browsergym",),  # BrowserGym's tasks over core/ + envs/ (pages BrowserGym opened)
    ("serve",),  # `medspot live serve`: MCP and OpenEnv servers over the loop's episodes
    ("",),  # medspot.live itself: its public face
)

Graph = dict[str, list[str]]  # module -> the medspot modules it imports, anywhere in it


def _module(src: Path, path: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(src: Path, path: Path) -> Iterator[str]:
    """Every medspot module `path` imports, wherever in the file the import is."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from pkg import sub` imports the module pkg.sub when there is one
            subs = [f"{node.module}.{a.name}" for a in node.names]
            mods = [m for m in subs if _is_module(src, m)]
            names = mods if len(mods) == len(subs) else [node.module, *mods]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name == "medspot" or name.startswith("medspot."):
                yield name


def _is_module(src: Path, name: str) -> bool:
    rel = Path(*name.split("."))
    return (src / rel.with_suffix(".py")).is_file() or (src / rel / "__init__.py").is_file()


def read_graph(src: Path) -> Graph:
    """The import graph of the package `medspot` under `src`."""
    return {
        _module(src, p): list(_imports(src, p)) for p in sorted((src / "medspot").rglob("*.py"))
    }


def _layer(name: str, layers: tuple[tuple[str, ...], ...]) -> int:
    """The layer of `name` (a dotted path below its package, "" for the package itself): that
    of its longest listed prefix."""
    ranked = [
        (len(prefix), i)
        for i, prefixes in enumerate(layers)
        for prefix in prefixes
        if name == prefix or name.startswith(prefix + ".")
    ]
    if not ranked:
        raise LookupError(name)
    return max(ranked)[1]


def _rank(module: str) -> tuple[int, int]:
    parts = module.split(".")[1:]
    rank = _layer(".".join(parts), LAYERS)
    if parts[:1] != ["live"]:
        return rank, 0
    return rank, _layer(".".join(parts[1:2]), LIVE_LAYERS)


def upward_imports(graph: Graph) -> list[str]:
    """`a -> b` for every import of a module `b` in a layer above `a`'s."""
    return [f"{a} -> {b}" for a, imports in graph.items() for b in imports
            if b in graph and _rank(b) > _rank(a)]  # fmt: skip


def import_circle(graph: Graph) -> list[str] | None:
    """A circle of imports (its modules, the first repeated at the end), or None."""
    edges = {
        a: {b for b in imports if b in graph and not (a + ".").startswith(b + ".")}
        for a, imports in graph.items()
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
            return circle
    return None


GRAPH = read_graph(SRC)


def test_every_module_has_a_layer() -> None:
    for module in GRAPH:
        try:
            _rank(module)
        except LookupError:
            pytest.fail(f"{module} is in no layer of this test (docs/architecture.md)")


def test_no_import_goes_to_a_layer_above() -> None:
    assert upward_imports(GRAPH) == []


def test_imports_have_no_circle() -> None:
    circle = import_circle(GRAPH)
    assert circle is None, "import circle: " + " -> ".join(circle or ())


def test_the_rules_see_an_upward_import() -> None:
    """The checks above are not vacuous: the layers order what the package really imports."""
    assert _rank("medspot.live.loop.scheduler") > _rank("medspot.live.core.episode")
    assert _rank("medspot.commands.live") > _rank("medspot.live")
    assert _rank("medspot.runfolder.journal") > _rank("medspot.adapters.zoom")
    assert any(b.startswith("medspot.live.core") for b in GRAPH["medspot.live.loop.scheduler"])


def _package(root: Path, files: dict[str, str]) -> Path:
    """A package `medspot` of `files` (path below `medspot/` -> source) under `root/src`, with
    every `__init__.py` its folders need."""
    src = root / "src"
    for rel, text in files.items():
        path = src / "medspot" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        for folder in [path.parent, *path.parent.parents]:
            if folder == src:
                break
            (folder / "__init__.py").touch()
    return src


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """The journal imports the reader at module level, the reader imports the journal inside a
    function: a circle, though no module-level import closes it."""
    src = _package(tmp_path, {
        "runfolder/journal.py": "from medspot.runfolder.reader import Run\n",
        "runfolder/reader.py": """\
            class Run: ...


            def advice() -> str:
                from medspot.runfolder.journal import JOURNAL
                return JOURNAL
            """,
    })  # fmt: skip
    graph = read_graph(src)
    assert upward_imports(graph) == []  # one layer: only the circle is wrong
    assert import_circle(graph) == [
        "medspot.runfolder.journal",
        "medspot.runfolder.reader",
        "medspot.runfolder.journal",
    ]


def test_an_upward_function_level_import_is_found(tmp_path: Path) -> None:
    """An adapter (below the run folder) importing the run folder's writer inside a method."""
    src = _package(tmp_path, {
        "runfolder/writer.py": "def atomic_write_json(path, obj): ...\n",
        "adapters/cache.py": """\
            class Cache:
                def put(self, path, obj):
                    if path:
                        from medspot.runfolder.writer import atomic_write_json
                        atomic_write_json(path, obj)
            """,
    })  # fmt: skip
    graph = read_graph(src)
    assert import_circle(graph) is None
    assert upward_imports(graph) == ["medspot.adapters.cache -> medspot.runfolder.writer"]


# Inside `medspot.live`, the loop is the one door to the run folder and to scoring
# (docs/architecture.md); an environment package imports no other one but the shared ones.
LIVE_DOOR = "medspot.live.loop"
RUN_FOLDER_AND_SCORING = ("medspot.runfolder", "medspot.scoring")
ENVS = "medspot.live.envs"
SHARED_ENV_PACKAGES = ("orthanc",)


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_only_the_live_loop_imports_the_run_folder_and_scoring() -> None:
    through = [
        f"{a} -> {b}"
        for a, imports in GRAPH.items()
        if _under(a, "medspot.live") and not _under(a, LIVE_DOOR)
        for b in imports
        if any(_under(b, p) for p in RUN_FOLDER_AND_SCORING)
    ]
    assert through == []
    assert any(  # not vacuous: the loop does import them
        _under(b, "medspot.runfolder") for b in GRAPH["medspot.live.loop.steplog"]
    )


ENV_PACKAGES = {p.parent.name for p in (PACKAGE / "live" / "envs").glob("*/__init__.py")}


def _env_package(module: str) -> str | None:
    """The environment package `module` is in (`ohif`, `orthanc`, ...), None outside one."""
    parts = module.split(".")
    if len(parts) > 3 and _under(module, ENVS) and parts[3] in ENV_PACKAGES:
        return parts[3]
    return None


def test_environment_packages_import_no_other_environment() -> None:
    pairs = {
        (pa, pb)
        for a, imports in GRAPH.items()
        if (pa := _env_package(a)) is not None
        for b in imports
        if (pb := _env_package(b)) not in (None, pa)
    }
    assert {(a, b) for a, b in pairs if b not in SHARED_ENV_PACKAGES} == set()
    assert ("ohif", "orthanc") in pairs  # not vacuous: the shared package is seen


def _command_of(module: str, commands: set[str]) -> str | None:
    """The command `module` belongs to: a command's module, or any module of a command's
    package (`commands/live/`); None for what commands share (`_common`, `_runlog`)."""
    return next((c for c in commands if _under(module, c)), None)


def test_no_command_module_imports_another() -> None:
    """What several commands share comes from `commands._common` (or `_runlog`), never from
    another command's module (docs/contributing.md "A command"); the modules of a command's
    package may import each other (and share a `_common` of their own)."""
    from medspot.cli import COMMAND_MODULES

    commands = set(COMMAND_MODULES)
    crossing = [
        f"{a} -> {b}"
        for a, imports in GRAPH.items()
        if (own := _command_of(a, commands)) is not None
        for b in imports
        if _command_of(b, commands) not in (None, own)
    ]
    assert crossing == []
    assert "medspot.commands.live" in commands  # not vacuous
    assert _command_of("medspot.commands.live.run", commands) == "medspot.commands.live"
