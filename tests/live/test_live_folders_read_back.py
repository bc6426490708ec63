"""Live run folders of the real Orthanc Explorer as they are found later: a run still running
or killed before its results (the report's advice names who holds it, or the command that
resumes it, and that command works: never `medspot score`), a folder copied elsewhere (its own
screens, a missing one said in its frame, a log line and a note), beside a static run (compare
and leaderboard say why, not `score --protocol`), guided beside agent mode (`--mixed` names
each row's mode)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV, kill, processes_mentioning

from _children import start, stop
from medspot.cli import main
from medspot.runfolder.layout import LIVE_JOURNAL

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
TASK = "open-study-ct-doe-john"


@pytest.fixture(scope="module")
def workroot() -> Iterator[Path]:
    require_orthanc_stack()
    root = Path(tempfile.mkdtemp(prefix="msrb", dir="/tmp"))  # short: chromium's socket
    yield root
    kill(processes_mentioning(str(root)))
    shutil.rmtree(root, ignore_errors=True)


def _argv(out: Path, *extra: str, tasks: str = TASK) -> list[str]:
    return ["live", "run", "--env", ENV, "--model", "oracle", "--tasks", tasks, "--out",
            str(out), "--env-option", f"chromium={CHROMIUM}", "--no-progress",
            "--bootstrap", "20", *extra]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, workroot: Path) -> dict[str, Path]:
    """The oracle on one task in guided and in agent mode, and a static run."""
    from medspot.synth.generate import generate

    base = tmp_path_factory.mktemp("runs")
    out = {"guided": base / "guided", "agent": base / "agent", "static": base / "static"}
    assert main(_argv(out["guided"])) == 0
    assert main(_argv(out["agent"], "--mode", "agent")) == 0
    generate(base / "suite", tasks=2, seed=0, apps=1)
    assert main(["eval", "--data", str(base / "suite"), "--model", "random", "--out",
                 str(out["static"]), "--no-progress", "--bootstrap", "20"]) == 0  # fmt: skip
    return out


def test_a_live_folder_without_results_gets_advice_that_works(
    tmp_path: Path, workroot: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TMPDIR=str(workroot))
    tasks = f"{TASK},lookup-doe-joan,open-study-mr-doe-john"
    cmd = [sys.executable, "-m", "medspot", *_argv(out, tasks=tasks)]
    proc = start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    journal = out / LIVE_JOURNAL
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(b'"type":"step"') >= 1:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
    assert main(["report", str(out), "--out", str(tmp_path / "early")]) == 2
    err = capsys.readouterr().err
    assert f"it is still running (pid {proc.pid})" in err and "medspot score" not in err
    stopped = stop(proc, signal.SIGKILL)  # killed: run.json stays "running", no results
    assert stopped.returncode == -signal.SIGKILL
    kill(processes_mentioning(str(workroot)))
    assert json.loads((out / "run.json").read_text())["status"] == "running"
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert "medspot score" not in err and "was stopped (killed)" in err, err
    advised = f"medspot live run --env {ENV} --model oracle --out {out} ..."
    assert advised in err and "resumes from the journal" in err
    # the advice works: the command that started it, run again, resumes and writes results
    assert main(_argv(out, tasks=tasks)) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0


def test_a_copied_folder_reads_its_own_screens_and_says_which_is_missing(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(runs["guided"], copy)
    moved = runs["guided"].with_name("guided-moved")
    runs["guided"].rename(moved)  # run.json's dataset.root names a folder gone
    try:
        screens = sorted((copy / "screens").iterdir())
        assert len(screens) >= 2
        screens[0].unlink()
        assert main(["report", str(copy), "--out", str(tmp_path / "report"), "--no-plots"]) == 0
    finally:
        moved.rename(runs["guided"])
    captured = capsys.readouterr()
    assert f"{len(screens) - 1} thumbnails" in captured.out
    missing = f"screens/{screens[0].name}"
    assert f"1 screenshot(s) missing under {copy}: {missing}" in caplog.text  # the log line
    assert f"1 of {len(screens)} screenshots are missing" in captured.err  # the note
    page = next((tmp_path / "report").glob("live-*.html")).read_text()
    assert f"screenshot missing: {missing}" in page  # said in its frame
    assert page.count("<img ") == len(screens) - 1


def test_live_beside_static_is_refused_with_the_right_reason(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["compare", str(runs["static"]), str(runs["guided"])],
                 ["leaderboard", str(runs["static"]), str(runs["guided"])]):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "live runs (oracle) and static runs (random) measure different things" in err
        assert "neither can be re-scored" in err and "medspot score" not in err


def test_leaderboard_of_guided_and_agent_runs_names_each_mode(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    pair = [str(runs["guided"]), str(runs["agent"])]
    assert main(["leaderboard", *pair]) == 2
    assert "different modes" in capsys.readouterr().err
    assert main(["leaderboard", *pair, "--mixed"]) == 0
    table = capsys.readouterr().out
    head = next(line for line in table.splitlines() if line.startswith("| #"))
    assert "| mode |" in head
    rows = [line for line in table.splitlines() if line.startswith("| 1 ") or
            line.startswith("| 2 ")]  # fmt: skip
    assert sorted(line.split(" | ")[2] for line in rows) == ["agent", "guided"]
    assert "MIXED live modes" in table
    assert main(["leaderboard", *pair, "--mixed", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    col = lines[0].split(",").index("mode")
    assert sorted(line.split(",")[col] for line in lines[1:]) == ["agent", "guided"]
