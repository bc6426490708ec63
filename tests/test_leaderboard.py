"""`medspot leaderboard`: Markdown, CSV and LaTeX, sorting, the protocol in the caption, mixed
protocols refused, oracle rows labelled."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from _report_runs import PLAN_A, PLAN_B, make_run, write_dataset
from medspot.cli import main
from medspot.errors import ConfigError
from medspot.report.leaderboard import build_leaderboard, latex_escape, render
from medspot.runfolder.reader import load_runs

ALL_HIT = {
    "Alpha/0": [True, True],
    "Alpha/1": [True],
    "Alpha/2": [True] * 3,
    "Beta/0": [True, True],
    "Beta/1": [True],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("lb")
    root = write_dataset(d / "data", images=False)
    return {
        "root": root,
        "b": make_run(d / "b", root, PLAN_B, model="model_b"),
        "a": make_run(d / "a", root, PLAN_A, model="model-a"),
        "oracle": make_run(d / "o", root, ALL_HIT, model="oracle", adapter_kind="baseline"),
    }


def test_markdown_sorted_with_intervals(runs: dict[str, Path]) -> None:
    lb = build_leaderboard(load_runs([runs["b"], runs["a"]]))
    text = render(lb, "md")
    lines = text.splitlines()
    assert "protocol medspot-v1" in lines[0]
    rows = [ln for ln in lines if ln.startswith("| 1 ") or ln.startswith("| 2 ")]
    # A: TCA 3/5 = 60.0 ranks above B: 2/5 = 40.0
    assert "model-a" in rows[0] and "| 60.0 [" in rows[0]
    assert "model_b" in rows[1] and "| 40.0 [" in rows[1]
    # SHR 5/9 = 55.6 for both; WPS shown in steps: 0.92 and 0.89
    assert "55.6 [" in rows[0] and "0.92 [" in rows[0] and "0.89 [" in rows[1]


def test_sort_by_another_metric(runs: dict[str, Path]) -> None:
    lb = build_leaderboard(
        load_runs([runs["a"], runs["b"]]), sort="normalized_weighted_prefix_score"
    )
    # nWPS: A (1 + 1 + 0 + 1 + 0)/5 = 0.6; B (1/1.8 + 1 + 1 + 0 + 0)/5 = 0.511
    assert [r.label for r in lb.rows] == ["model-a", "model_b"]
    lb = build_leaderboard(load_runs([runs["a"], runs["b"]]), sort="conditional_step_accuracy")
    assert lb.rows[0].label == "model-a"  # 5/7 > 5/8


def test_a_lower_is_better_metric_sorts_the_smallest_first(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """The propagation gap (ISA minus SHR): the run that loses least to earlier misses first."""
    pair = []
    for name, gap in (("a", 0.1), ("b", 0.3)):
        run = Path(shutil.copytree(runs[name], tmp_path / name))
        metrics = json.loads((run / "overall_dataset_metrics.json").read_text())
        metrics["propagation_gap"] = gap
        (run / "overall_dataset_metrics.json").write_text(json.dumps(metrics))
        pair.append(run)
    lb = build_leaderboard(load_runs(pair[::-1]), sort="propagation_gap")
    assert [r.values["propagation_gap"] for r in lb.rows] == [0.1, 0.3]
    assert "sorted by gap (lower is better)" in lb.caption
    assert [r.label for r in build_leaderboard(load_runs(pair)).rows] == ["model-a", "model_b"]


def test_csv_has_raw_numbers(runs: dict[str, Path]) -> None:
    text = render(build_leaderboard(load_runs([runs["b"], runs["a"]])), "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["run"] for r in rows] == ["model-a", "model_b"]
    assert float(rows[0]["task_completion_accuracy"]) == pytest.approx(0.6)
    assert float(rows[1]["task_completion_accuracy"]) == pytest.approx(0.4)
    lo, hi = (
        float(rows[0]["task_completion_accuracy_lo"]),
        float(rows[0]["task_completion_accuracy_hi"]),
    )
    assert 0.0 <= lo <= 0.6 <= hi <= 1.0
    assert rows[0]["protocol"] == "medspot-v1" and rows[0]["complete"] == "True"


def test_latex_escapes_and_captions(runs: dict[str, Path]) -> None:
    text = render(build_leaderboard(load_runs([runs["b"], runs["a"]])), "latex")
    assert "\\begin{tabular}" in text and "\\end{table}" in text
    assert "model\\_b" in text and "model_b" not in text.replace("model\\_b", "")
    assert "\\caption{MedSPOT leaderboard, protocol medspot-v1" in text
    assert "60.0 {\\scriptsize [" in text
    assert latex_escape("a_b&c%d$e#f{g}h~i^j\\k") == (
        "a\\_b\\&c\\%d\\$e\\#f\\{g\\}h\\textasciitilde{}i\\textasciicircum{}j\\textbackslash{}k"
    )


def test_oracle_is_labelled(runs: dict[str, Path]) -> None:
    text = render(build_leaderboard(load_runs([runs["a"], runs["oracle"]])), "md")
    first = next(ln for ln in text.splitlines() if ln.startswith("| 1 "))
    assert "oracle (oracle)" in first and "| 100.0 [100.0, 100.0]" in first
    assert "not models" in text.splitlines()[0]


def test_mixed_protocols_refused_unless_asked(runs: dict[str, Path], tmp_path: Path) -> None:
    other = make_run(tmp_path / "c", runs["root"], PLAN_A, model="model-c", protocol="upstream-c")
    loaded = load_runs([runs["a"], other])
    with pytest.raises(ConfigError, match="different protocols"):
        build_leaderboard(loaded)
    text = render(build_leaderboard(loaded, mixed=True), "md")
    assert "MIXED protocols" in text and "| protocol |" in text and "upstream-c" in text


def test_cli(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", str(runs["a"]), str(runs["b"]), "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("rank,run,kind,protocol")
    out = tmp_path / "lb.tex"
    assert main(["leaderboard", str(runs["a"]), "--format", "latex", "--out", str(out)]) == 0
    assert "\\begin{table}" in out.read_text()
    other = make_run(tmp_path / "c", runs["root"], PLAN_A, model="model-c", protocol="upstream-c")
    assert main(["leaderboard", str(runs["a"]), str(other)]) == 2
    assert "--mixed" in capsys.readouterr().err
    assert main(["leaderboard", str(runs["a"]), "--sort", "nope"]) == 2
    assert "unknown metric 'nope'" in capsys.readouterr().err
