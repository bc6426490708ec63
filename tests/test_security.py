"""Security: image paths cannot leave the dataset root (symbolic links included, at load time
and at call time); the API key is in no file a run writes and in no log line; the report
escapes hostile text from annotations and model answers."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from _builders import step, write_app
from _reliability import ScriptedAnswers, eval_args, start_eval
from medspot.adapters.base import Convention, Prediction, StepRequest
from medspot.cli import main
from medspot.dataset.images import ImageStore, resolve_image_path
from medspot.dataset.loading import load_dataset
from medspot.errors import DataError
from medspot.runfolder.journal import Journal, read_journal
from medspot.runner import RunOptions, run_model
from medspot.scoring.protocol import get_protocol
from medspot.testing.openai_server import Fault, OpenAITestServer

BOX = (10.0, 10.0, 20.0, 20.0)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A secret image outside the dataset root."""
    p = tmp_path / "secret" / "outside.png"
    p.parent.mkdir()
    Image.new("RGB", (50, 40)).save(p)
    return p


@pytest.mark.parametrize(
    "rel",
    [
        "../secret/outside.png",
        "Images/../../secret/outside.png",
        "Images\\..\\..\\secret\\outside.png",
        "/etc/passwd",
        "\\\\server\\share\\x.png",
        "C:/Windows/x.png",
        "Images/a\x00.png",
        "",
    ],
)
def test_paths_that_leave_the_root_are_refused(tmp_path: Path, outside: Path, rel: str) -> None:
    root = tmp_path / "root"
    (root / "Images").mkdir(parents=True)
    with pytest.raises(DataError):
        resolve_image_path(root, rel)


def test_links_out_of_the_root_are_refused_file_and_folder_and_loops(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "root"
    (root / "Images").mkdir(parents=True)
    (root / "Images" / "file_link.png").symlink_to(outside)
    (root / "Images" / "dir_link").symlink_to(outside.parent, target_is_directory=True)
    (root / "Images" / "loop.png").symlink_to(root / "Images" / "loop.png")
    Image.new("RGB", (50, 40)).save(root / "Images" / "inside.png")
    (root / "Images" / "ok_link.png").symlink_to(root / "Images" / "inside.png")
    for rel in ("Images/file_link.png", "Images/dir_link/outside.png", "Images/loop.png"):
        with pytest.raises(DataError):
            resolve_image_path(root, rel)
    # a link that stays inside the root is fine
    assert resolve_image_path(root, "Images/ok_link.png") == (root / "Images/inside.png").resolve()


def test_validate_and_eval_refuse_a_dataset_whose_image_links_out(
    tmp_path: Path, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    write_app(root, "A", [[step("Images/A/ok.png", "Click ok", BOX)]])
    write_app(root, "B", [[step("Images/B/link.png", "Click it", BOX)]])
    (root / "Images" / "B" / "link.png").unlink()
    (root / "Images" / "B" / "link.png").symlink_to(outside)
    assert main(["validate", str(root)]) == 2
    text = capsys.readouterr()
    assert "leaves the dataset root" in text.out + text.err
    assert "B_Annotation.json" in text.out + text.err  # the error is located
    assert (
        main(["eval", "--data", str(root), "--model", "oracle", "--out", str(tmp_path / "o")]) == 2
    )
    err = capsys.readouterr().err
    assert "leaves the dataset root" in err and "Traceback" not in err


class _Recording:
    name = "recording"
    convention = Convention.NORMALISED
    max_concurrency = 4

    def __init__(self) -> None:
        self.seen: list[Path] = []

    async def predict(self, request: StepRequest) -> Prediction:
        self.seen.append(request.image_path)
        return Prediction(raw_text="", point=None)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    async def aclose(self) -> None:
        return None


def test_a_link_swapped_in_after_loading_is_caught_at_call_time(
    tmp_path: Path, outside: Path
) -> None:
    root = tmp_path / "root"
    write_app(
        root, "A", [[step("Images/A/s1.png", "Click", BOX)], [step("Images/A/s2.png", "Go", BOX)]]
    )
    ds = load_dataset(root)
    target = root / "Images" / "A" / "s2.png"
    target.unlink()
    target.symlink_to(outside)  # the file becomes a link out of the root after validation
    ad = _Recording()
    opts = RunOptions(protocol=get_protocol("medspot-v1"))
    path = tmp_path / "out" / "predictions.jsonl"
    with Journal(path, fsync=False) as j, pytest.raises(DataError, match="leaves the dataset root"):
        asyncio.run(run_model(ds, ad, j, ImageStore(ds.root), opts))
    assert ad.seen == [(root / "Images" / "A" / "s1.png").resolve()]  # never the outside file
    recs = {r.step: r for r in read_journal(path)}
    assert "A/1/1" not in recs  # a data error of the run, not a failed call to retry


def test_the_api_key_is_in_no_file_and_no_log(placeholder_root: Path, tmp_path: Path) -> None:
    marker = "mdspk-" + secrets.token_hex(16)  # not sk-like, so no redaction pattern hides it
    ds = load_dataset(placeholder_root, apps=["Orthanc"])
    script = ScriptedAnswers(ds, miss_rate=0.3)
    out = tmp_path / "run"
    faults = [Fault("500", at=[1]), Fault("429", at=[2], retry_after="0"), Fault("401", at=[3])]
    with OpenAITestServer(answer=script, faults=faults) as srv:
        args = eval_args(placeholder_root, out, srv.base_url, apps="Orthanc")
        proc = start_eval(["-vv", *args, "--concurrency", "1"], env={"OPENAI_API_KEY": marker})
        stdout, stderr = proc.communicate(timeout=120)
        sent = [r.headers.get("authorization") for r in srv.requests]
    assert proc.returncode == 1  # one step errored (401): incomplete
    assert f"Bearer {marker}" in sent  # the key was really used
    assert b"DEBUG" in stderr  # the logs were verbose
    logs = stdout + stderr
    assert marker.encode() not in logs
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) >= 8  # journal, run.json, overall and per-app results
    for p in files:
        assert marker.encode() not in p.read_bytes(), p
    assert os.environ.get("OPENAI_API_KEY") != marker


def test_the_report_escapes_hostile_text(tmp_path: Path) -> None:
    """Hostile text in an instruction, a task overview and a model answer never reaches a
    page as markup."""
    import json

    payload = '<script>alert("pwn")</script><img src=x onerror=alert(1)>'
    root = tmp_path / "root"
    write_app(root, "A", [[step("Images/A/s1.png", f"Click {payload}", BOX)]])
    ann = root / "Annotations" / "A_Annotation.json"
    doc = json.loads(ann.read_text())
    doc["tasks"][0]["task_overview"] = payload
    ann.write_text(json.dumps(doc))
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"step": "A/0/1", "raw_text": payload + " (500, 500)"}) + "\n")
    run = tmp_path / "run"
    args = ["eval", "--data", str(root), "--model", "replay", "--replay-file", str(replay)]
    assert main([*args, "--out", str(run), "--no-progress"]) == 0
    assert payload in (run / "A" / "task_results.json").read_text().replace("\\", "")
    report = tmp_path / "report"
    assert main(["report", str(run), "--out", str(report), "--no-plots"]) == 0
    pages = list(report.rglob("*.html"))
    assert pages
    for p in pages:
        text = p.read_text(encoding="utf-8")
        assert "<script>alert(" not in text, p
        assert "<img src=x onerror" not in text, p
