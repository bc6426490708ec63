"""`medspot compare`: McNemar's exact test, the paired bootstrap and the flip lists, on two runs
with a known difference (tests/_report_runs.py: PLAN_A and PLAN_B)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _report_runs import PLAN_A, PLAN_B, make_run, write_dataset
from medspot.cli import main
from medspot.errors import ConfigError
from medspot.report.compare import compare_runs, mcnemar_exact, paired_bootstrap
from medspot.runfolder.reader import load_run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    d = tmp_path_factory.mktemp("cmp")
    root = write_dataset(d / "data")
    a = make_run(d / "a", root, PLAN_A, model="model-a")
    b = make_run(d / "b", root, PLAN_B, model="model-b")
    return root, a, b


def test_mcnemar_exact_by_hand() -> None:
    # no discordant pair: nothing to test
    assert mcnemar_exact(0, 0) == 1.0
    # 0 vs 6: 2 * C(6,0) / 2^6 = 2/64
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(6, 0) == pytest.approx(2 / 64)
    # 1 vs 9: 2 * (C(10,0) + C(10,1)) / 2^10 = 22/1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    # balanced: capped at 1
    assert mcnemar_exact(3, 3) == 1.0
    # 2 vs 1: 2 * (1 + 3) / 8 = 1
    assert mcnemar_exact(2, 1) == 1.0


def test_compare_known_difference(two_runs: tuple[Path, Path, Path]) -> None:
    _, a, b = two_runs
    c = compare_runs(load_run(a), load_run(b), n_boot=500, seed=1)
    m = {x.key: x for x in c.metrics}
    # A completes Alpha/0, Alpha/1, Beta/0 (3/5); B completes Alpha/1, Alpha/2 (2/5)
    assert m["task_completion_accuracy"].a == pytest.approx(3 / 5)
    assert m["task_completion_accuracy"].b == pytest.approx(2 / 5)
    assert m["task_completion_accuracy"].diff == pytest.approx(-1 / 5)
    # hit prefixes: A 2+1+0+2+0 = 5, B 1+1+3+0+0 = 5, over 9 evaluable steps
    assert m["step_hit_rate"].diff == pytest.approx(0.0)
    # WPS: A (1.8 + 1 + 0 + 1.8 + 0) / 5 = 0.92; B (1 + 1 + 2.44 + 0 + 0) / 5 = 0.888
    assert m["avg_weighted_prefix_score"].a == pytest.approx(0.92)
    assert m["avg_weighted_prefix_score"].b == pytest.approx(0.888)
    # CSA: A 5 hits over 7 steps reached, B 5 over 8
    assert m["conditional_step_accuracy"].diff == pytest.approx(5 / 8 - 5 / 7)
    assert c.a_only_completes == ("Alpha/0", "Beta/0")
    assert c.b_only_completes == ("Alpha/2",)
    assert c.both_complete == 1 and c.neither_completes == 1
    assert c.mcnemar_p == pytest.approx(1.0)  # 2 vs 1: 2 * (1 + 3) / 8
    lo, hi = m["task_completion_accuracy"].interval or (9.0, 9.0)
    assert -1.0 <= lo <= -0.2 <= hi <= 1.0


def test_compare_values_agree_with_the_run_files(two_runs: tuple[Path, Path, Path]) -> None:
    _, a, b = two_runs
    ra, rb = load_run(a), load_run(b)
    c = compare_runs(ra, rb, n_boot=50)
    for m in c.metrics:
        assert m.a == pytest.approx(ra.metric(m.key)), m.key
        assert m.b == pytest.approx(rb.metric(m.key)), m.key


def test_a_run_against_itself_has_zero_width_intervals(two_runs: tuple[Path, Path, Path]) -> None:
    _, a, _ = two_runs
    c = compare_runs(load_run(a), load_run(a), n_boot=200)
    for m in c.metrics:
        assert m.diff == pytest.approx(0.0)
        assert m.interval == (0.0, 0.0)
    assert c.mcnemar_p == 1.0


def test_paired_bootstrap_pairs_the_rows() -> None:
    # B completes exactly the tasks A does not: TCA(B) - TCA(A) = 1 - 2 TCA(A) in every
    # resample, so the interval is that of a linear map of A's own resampled TCA
    ma = np.zeros((4, 9))
    mb = np.zeros((4, 9))
    ma[:2, 0] = 1.0
    mb[2:, 0] = 1.0
    ma[:, 3] = mb[:, 3] = 1.0
    ma[:, 4] = mb[:, 4] = 1.0
    ci = paired_bootstrap(ma, mb, all_steps=False, n_boot=400, seed=3)
    lo, hi = ci["task_completion_accuracy"] or (0.0, 0.0)
    # possible differences are 1 - 2j/4 for j = 0..4 completed-by-A draws
    assert {lo, hi} <= {1.0, 0.5, 0.0, -0.5, -1.0}
    assert lo < 0 < hi


def test_different_protocols_are_refused(two_runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    root, a, _ = two_runs
    other = make_run(tmp_path / "b2", root, PLAN_B, model="model-b", protocol="upstream-b")
    with pytest.raises(ConfigError, match="different protocols"):
        compare_runs(load_run(a), load_run(other))
    assert compare_runs(load_run(a), load_run(other), mixed=True, n_boot=20).common


def test_cli_json(two_runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, a, b = two_runs
    assert main(["compare", str(a), str(b), "--format", "json", "--bootstrap", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["completed_by_a_not_b"] == ["Alpha/0", "Beta/0"]
    assert out["completed_by_b_not_a"] == ["Alpha/2"]
    assert out["metrics"]["task_completion_accuracy"]["difference"] == pytest.approx(-0.2)
    assert main(["compare", str(a), str(b), "--bootstrap", "100"]) == 0
    text = capsys.readouterr().out
    assert "McNemar exact p = 1" in text and "Alpha/2" in text


def test_cli_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x").mkdir()
    assert main(["compare", str(tmp_path / "x"), str(tmp_path / "x")]) == 2
    assert "run.json" in capsys.readouterr().err
