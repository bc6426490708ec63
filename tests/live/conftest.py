"""Shared fixtures of the live tests (real Orthanc, real chromium)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _orthanc_support import CHROMIUM, require_orthanc_stack


@pytest.fixture(scope="session")
def seed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of seeded DICOM files for the whole session."""
    return tmp_path_factory.mktemp("live-seed")


@pytest.fixture(scope="module")
def orthanc_env(tmp_path_factory: pytest.TempPathFactory, seed_cache: Path) -> Iterator[object]:
    """A started orthanc-explorer environment (its own Orthanc and chromium), per module."""
    require_orthanc_stack()
    from medspot.live.core.registry import create_environment

    env = create_environment(
        "orthanc-explorer",
        workdir=tmp_path_factory.mktemp("orthanc-env"),
        chromium=CHROMIUM,
        seed_cache=seed_cache,
    )
    env.start()
    yield env
    env.close()


@pytest.fixture(scope="module")
def dicomscope_env(tmp_path_factory: pytest.TempPathFactory, seed_cache: Path) -> Iterator[object]:
    """A started dicomscope environment (its own Xvfb, D-Bus and DICOMscope), per module."""
    from _desktop_support import require_dicomscope

    require_dicomscope()
    from medspot.live.core.registry import create_environment

    env = create_environment(
        "dicomscope", workdir=tmp_path_factory.mktemp("dicomscope-env"), seed_cache=seed_cache
    )
    env.start()
    yield env
    env.close()


@pytest.fixture(scope="module")
def invesalius_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A started invesalius environment (its own Xvfb, D-Bus and InVesalius), per module."""
    from _invesalius_support import require_invesalius

    require_invesalius()
    from medspot.live.core.registry import create_environment

    env = create_environment("invesalius", workdir=tmp_path_factory.mktemp("invesalius-env"))
    env.start()
    yield env
    env.close()
