"""The BrowserGym tests (`tests/browsergym/`) pass in BrowserGym's own environment
(`make install-browsergym`: `.venv-browsergym`, or the interpreter `MEDSPOT_BROWSERGYM_PYTHON`
names), where browsergym-core and the Playwright it pins live: one file per test here, each run
by that interpreter's pytest with this run's settings (`MEDSPOT_REQUIRE_LIVE=1` makes a missing
part a failure there too). The environment missing is a skip, a failure under
`MEDSPOT_REQUIRE_LIVE=1`."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from _orthanc_support import require_live

from _children import start, stop

pytestmark = [pytest.mark.live, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "browsergym"
FILES = sorted(p.name for p in SUITE.glob("test_*.py"))
LIMIT_S = 900


def browsergym_python() -> Path:
    own = os.environ.get("MEDSPOT_BROWSERGYM_PYTHON")
    return Path(own) if own else REPO / ".venv-browsergym" / "bin" / "python"


def test_without_browsergym_the_error_names_the_extra() -> None:
    code = (
        "import sys\nsys.modules['browsergym'] = None\n"
        "try:\n    import medspot.live.browsergym\n"
        "except ImportError as e:\n"
        "    from medspot.errors import MedspotError\n"
        "    print(isinstance(e, MedspotError), e)\n"
    )
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("True ") and "pip install 'medspot[browsergym]'" in proc.stdout


def test_the_extra_leaves_playwright_to_browsergym() -> None:
    """`medspot[browsergym]` names browsergym-core, whose exact Playwright pin decides; it never
    asks for `live`'s newer Playwright (the two could not be installed together)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    names = [r.split(">")[0].split("=")[0].split("[")[0] for r in extras["browsergym"]]
    assert "browsergym-core" in names and "playwright" not in names
    assert not any(r.startswith("medspot[") and "live" in r for r in extras["browsergym"])


def test_the_suite_has_files() -> None:
    assert {"test_cheat.py", "test_harm_and_endings.py", "test_agentlab.py"} <= set(FILES)


@pytest.mark.parametrize("name", FILES)
def test_in_browsergyms_environment(name: str) -> None:
    python = browsergym_python()
    require_live(python.exists(), f"BrowserGym's environment ({python}: make install-browsergym)")
    proc = start(
        [str(python), "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", str(SUITE / name)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        stopped = stop(proc)
        pytest.fail(f"{name} ran past {LIMIT_S} s:\n{str(stopped.out)[-6000:]}")
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    assert proc.returncode == 0, f"{name} in {python}:\n{out[-8000:]}"
    if "skipped" in summary:
        pytest.skip(f"{name} in BrowserGym's environment: {summary}")
    assert " passed" in summary, out[-4000:]
