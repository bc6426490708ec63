"""The zoom-in track (`medspot eval --zoom K`): the crop geometry by hand; a served model whose
first answer on the full screen misses and whose answer on the crop hits (the crop changes what
is found, mapped back to the full screen); every pass journaled, counted and reused on retry
and resume; run.json states the passes; leaderboard and compare keep multi-pass runs apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _builders import eval_argv, step, write_app
from medspot.adapters.zoom import MIN_SIDE, ZoomSpec, crop_window, map_back
from medspot.cli import main
from medspot.errors import ConfigError
from medspot.geometry import Point
from medspot.runfolder.journal import read_journal, read_passes
from medspot.testing.openai_server import Fault, OpenAITestServer, SeenRequest

# One 2000x1000 screen, target the 16x8 px box at (1000..1016, 500..508): centre (1008, 504).
SIZE = (2000, 1000)
BOX = (50.0, 50.0, 0.8, 0.8)  # x, y, w, h in percent (the annotation format)
# Pass 1 (the full screen) answers (520, 520) on 0..1000: (1040, 520) px, 24 px right of the box.
FIRST = (520, 520)
# Pass 2's window: half the width and height around (1040, 520), inside the image.
CROP = (540, 270, 1540, 770)
# The target's centre in that window, on 0..1000 of the window: ((1008-540)/1000, (504-270)/500).
SECOND = (468, 468)
# A third pass (--zoom 3) looks at 500x250 around (1008, 504): the target is its centre.
ANSWERS = {SIZE: FIRST, (1000, 500): SECOND, (500, 250): (500, 500)}


def test_crop_window_by_hand() -> None:
    assert crop_window(Point(0.52, 0.52), SIZE, 0.5) == CROP
    assert crop_window(Point(0.01, 0.99), SIZE, 0.5) == (0, 500, 1000, 1000)  # shifted inside
    assert crop_window(Point(1.7, -3.0), SIZE, 0.5) == (1000, 0, 2000, 500)  # outside: clamped
    # 2000/64 = 31 and 1000/64 = 16 px: both raised to MIN_SIDE (32)
    assert crop_window(Point(0.5, 0.5), SIZE, 0.25**3) == (984, 484, 1016, 516)
    tiny = crop_window(Point(0.5, 0.5), (100, 60), 0.01)
    assert (tiny[2] - tiny[0], tiny[3] - tiny[1]) == (MIN_SIDE, MIN_SIDE)
    p = map_back(Point(0.468, 0.468), CROP, SIZE)
    assert (p.x, p.y) == pytest.approx((1008 / 2000, 504 / 1000))
    with pytest.raises(ConfigError):
        ZoomSpec(2, 1.0)
    with pytest.raises(ConfigError):
        ZoomSpec(0)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    write_app(root, "Viewer", [[step("Images/s.png", "Click the Window/Level button", BOX)]],
              size=SIZE)  # fmt: skip
    return root


class Model:
    """A served rel1000 model that sees the full screen too coarsely to hit the small target,
    and the crop well enough to: it answers by the size of the image it was sent."""

    def __init__(self) -> None:
        self.sizes: list[tuple[int, int]] = []

    def __call__(self, req: SeenRequest) -> str:
        assert req.image is not None
        self.sizes.append(req.image.size)
        x, y = ANSWERS[req.image.size]
        return f"({x}, {y})"


def _eval(data: Path, out: Path, url: str, *extra: str) -> int:
    argv = eval_argv(data, out, "--model", "openai:coarse-vlm", "--base-url", url, *extra)
    return main([*argv, "--bootstrap", "20"])


def _tca(out: Path) -> float:
    return float(json.loads((out / "overall_dataset_metrics.json").read_text())[
        "task_completion_accuracy"])  # fmt: skip


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_the_crop_changes_what_is_found(
    data: Path, tmp_path: Path, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    model = Model()
    with OpenAITestServer(answer=model) as srv:
        assert _eval(data, tmp_path / "single", srv.base_url) == 0
        assert _eval(data, tmp_path / "zoom", srv.base_url, "--zoom", "2") == 0
    out = capsys.readouterr().out
    assert model.sizes == [SIZE, SIZE, (1000, 500)]  # single pass; then full screen, crop
    assert _tca(tmp_path / "single") == 0.0 and _tca(tmp_path / "zoom") == 1.0
    (rec,) = read_journal(tmp_path / "zoom" / "predictions.jsonl")
    assert rec.point == pytest.approx((1008 / 2000, 504 / 1000))
    assert rec.raw_text == "(468, 468)" and rec.sent_size is None
    assert rec.input_tokens is not None and rec.input_tokens > 0  # both passes' tokens
    passes = read_passes(tmp_path / "zoom" / "zoom_passes.jsonl")
    assert sorted(passes) == [("Viewer/0/1", 1), ("Viewer/0/1", 2)]
    one, two = passes[("Viewer/0/1", 1)], passes[("Viewer/0/1", 2)]
    assert one.crop == (0, 0, 2000, 1000) and two.crop == CROP
    assert one.point == pytest.approx((0.52, 0.52)) and two.image_size == (1000, 500)
    assert rec.input_tokens == (one.input_tokens or 0) + (two.input_tokens or 0)
    info = json.loads((tmp_path / "zoom" / "run.json").read_text())
    assert info["zoom"] == {"passes": 2, "crop": 0.5, "model_calls": 2}
    assert info["adapter"]["zoom"] == {"passes": 2, "crop": 0.5}
    assert json.loads((tmp_path / "single" / "run.json").read_text())["zoom"] is None
    assert "zoom-in: 2 passes, crop 0.5: 2 model calls for 1 steps (2.00 per step)" in out


def test_a_retried_pass_does_not_repeat_the_paid_ones(
    data: Path, tmp_path: Path, key: None
) -> None:
    model = Model()
    with OpenAITestServer(answer=model, faults=[Fault("500", at=[2])]) as srv:
        code = _eval(data, tmp_path / "z", srv.base_url, "--zoom", "2", "--max-retries", "1")
    assert code == 0
    assert model.sizes == [SIZE, (1000, 500)]  # request 2 failed (the crop), retried alone
    assert _tca(tmp_path / "z") == 1.0


def test_resume_asks_only_the_passes_not_yet_answered(
    data: Path, tmp_path: Path, key: None
) -> None:
    out = tmp_path / "z"
    first = Model()
    with OpenAITestServer(answer=first, faults=[Fault("500", at=[2])]) as srv:
        assert _eval(data, out, srv.base_url, "--zoom", "2", "--max-retries", "0") == 1
    assert first.sizes == [SIZE]  # the crop's call failed: an error, the step is retried later
    assert list(read_passes(out / "zoom_passes.jsonl")) == [("Viewer/0/1", 1)]
    again = Model()
    with OpenAITestServer(answer=again) as srv:
        assert _eval(data, out, srv.base_url, "--zoom", "2") == 0
        # another zoom setting is another run: refused, the folder untouched
        assert _eval(data, out, srv.base_url, "--zoom", "3") == 2
    assert again.sizes == [(1000, 500)]  # pass 1 was paid for already
    assert _tca(out) == 1.0
    assert json.loads((out / "run.json").read_text())["zoom"]["model_calls"] == 2


def test_zoom_needs_a_model_that_reads_the_screen(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(eval_argv(data, tmp_path / "r", "--model", "random", "--zoom", "2"))
    assert code == 2
    assert "does not read the screenshot" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # refused before the folder (and its lock) is made
    # a refused library request alike, and an existing run folder is left as it was
    from medspot.dataset.loading import load_dataset
    from medspot.pipeline import EvalRequest, evaluate

    req = EvalRequest(load_dataset(data), "random", tmp_path / "lib", zoom=ZoomSpec(2))
    with pytest.raises(ConfigError, match="does not read the screenshot"):
        evaluate(req)
    assert not (tmp_path / "lib").exists()
    assert main(eval_argv(data, tmp_path / "done", "--model", "random")) == 0
    before = sorted(p.name for p in (tmp_path / "done").iterdir())
    assert main(eval_argv(data, tmp_path / "done", "--model", "random", "--zoom", "2")) == 2
    assert sorted(p.name for p in (tmp_path / "done").iterdir()) == before


def test_dry_run_counts_every_pass(
    data: Path, tmp_path: Path, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = eval_argv(data, tmp_path / "r", "--model", "openai:coarse-vlm", "--zoom", "3")
    assert main([*argv, "--dry-run"]) == 0
    assert "zoom-in, 3 passes per step: at most 3 model calls" in capsys.readouterr().out


def test_leaderboard_and_compare_keep_multi_pass_runs_apart(
    data: Path, tmp_path: Path, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAITestServer(answer=Model()) as srv:
        assert _eval(data, tmp_path / "single", srv.base_url) == 0
        assert _eval(data, tmp_path / "zoom", srv.base_url, "--zoom", "2") == 0
        assert _eval(data, tmp_path / "zoom3", srv.base_url, "--zoom", "3") == 0
    capsys.readouterr()
    single, zoom, zoom3 = (str(tmp_path / n) for n in ("single", "zoom", "zoom3"))
    assert main(["leaderboard", single, zoom]) == 2
    assert "mix single-pass and multi-pass" in capsys.readouterr().err
    assert main(["leaderboard", zoom, zoom3]) == 2  # other zoom settings: apart too
    capsys.readouterr()
    assert main(["leaderboard", single, zoom, "--mixed"]) == 0
    table = capsys.readouterr().out
    (zoom_row,) = [r for r in table.splitlines() if "[zoom x2, crop 0.5]" in r]
    assert zoom_row.startswith("| 1 | openai:coarse-vlm")  # ranked, and marked
    assert "MIXED single-pass and multi-pass (zoom-in) runs" in table
    assert main(["leaderboard", zoom, "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split(",")[7] == "passes" and "zoom x2, crop 0.5" in rows[1]
    assert main(["compare", single, zoom]) == 2
    assert "zoom-in runs apart" in capsys.readouterr().err
    assert main(["compare", single, zoom, "--mixed"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert (
        head.startswith("A = openai:coarse-vlm") and "[zoom x2, crop 0.5]" in head.split("B =")[1]
    )


def test_steps_asking_the_same_window_at_once(tmp_path: Path) -> None:
    """Steps that share a screenshot and a first answer cut the same window concurrently."""
    import threading

    from PIL import Image

    from medspot.adapters.base import StepRequest
    from medspot.adapters.zoom import _crop_file

    shot = tmp_path / "s.png"
    Image.new("RGB", SIZE, (40, 40, 40)).save(shot)
    req = StepRequest("A/0/1", "A/0", "s.png", shot, SIZE, "Click")
    crops = tmp_path / "crops"
    crops.mkdir()
    errors: list[BaseException] = []
    paths: list[Path] = []

    def cut() -> None:
        try:
            paths.append(_crop_file(req, CROP, crops))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=cut) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(paths)) == 1
    with Image.open(paths[0]) as im:
        assert im.size == (1000, 500)
    assert sorted(p.name for p in crops.iterdir()) == [paths[0].name]  # no leftover part files
