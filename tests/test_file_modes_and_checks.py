"""Smaller findings of the audit: file modes follow the umask, a base URL that is not http(s)
is refused at start, steps out of step order are an error, unknown action types and tiny
screenshots are warnings, keys given twice are an error, a BOM is not a content change."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from _builders import step, write_app
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.testing.openai_server import OpenAITestServer

REPO = Path(__file__).resolve().parents[1]
BOX = (10.0, 10.0, 20.0, 20.0)


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    write_app(root, "A", [[step("Images/a.png", "one", BOX), step("Images/b.png", "two", BOX)]])
    return root


def _doc(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"tasks": [{"task_overview": "t", "steps": steps}]}


def _write(root: Path, text: str, name: str = "A") -> None:
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    (root / "Annotations" / f"{name}_Annotation.json").write_text(text, encoding="utf-8")
    for p in ("a.png", "b.png", "c.png"):
        if not (root / "Images" / p).exists():
            (root / "Images").mkdir(exist_ok=True)
            Image.new("RGB", (200, 100)).save(root / "Images" / p)


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_result_files_follow_the_umask(tmp_path: Path, mask: int) -> None:
    root = _root(tmp_path)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cmd = [sys.executable, "-m", "medspot", "eval", "--data", str(root), "--model", "oracle",
           "--out", str(out), "--no-progress", "--bootstrap", "10"]  # fmt: skip
    proc = subprocess.run(
        cmd, env=env, capture_output=True, timeout=300, preexec_fn=lambda: os.umask(mask)
    )
    assert proc.returncode == 0, proc.stderr.decode()
    want = 0o666 & ~mask
    for name in ("run.json", "predictions.jsonl", "overall_dataset_metrics.json",
                 "A/task_results.json"):  # fmt: skip
        assert stat.S_IMODE((out / name).stat().st_mode) == want, name


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1/v1", "localhost:8000", "http://", "x"])
def test_a_base_url_that_is_not_http_is_refused_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    argv = ["eval", "--data", str(_root(tmp_path)), "--model", "openai:m", "--convention",
            "rel1000", "--base-url", url, "--out", str(tmp_path / "o")]  # fmt: skip
    argv.append("--no-progress")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "not an http(s) URL" in err
    assert not (tmp_path / "o" / "predictions.jsonl").exists()


def test_a_good_base_url_still_works(tmp_path: Path) -> None:
    with OpenAITestServer(answer="(150, 150)") as srv:
        argv = ["eval", "--data", str(_root(tmp_path)), "--model", "openai:m", "--convention",
                "rel1000", "--base-url", srv.base_url, "--out", str(tmp_path / "o"),
                "--no-progress", "--bootstrap", "10"]  # fmt: skip
        assert main(argv) == 0
        assert srv.request_count == 2


def _s(sid: int, img: str = "Images/a.png", typ: str = "click") -> dict[str, Any]:
    d = step(img, f"step {sid}", BOX, types=(typ,))
    d["step_id"] = sid
    return d


def test_steps_out_of_order_are_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "data"
    _write(root, json.dumps(_doc([_s(3), _s(2), _s(1)])))
    assert main(["validate", str(root)]) == 2
    out = "".join(capsys.readouterr())
    assert "step order" in out and "task 0, step 2" in out


def test_unknown_action_types_and_tiny_screenshots_are_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "data"
    _write(root, json.dumps(_doc([_s(1, typ="swipe"), _s(2, img="Images/tiny.png")])))
    Image.new("RGB", (1, 1)).save(root / "Images" / "tiny.png")
    assert main(["validate", str(root)]) == 0
    out = "".join(capsys.readouterr())
    assert "unknown action type 'swipe'" in out
    assert "1x1 pixels" in out and "tiny.png" in out


def test_keys_given_twice_are_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "data"
    twice = '"instruction": "step 1", "instruction": "other"'
    text = json.dumps(_doc([_s(1)])).replace('"instruction": "step 1"', twice)
    assert '"instruction": "other"' in text
    _write(root, text)
    assert main(["validate", str(root)]) == 2
    assert "given twice" in "".join(capsys.readouterr())


def test_a_bom_does_not_change_the_fingerprint(tmp_path: Path) -> None:
    text = json.dumps(_doc([_s(1), _s(2)]))
    _write(tmp_path / "plain", text)
    _write(tmp_path / "bom", "\ufeff" + text)
    a = load_dataset(tmp_path / "plain")
    b = load_dataset(tmp_path / "bom")
    assert a.fingerprint == b.fingerprint
    _write(tmp_path / "other", text.replace("step 2", "step two"))
    assert load_dataset(tmp_path / "other").fingerprint != a.fingerprint
