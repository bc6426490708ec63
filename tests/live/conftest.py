"""Shared fixtures of the live tests (real Orthanc, real chromium)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import KillAndResume, kill, processes_mentioning


@pytest.fixture(scope="session")
def seed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of seeded DICOM files for the whole session."""
    return tmp_path_factory.mktemp("live-seed")


# The started environments below are shared by the tests that need a started one and not a
# fresh one (a reset brings it to each task's start: what `tests/live/test_resets.py` holds it
# to); a test that kills, closes or compares with a fresh instance starts its own. The desktop
# ones are shared by the whole session; the web ones by a test module only: Playwright's sync
# API marks its event loop as running in the thread that holds it, between calls too, so while
# one lives in a worker's main thread no later test of that worker can `asyncio.run` (the
# run commands themselves go through `medspot.interrupts.run_async`, a test's own code does
# not); a module's is closed before the next module's tests.


@pytest.fixture(scope="module")
def orthanc_env(tmp_path_factory: pytest.TempPathFactory, seed_cache: Path) -> Iterator[object]:
    """A started orthanc-explorer environment (its own Orthanc and chromium)."""
    require_orthanc_stack()
    from medspot.live.envs.registry import create_environment

    env = create_environment(
        "orthanc-explorer",
        workdir=tmp_path_factory.mktemp("orthanc-env"),
        chromium=CHROMIUM,
        seed_cache=seed_cache,
    )
    env.start()
    yield env
    env.close()


@pytest.fixture(scope="session")
def dicomscope_env(tmp_path_factory: pytest.TempPathFactory, seed_cache: Path) -> Iterator[object]:
    """A started dicomscope environment (its own Xvfb, D-Bus and DICOMscope)."""
    from _desktop_support import require_dicomscope

    require_dicomscope()
    from medspot.live.envs.registry import create_environment

    env = create_environment(
        "dicomscope", workdir=tmp_path_factory.mktemp("dicomscope-env"), seed_cache=seed_cache
    )
    env.start()
    yield env
    env.close()


@pytest.fixture(scope="module")
def ohif_env(tmp_path_factory: pytest.TempPathFactory, seed_cache: Path) -> Iterator[object]:
    """A started ohif environment (its own Orthanc, viewer server and chromium)."""
    from test_ohif_env import require_ohif_stack

    require_ohif_stack()
    from medspot.live.envs.registry import create_environment

    env = create_environment(
        "ohif", workdir=tmp_path_factory.mktemp("ohif-env"), chromium=CHROMIUM,
        seed_cache=seed_cache,
    )  # fmt: skip
    env.start()
    yield env
    env.close()


@pytest.fixture
def kill_and_resume() -> Iterator[Callable[[Sequence[str], Mapping[str, str]], KillAndResume]]:
    """`kill_and_resume(cmd, env)`: the command killed in mid-run and resumed
    (`KillAndResume`), its environments' private folders (its TMPDIR) in a short private
    folder of its own (chromium's socket path must stay short); whatever still runs from the
    folders is killed and they are removed after the test."""
    folders: list[Path] = []

    def make(cmd: Sequence[str], env: Mapping[str, str]) -> KillAndResume:
        workroot = Path(tempfile.mkdtemp(prefix="mskr", dir="/tmp"))
        folders.append(workroot)
        return KillAndResume(cmd, {**env, "TMPDIR": str(workroot)}, workroot)

    yield make
    for folder in folders:
        kill(processes_mentioning(str(folder)))
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def invesalius_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A started invesalius environment (its own Xvfb, D-Bus and InVesalius)."""
    from _invesalius_support import require_invesalius

    require_invesalius()
    from medspot.live.envs.registry import create_environment

    # a workdir as deep as a user's run folder can be: too deep for InVesalius's own sockets in
    # it (`instance.private_tmp`); the tests that build surfaces in it show they are built
    deep = tmp_path_factory.mktemp("invesalius-env") / ("a-run-folder-" + "deep" * 12)
    env = create_environment("invesalius", workdir=deep)
    env.start()
    yield env
    env.close()
