"""Metrics, macro average, bootstrap intervals, survival, failure statistics and breakdowns on
hand-made runs; expected values worked out in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from _scoring_tasks import BOX, CLICK, IN, OUT, make_dataset, rec
from medspot.dataset.records import Dataset
from medspot.runfolder.journal import JournalRecord
from medspot.scoring import metrics as M
from medspot.scoring.protocol import get_protocol
from medspot.scoring.score import score_run

V1 = get_protocol("medspot-v1")
SMALL = (0.5, 0.5, 0.51, 0.51)


def records(ds: Dataset, points: dict[str, tuple[float, float]]) -> list[JournalRecord]:
    return [rec(uid, p) for uid, p in points.items()]


def three_tasks() -> tuple[Dataset, list[JournalRecord]]:
    # task 0: hit, hit (completed); task 1: hit, miss, not reached; task 2: miss (small target)
    ds = make_dataset({"A": [[CLICK, CLICK], [CLICK, CLICK, CLICK], [[("click", SMALL)]]]})
    pts = {"A/0/1": IN, "A/0/2": IN, "A/1/1": IN, "A/1/2": OUT, "A/2/1": OUT}
    return ds, records(ds, pts)


def test_each_metric_by_hand() -> None:
    ds, recs = three_tasks()
    v = score_run(ds, recs, V1, all_steps=False, n_boot=200).overall.values
    # k = 2, 1, 0; n = 2, 3, 1; reached = 2, 2, 1
    assert v[M.TCA] == pytest.approx(1 / 3)
    assert v[M.S1A] == pytest.approx(2 / 3)
    assert v[M.SHR] == pytest.approx(3 / 6)
    assert v[M.CSA] == pytest.approx(3 / 5)
    assert v[M.ACP] == pytest.approx(1.0)
    # WPS: (1 + 0.8) + 1 + 0 over 3 tasks
    assert v[M.WPS] == pytest.approx(2.8 / 3)
    # nWPS: 1.8/1.8 + 1/(1 + 0.8 + 0.64) + 0 over 3 tasks
    assert v[M.NWPS] == pytest.approx((1 + 1 / 2.44) / 3)
    assert M.ISA not in v


def test_failure_statistics_survival_breakdowns() -> None:
    ds, recs = three_tasks()
    rs = score_run(ds, recs, V1, all_steps=False, n_boot=0)
    # task 1 ends with far_miss on a large box; task 2 with small_target
    assert rs.failures["failure_type_histogram"] == {"small_target": 1, "far_miss": 1}
    assert rs.failures["failure_by_difficulty"] == {
        "small": {"small_target": 1},
        "large": {"far_miss": 1},
    }
    assert rs.failures["total_failed_tasks"] == 2
    assert "step_failure_histogram" not in rs.failures
    # ends at ranks: none, 2, 1; longest task 3 -> alive after k = 0..3
    assert rs.survival == pytest.approx([1.0, 2 / 3, 1 / 3, 1 / 3])
    # steps reached: 0/1 hit, 0/2 hit, 1/1 hit, 1/2 miss, 2/1 miss -> click 3 of 5
    assert rs.by_action_type == {"click": {"steps": 5, "hits": 3, "hit_rate": 0.6}}
    assert rs.by_target_size["small"] == {"steps": 1, "hits": 0, "hit_rate": 0.0}
    assert rs.by_target_size["large"]["hit_rate"] == pytest.approx(3 / 4)


def test_all_steps_isa_and_gap() -> None:
    # task 0: hit, miss, hit; task 1: miss, hit
    ds = make_dataset({"A": [[CLICK, CLICK, CLICK], [CLICK, CLICK]]})
    pts = {"A/0/1": IN, "A/0/2": OUT, "A/0/3": IN, "A/1/1": OUT, "A/1/2": IN}
    rs = score_run(ds, records(ds, pts), V1, all_steps=True, n_boot=200)
    v = rs.overall.values
    assert v[M.SHR] == pytest.approx(1 / 5)  # k = 1, 0 over n = 3, 2
    assert v[M.ISA] == pytest.approx(3 / 5)  # 3 hits of 5 steps, every step asked
    assert v[M.GAP] == pytest.approx(3 / 5 - 1 / 5)
    assert v[M.CSA] == pytest.approx(1 / 3)  # reached 2 + 1
    assert rs.failures["step_failure_histogram"] == {"far_miss": 2}
    assert rs.failures["failure_type_histogram"] == {"far_miss": 2}
    assert rs.by_action_type["click"]["independent_hit_rate"] == pytest.approx(3 / 5)
    assert rs.complete


def test_macro_and_per_app() -> None:
    # app X: 1 task completed (TCA 1); app Y: 3 tasks, 1 completed (TCA 1/3)
    ds = make_dataset({"X": [[CLICK]], "Y": [[CLICK], [CLICK], [CLICK]]})
    pts = {"X/0/1": IN, "Y/0/1": OUT, "Y/1/1": OUT, "Y/2/1": IN}
    rs = score_run(ds, records(ds, pts), V1, all_steps=False, n_boot=0)
    assert rs.overall.values[M.TCA] == pytest.approx(2 / 4)
    assert rs.per_app["X"].values[M.TCA] == pytest.approx(1.0)
    assert rs.per_app["Y"].values[M.TCA] == pytest.approx(1 / 3)
    assert rs.macro_average[M.TCA] == pytest.approx((1 + 1 / 3) / 2)


def test_errored_tasks_left_out_and_flagged() -> None:
    ds = make_dataset({"A": [[CLICK], [CLICK], [CLICK]]})
    recs = [rec("A/0/1", IN), rec("A/1/1", OUT), rec("A/2/1", None, error="timeout")]
    rs = score_run(ds, recs, V1, all_steps=False, n_boot=0)
    assert not rs.complete and rs.missing_steps == ("A/2/1",)
    assert rs.overall.num_tasks == 2 and rs.overall.num_errored_tasks == 1
    assert rs.overall.values[M.TCA] == pytest.approx(1 / 2)  # over the 2 scored tasks
    assert not rs.overall.complete


def test_excluded_and_unannotated_counted() -> None:
    ds = make_dataset({"A": [[CLICK, []], [[]]]})
    rs = score_run(ds, [rec("A/0/1", IN)], V1, all_steps=False, n_boot=0)
    assert rs.overall.num_tasks == 1 and rs.overall.num_excluded_tasks == 1
    assert rs.overall.num_unannotated_steps == 2 and rs.complete
    assert rs.overall.values[M.TCA] == 1.0


def test_upstream_d_and_e_histograms() -> None:
    # hit then a drag step (not evaluable in d and e) then a click
    ds = make_dataset({"A": [[CLICK, [("drag", BOX)], CLICK]]})
    recs = [rec("A/0/1", IN), rec("A/0/2", IN), rec("A/0/3", IN)]
    d = score_run(ds, recs, get_protocol("upstream-d"), all_steps=False, n_boot=0)
    # d: last logged step is the hit: counted, untyped
    assert d.failures["failure_type_histogram"] == {"untyped": 1}
    e = score_run(ds, recs, get_protocol("upstream-e"), all_steps=False, n_boot=0)
    # e: no miss at all: not in the histogram, but the task failed
    assert e.failures["failure_type_histogram"] == {}
    assert e.failures["total_failed_tasks"] == 1


def test_bootstrap_contains_estimate_and_is_deterministic() -> None:
    rng = np.random.default_rng(1)
    ds = make_dataset({"A": [[CLICK, CLICK] for _ in range(60)]})
    pts = {}
    for t in range(60):
        pts[f"A/{t}/1"] = IN if rng.random() < 0.7 else OUT
        pts[f"A/{t}/2"] = IN if rng.random() < 0.6 else OUT
    recs = records(ds, pts)
    r1 = score_run(ds, recs, V1, all_steps=True, n_boot=500, seed=3)
    r2 = score_run(ds, recs, V1, all_steps=True, n_boot=500, seed=3)
    assert r1.overall.intervals == r2.overall.intervals
    for k, v in r1.overall.values.items():
        ci = r1.overall.intervals[k]
        assert ci is not None and v is not None
        assert ci[0] <= v <= ci[1], k
        if k != M.GAP:
            assert ci[0] < ci[1], k
    r3 = score_run(ds, recs, V1, all_steps=True, n_boot=500, seed=4)
    assert r3.overall.intervals != r1.overall.intervals


def test_bootstrap_constant_data_and_no_tasks() -> None:
    m = np.array([[1, 1, 2, 2, 2, 1.8, 1.0, 0, 0]] * 5, dtype=float)
    ci = M.bootstrap_intervals(m, all_steps=False, n_boot=100)
    assert ci[M.TCA] == (1.0, 1.0) and ci[M.SHR] == (1.0, 1.0)
    empty = M.bootstrap_intervals(np.zeros((0, 9)), all_steps=False, n_boot=100)
    assert all(v is None for v in empty.values())
    ms = M.compute_metrics([], all_steps=False, n_boot=10)
    assert ms.values[M.TCA] is None and ms.num_tasks == 0


def test_bootstrap_large_run_vectorised() -> None:
    # 35,000 tasks (about 100k steps) resampled 2,000 times: must run in one vectorised pass
    rng = np.random.default_rng(0)
    n = rng.integers(1, 6, size=35_000).astype(float)
    k = np.floor(rng.random(35_000) * (n + 1))
    m = np.stack([k == n, k > 0, k, n, np.minimum(k + 1, n), k, k / n, k, n], axis=1)
    ci = M.bootstrap_intervals(m.astype(float), all_steps=True, n_boot=2000)
    shr = k.sum() / n.sum()
    lo, hi = ci[M.SHR]  # type: ignore[misc]
    assert lo <= shr <= hi and hi - lo < 0.02


def test_bootstrap_row_types_match_task_resampling() -> None:
    # 400 tasks of 4 kinds: drawing counts per distinct row is the same distribution as
    # resampling tasks, so both methods give nearly the same intervals
    rows = [
        [1, 1, 2, 2, 2, 1.8, 1, 0, 0],
        [0, 1, 1, 2, 2, 1, 1 / 1.8, 0, 0],
        [0, 0, 0, 1, 1, 0, 0, 0, 0],
        [1, 1, 1, 1, 1, 1, 1, 0, 0],
    ]
    m = np.array([rows[i % 4] for i in range(400)], dtype=float)
    a = M.bootstrap_intervals(m, all_steps=False, n_boot=4000, method="types")
    b = M.bootstrap_intervals(m, all_steps=False, n_boot=4000, method="rows")
    for k in M.SEQUENTIAL_KEYS:
        assert a[k] == pytest.approx(b[k], abs=0.01), k
    # TCA = 0.5 over 400 tasks: about 0.5 +- 1.96 * sqrt(0.25 / 400) = 0.5 +- 0.049
    assert a[M.TCA] == pytest.approx((0.451, 0.549), abs=0.006)
