"""Running `inspect eval` on medspot's tasks as a user who ran `pip install 'medspot[inspect]'`
would: the package installed from this working tree with the `inspect_ai` entry point that
pyproject.toml declares (`inspect_site`: an editable install of a copy of the tree's
pyproject.toml, README and src/ into a prefix of the test session, its metadata first on
PYTHONPATH, the sources still this tree's), so `inspect eval medspot/medspot` is found by
name, with no file path."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from _children import start, stop

__all__ = ["REPO", "inspect_env", "inspect_site", "run_inspect"]

REPO = Path(__file__).resolve().parents[1]
INSPECT_TIMEOUT_S = 900.0


@pytest.fixture(scope="session")
def inspect_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site-packages folder of medspot installed (editable, no dependencies) from a copy
    of this tree: its dist-info carries pyproject.toml's entry points."""
    pytest.importorskip("inspect_ai")
    pytest.importorskip("setuptools")
    base = tmp_path_factory.mktemp("inspect-install")
    tree, prefix = base / "tree", base / "prefix"
    kept = _installed_metadata()
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, tree / name)
    shutil.copytree(
        REPO / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    proc = subprocess.run(
        # --ignore-installed: pip would otherwise uninstall the medspot of the running
        # environment before installing into the prefix
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--ignore-installed", "--prefix", str(prefix), "-e", str(tree)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (site,) = prefix.glob("lib/python*/site-packages")
    entry_points = next(site.glob("medspot-*.dist-info")) / "entry_points.txt"
    assert "[inspect_ai]" in entry_points.read_text(), entry_points.read_text()
    assert kept is None or kept.exists(), f"pip removed the environment's medspot ({kept})"
    return site


def _installed_metadata() -> Path | None:
    """The METADATA file of the medspot installed in the running environment (None: none)."""
    try:
        dist = importlib.metadata.distribution("medspot")
    except importlib.metadata.PackageNotFoundError:
        return None
    meta = next((f for f in dist.files or () if f.name == "METADATA"), None)
    return Path(str(meta.locate())) if meta is not None else None


def inspect_env(site: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an `inspect` command: the installed metadata first on PYTHONPATH,
    then this tree's sources (what the editable install points at)."""
    env = dict(os.environ)
    paths = [str(site), str(REPO / "src")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["INSPECT_LOG_LEVEL"] = "warning"
    env.update(extra or {})
    return env


def run_inspect(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = INSPECT_TIMEOUT_S
) -> tuple[int, str]:
    """`inspect ARGV...` (the console script beside this Python); its status and output."""
    exe = Path(sys.executable).parent / "inspect"
    p = start(
        [str(exe), *argv], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = str(stop(p).out or "")
        pytest.fail(f"inspect {' '.join(argv)} did not end in {timeout:.0f} s:\n{out[-3000:]}")
    return p.returncode, out
