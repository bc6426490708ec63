"""The name of every run-folder file has one owner, `medspot.runfolder.layout`: no module
outside `runfolder/` spells one out in its code (a message, a path), it names layout's constant.
Docstrings and a command's help text are prose about the files and may name them."""

from __future__ import annotations

import ast
from pathlib import Path

from medspot.runfolder import layout

SRC = Path(__file__).resolve().parents[1] / "src" / "medspot"
# the file names (`run.json`, `live_journal.jsonl`, ...): the folders' names are common words
NAMES = [v for n in layout.__all__ if isinstance(v := getattr(layout, n), str) and "." in v]
PROSE = ("help", "description")  # argparse's text for a reader


def _prose(tree: ast.AST) -> set[int]:
    """The string constants that are docstrings or a command's help text."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg in PROSE:
            out.update(id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant))
    return out


def test_no_module_spells_out_a_run_folder_file_name() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if "runfolder" in path.relative_to(SRC).parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = _prose(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                hits = [n for n in NAMES if n in node.value and id(node) not in prose]
                found += [f"{path.relative_to(SRC)}:{node.lineno}: {n}" for n in hits]
    assert found == []
    assert "run.json" in NAMES and "live_journal.jsonl" in NAMES  # not vacuous
