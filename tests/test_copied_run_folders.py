"""A run folder copied elsewhere is read and written where it is now: `score`, `report`,
`leaderboard` and `compare` on a copy never read, write or name the path its run.json recorded
(a live run's dataset root is the run folder itself), static and live runs alike."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from _report_runs import PLAN_A, PLAN_B, make_run, write_dataset
from medspot.cli import main

LIVE = Path(__file__).parent / "fixtures" / "live_run_before_typed_fields"


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _live_copy(tmp_path: Path, name: str, original: Path) -> Path:
    """The fixture as a live run written at `original`, then copied to `name` (the original
    is gone: nothing may read it)."""
    copy = Path(shutil.copytree(LIVE, tmp_path / name))
    info = json.loads((copy / "run.json").read_text())
    info["dataset"]["root"] = str(original)
    (copy / "run.json").write_text(json.dumps(info))
    return copy


def test_score_on_a_copied_live_run_names_the_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = tmp_path / "written-here"
    copy = _live_copy(tmp_path, "copy", original)
    before = _digest(copy)
    assert main(["score", str(copy)]) == 2
    err = capsys.readouterr().err
    assert f"{copy} is a live run" in err and str(original) not in err
    assert _digest(copy) == before and not original.exists()  # nothing written anywhere


def test_report_leaderboard_compare_on_copied_live_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = tmp_path / "written-here"
    a, b = _live_copy(tmp_path, "a", original), _live_copy(tmp_path, "b", original)
    site = tmp_path / "site"
    assert main(["report", str(a), "--out", str(site), "--no-plots", "--bootstrap", "20"]) == 0
    index = (site / "index.html").read_text()
    assert str(original) not in index and str(a) in index  # its dataset root is the copy
    capsys.readouterr()
    for argv in (["leaderboard", str(a), str(b)], ["compare", str(a), str(b), "--bootstrap",
                                                    "20", "--format", "json"]):  # fmt: skip
        assert main(argv) == 0
        assert str(original) not in capsys.readouterr().out
    assert not original.exists()


def test_score_on_a_copied_static_run_writes_the_copy_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_dataset(tmp_path / "data", images=False)
    run = make_run(tmp_path / "run", root, PLAN_A, model="m-a")
    copy = Path(shutil.copytree(run, tmp_path / "copy"))
    before = _digest(run)
    assert main(["score", str(copy), "--protocol", "upstream-a", "--bootstrap", "20"]) in (0, 1)
    assert _digest(run) == before  # the original is untouched
    info = json.loads((copy / "run.json").read_text())
    assert info["protocol"] == "upstream-a" and info["rescored_from"] == str(copy)
    other = make_run(tmp_path / "other", root, PLAN_B, model="m-b")
    capsys.readouterr()
    assert main(["leaderboard", str(copy), str(other), "--mixed"]) == 0
    assert str(run) not in capsys.readouterr().out
