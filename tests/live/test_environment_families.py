"""Every environment family has the one shape docs/contributing.md ("A live environment") lists,
and core is handed the family's entry instead of reading a table of its own: an `Episode`
checks its task against the entry that made its environment, whether or not anything imported
the registry (nothing started: the environments' objects only)."""

from __future__ import annotations

import dataclasses
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from medspot.errors import DataError
from medspot.live.core.contract import EnvEntry, entry_of
from medspot.live.core.episode import Episode
from medspot.live.core.tools import ToolsetInfo
from medspot.live.envs.registry import ENVIRONMENTS
from medspot.live.envs.taskfiles import env_task_file

REPO = Path(__file__).resolve().parents[2]


def _package(entry: EnvEntry) -> str:
    """The package of a family: that of its environment class's module (`<package>.env`)."""
    module = entry.factory.__module__
    assert module.endswith(".env"), f"{entry.name}: its factory is not in its env.py: {module}"
    return module.removesuffix(".env")


@pytest.mark.parametrize("entry", ENVIRONMENTS, ids=lambda e: e.name)
def test_every_family_has_the_one_shape(entry: EnvEntry) -> None:
    package = _package(entry)
    folder = Path(importlib.import_module(package).__file__ or "").parent
    for part in ("env.py", "checks.py", "hooks.py", "tasks"):
        assert (folder / part).exists(), f"{entry.name}: no {part} in {folder}"
    assert importlib.import_module(package).ENTRY is entry
    # the environment class itself is the factory: no pass-through function in between
    assert isinstance(entry.factory, type), f"{entry.name}: factory {entry.factory!r}"
    assert entry.check_kinds is importlib.import_module(f"{package}.checks").CHECK_KINDS
    hooks = importlib.import_module(f"{package}.hooks")
    assert entry.system_packages == hooks.PACKAGES
    for hook in (entry.task_check, entry.doctor, entry.setup):
        assert hook is None or hook.__module__ == hooks.__name__, f"{entry.name}: {hook!r}"
    assert all(isinstance(t, ToolsetInfo) for t in entry.toolsets)


def test_an_episode_checks_its_task_against_the_entry_that_made_its_environment(
    tmp_path: Path,
) -> None:
    explorer = next(e for e in ENVIRONMENTS if e.name == "orthanc-explorer")
    other = dataclasses.replace(explorer, name="explorer-unregistered")  # in no registry
    ohif_task = env_task_file("ohif")[0].tasks[0]
    env = other.create(workdir=tmp_path / "oe")
    try:
        assert entry_of(env) is other
        with pytest.raises(DataError, match="cannot run in explorer-unregistered"):
            Episode(env, ohif_task)
    finally:
        env.close()


@pytest.mark.live  # a Python process of its own, where nothing imported the registry
def test_the_check_needs_no_registry_imported(tmp_path: Path) -> None:
    code = f"""
import sys
from pathlib import Path
from medspot.errors import DataError
from medspot.live.core.episode import Episode
from medspot.live.core.tasks import LiveTaskFile
from medspot.live.envs import ohif, orthanc_explorer
text = (ohif.ENTRY.tasks / "ohif.json").read_text(encoding="utf-8")
task = LiveTaskFile.model_validate_json(text).tasks[0]
env = orthanc_explorer.ENTRY.create(workdir=Path({str(tmp_path / "oe")!r}))
assert "medspot.live.envs.registry" not in sys.modules
try:
    Episode(env, task)
except DataError as e:
    print(e)
finally:
    env.close()
"""
    run = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "cannot run in orthanc-explorer" in run.stdout, run.stdout + run.stderr
