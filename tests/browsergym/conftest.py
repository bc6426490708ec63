"""The BrowserGym tests: they run in BrowserGym's own environment (`make install-browsergym`:
`.venv-browsergym`, with `browsergym-core` and the Playwright it pins), started one file at a
time by `tests/live/test_browsergym_suite.py` of the main suite. In an environment without
BrowserGym (the main one) nothing here is collected."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    import browsergym.core  # noqa: F401
except ImportError:
    collect_ignore_glob = ["test_*.py"]

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "live"))


@pytest.fixture(scope="session")
def seed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of seeded DICOM files for the whole session."""
    return tmp_path_factory.mktemp("bgym-seed")


@pytest.fixture
def make_env(seed_cache: Path, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """`make_env(env, task)`: a BrowserGym environment of a packaged task (`gym.make` with the
    session's seed cache and the coordinate actions), closed after the test."""
    from _bgym_support import make_task_env

    made: list[Any] = []

    def make(env: str, task: str, **kwargs: Any) -> Any:
        e = make_task_env(env, task, seed_cache, tmp_path, **kwargs)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()
