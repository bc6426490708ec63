"""Shared fixtures: the real annotation files and a dataset root with placeholder screenshots;
every test's teardown stops what it started and left running (`_children`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from _children import stop_all

REPO_ROOT = Path(__file__).resolve().parents[1]


def annotations_path() -> Path:
    """$MEDSPOT_ANNOTATIONS, or `<repo>/../shared/medspot/Annotations`."""
    env = os.environ.get("MEDSPOT_ANNOTATIONS")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "medspot" / "Annotations"


@pytest.fixture(scope="session")
def annotations_dir() -> Path:
    """The folder of the real `*_Annotation.json` files (read-only); skips when absent."""
    path = annotations_path()
    if not path.is_dir() or not any(path.glob("*_Annotation.json")):
        if os.environ.get("CI"):
            pytest.fail(f"CI: the real annotations are missing at {path} (MEDSPOT_ANNOTATIONS)")
        pytest.skip(
            f"the real MedSPOT annotation files are not at {path} "
            "(set MEDSPOT_ANNOTATIONS to their folder)"
        )
    return path


@pytest.fixture(scope="session")
def placeholder_root(annotations_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset root with the real annotations and painted placeholder screenshots."""
    from medspot.testing import make_placeholder_root

    return make_placeholder_root(tmp_path_factory.mktemp("placeholder"), annotations_dir)


@pytest.fixture(autouse=True)
def _children_stopped() -> Iterator[None]:
    """After every test, pass or fail: the processes it started through `_children.start`
    that still run are stopped (SIGINT, a bounded wait, SIGKILL)."""
    yield
    stop_all()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `slow` tests first (a stable sort: each file's order is kept): `make test`'s
    `--dist worksteal` then starts the long ones early, and an idle worker takes short ones
    from the other's queue, so that no long test starts while the other worker runs out of
    work."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
