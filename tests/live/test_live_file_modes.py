"""A live run folder follows the umask like a static one: the screens (written by the run-folder
writer's `atomic_write_bytes`), the journal, run.json and the results."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.live


def test_live_screens_and_files_follow_the_umask(tmp_path: Path, seed_cache: Path) -> None:
    require_orthanc_stack()
    out = tmp_path / "run"
    mask = 0o027
    cmd = [
        sys.executable, "-m", "medspot", "live", "run", "--env", ENV, "--model", "oracle",
        "--tasks", "open-study-ct-doe-john", "--out", str(out), "--no-progress",
        "--bootstrap", "20", "--env-option", f"chromium={CHROMIUM}",
    ]  # fmt: skip
    cache = tmp_path / "cache"  # the session's seeded studies as the default cache's
    cache.mkdir()
    (cache / "live").symlink_to(seed_cache)
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MEDSPOT_CACHE=str(cache))
    proc = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=600,
        preexec_fn=lambda: os.umask(mask),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    screens = sorted((out / "screens").glob("*.png"))
    assert len(screens) >= 2  # the start screen and the screens after each action
    files = [p for p in out.rglob("*") if p.is_file() and p.name != ".lock"]
    assert {"run.json", "live_journal.jsonl"} <= {p.name for p in files}
    want = 0o666 & ~mask
    wrong = {str(p.relative_to(out)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    wrong = {k: v for k, v in wrong.items() if v != oct(want)}
    assert not wrong, f"not {oct(want)}: {wrong}"
