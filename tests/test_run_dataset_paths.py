"""run.json names the dataset by an absolute path (a hub dataset by its id), so that `score`
and `report` run from another working directory find the annotations and the screenshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _builders import step, write_app
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.runfolder.runinfo import DatasetInfo


def _dataset(root: Path) -> None:
    write_app(
        root,
        "Alpha",
        [
            [
                step("Images/a.png", "click a", (10, 10, 50, 50)),
                step("Images/b.png", "b", (1, 1, 9, 9)),
            ]
        ],
    )


def test_score_and_report_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    _dataset(work / "base")
    monkeypatch.chdir(work)
    code = main(["eval", "--data", "base", "--model", "oracle", "--out", "run", "--no-progress",
                 "--bootstrap", "10"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    info = json.loads((work / "run" / "run.json").read_text())
    assert Path(info["dataset"]["root"]).is_absolute()
    assert Path(info["dataset"]["source"]) == (work / "base").resolve()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["score", str(work / "run"), "--bootstrap", "10"]) == 0, capsys.readouterr().err
    code = main(["report", str(work / "run"), "--out", "site", "--no-plots", "--bootstrap", "10"])
    assert code == 0, capsys.readouterr().err
    out = capsys.readouterr()
    assert "no screenshots" not in out.out + out.err
    assert any((elsewhere / "site").rglob("*.png")) or any((elsewhere / "site").rglob("*.jp*g"))


def test_hub_dataset_recorded_as_its_id(tmp_path: Path) -> None:
    _dataset(tmp_path / "snap")
    ds = load_dataset(tmp_path / "snap")
    hub_ds = type(ds)(root=ds.root, apps=ds.apps, fingerprint=ds.fingerprint,
                      source="hf://Tajamul21/MedSPOT")  # fmt: skip
    info = DatasetInfo.of(hub_ds)
    assert info.source == "hf://Tajamul21/MedSPOT"
    assert Path(info.root).is_absolute()
