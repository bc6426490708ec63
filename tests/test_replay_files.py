"""Replay files are checked before anything runs, with line numbers; a replay that lacks a
step the protocol asks is a data error (exit 2), not a failed call; the journal only writes
lines it can read back, whatever an adapter returns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _builders import eval_argv, step, write_app
from medspot.adapters.base import Prediction, StepRequest
from medspot.cli import main
from medspot.geometry import Point
from medspot.runfolder.journal import Journal, read_journal
from medspot.runner import call_record

BOX = (10.0, 10.0, 20.0, 20.0)  # centre (0.2, 0.2)


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_app(
        root,
        "A",
        [
            [step("Images/a1.png", "one", BOX), step("Images/a2.png", "two", BOX)],
            [step("Images/b1.png", "three", BOX)],
        ],
    )
    return root


def _eval(root: Path, replay: Path, out: Path) -> list[str]:
    return eval_argv(root, out, "--model", "replay", "--replay-file", str(replay), bootstrap=10)


GOOD = [
    '{"step": "A/0/1", "point": [0.2, 0.2]}',
    '{"step": "A/0/2", "point_px": [200, 100]}',
    '{"step": "A/1/1", "raw_text": "(200, 200)"}',
]


@pytest.mark.parametrize(
    ("bad_line", "words"),
    [
        ('{"step": "A/1/1", "point": [NaN, 0.5]}', "NaN"),
        ('{"step": "A/1/1", "point": [Infinity, 0.5]}', "Infinity"),
        ('{"step": "A/1/1", "point": [1e400, 0.5]}', "finite"),
        ('{"step": "A/1/1", "point": [1.5, 0.5]}', "outside 0..1"),
        ('{"step": "A/1/1", "point": [0.1]}', "two finite numbers"),
        ('{"step": "A/0/2", "point": [0.2, 0.2]}', "again (first on line 2)"),
        ('{"step": "A/1/7", "point": [0.2, 0.2]}', "no such step"),
        ('{"step": "A-1-1", "point": [0.2, 0.2]}', "not a step id"),
        ('{"step": "A/1/1"}', "no answer"),
        ('{"step": "A/1/1", "raw_text": 5}', "raw_text"),
        ("[1, 2]", "JSON object"),
        ("{not json", "invalid JSON"),
    ],
)
def test_a_bad_replay_line_is_named_before_any_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad_line: str, words: str
) -> None:
    root = _root(tmp_path)
    replay = tmp_path / "r.jsonl"
    replay.write_text("\n".join([*GOOD[:2], bad_line]) + "\n")
    out = tmp_path / "out"
    assert main(_eval(root, replay, out)) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and words in err and "Traceback" not in err
    assert not (out / "predictions.jsonl").exists()


@pytest.mark.parametrize("text", ["", "\n\n  \n", "\ufeff"])
def test_an_empty_replay_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    replay = tmp_path / "r.jsonl"
    replay.write_text(text, encoding="utf-8")
    assert main(_eval(_root(tmp_path), replay, tmp_path / "out")) == 2
    assert "no answers" in capsys.readouterr().err


def test_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    replay = tmp_path / "r.jsonl"
    replay.write_text("\ufeff" + "\n".join(GOOD) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(_eval(_root(tmp_path), replay, out)) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["errors"] == 0 and info["status"] == "complete"


def test_a_replay_lacking_a_step_is_a_data_error_not_a_failed_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = tmp_path / "r.jsonl"
    replay.write_text("\n".join([GOOD[0], GOOD[2]]) + "\n")
    out = tmp_path / "out"
    for _ in range(2):
        assert main(_eval(_root(tmp_path), replay, out)) == 2
        err = capsys.readouterr().err
        assert "task 0, step 2" in err and "no answer" in err
    assert not any(r.error for r in read_journal(out / "predictions.jsonl"))


def test_the_journal_never_writes_a_line_it_cannot_read(tmp_path: Path) -> None:
    req = StepRequest("A/0/1", "A/0", "Images/a1.png", tmp_path / "a1.png", (10, 10), "one")
    nan = float("nan")
    pred = Prediction(
        raw_text="x\udc80y",
        point=Point(nan, 0.5),
        extra_points=(Point(float("inf"), 0.1), Point(0.3, 0.3)),
        cost_usd=float("inf"),
    )
    path = tmp_path / "p.jsonl"
    with Journal(path, fsync=False) as j:
        j.append(call_record(req, pred, latency_s=nan, retries=0))
    (rec,) = read_journal(path)
    assert rec.point is None and "non_finite_point" in rec.flags
    assert rec.extra_points == [(0.3, 0.3)]
    assert rec.cost_usd is None and rec.latency_s is None and rec.error is None
