"""The package face: every name in `medspot.__all__` resolves, and a run through it works."""

from __future__ import annotations

from pathlib import Path

import pytest

import medspot
from _report_runs import write_dataset


def test_every_public_name_resolves() -> None:
    for name in medspot.__all__:
        assert getattr(medspot, name) is not None
    with pytest.raises(AttributeError):
        _ = medspot.no_such_name  # type: ignore[attr-defined]
    assert issubclass(medspot.RunFolderError, medspot.MedspotError)


def test_evaluate_and_rescore_through_the_face(tmp_path: Path) -> None:
    ds = medspot.load_dataset(write_dataset(tmp_path / "data"))
    req = medspot.EvalRequest(dataset=ds, model="oracle", out=tmp_path / "run", n_boot=20)
    out = medspot.evaluate(req)
    assert out.info.status == "complete"
    info, score = medspot.rescore(tmp_path / "run", ds, protocol_name="upstream-a", n_boot=20)
    assert info.protocol == "upstream-a" and info.rescored_from == str(tmp_path / "run")
    assert score.overall.values["task_completion_accuracy"] == 1.0
