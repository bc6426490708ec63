"""`medspot demo` end to end on a tiny synthetic suite, with real OCR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medspot.cli import main


@pytest.mark.ocr
def test_demo_end_to_end_on_a_tiny_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("rapidocr", reason="pip install 'medspot[ocr]'")
    out, cache = tmp_path / "demo", tmp_path / "cache"
    # the medspot cache (the OCR's words) of this test, not the user's
    monkeypatch.setenv("MEDSPOT_CACHE", str(tmp_path / "medspot-cache"))
    args = [
        "demo",
        "--out",
        str(out),
        "--cache",
        str(cache),
        "--tasks",
        "3",
        "--apps",
        "2",
        "--no-progress",
        "--bootstrap",
        "50",
    ]
    assert main(args) == 0
    captured = capsys.readouterr()
    table = captured.out
    lines = [ln for ln in table.splitlines() if ln.startswith(("ocr ", "random "))]
    assert len(lines) == 2, table
    assert "generated" in captured.err
    assert "reused" not in captured.err  # a first demo reuses nothing
    for model in ("ocr", "random"):
        info = json.loads((out / model / "run.json").read_text())
        assert info["status"] == "complete"
        metrics = json.loads((out / model / "overall_dataset_metrics.json").read_text())
        assert metrics["num_tasks"] == 3
        # the table prints what the run wrote
        row = next(ln for ln in lines if ln.startswith(model + " "))
        assert f"{metrics['task_completion_accuracy']:.3f}" in row
    assert list((tmp_path / "medspot-cache" / "ocr").rglob("*.json"))  # the words were kept
    index = out / "report" / "index.html"
    assert index.exists() and "ocr" in index.read_text()
    # a second demo finds the suite in the cache and asks nothing again
    journal = (out / "ocr" / "predictions.jsonl").read_bytes()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "found" in err
    assert (out / "ocr" / "predictions.jsonl").read_bytes() == journal
    # ... and says so, with how to start afresh
    assert f"reused the earlier runs in {out}" in err
    assert "ocr (" in err and "random (" in err and f"delete {out} or pass --out DIR" in err
