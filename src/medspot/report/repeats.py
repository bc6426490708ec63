"""Live runs with repeats (`medspot live run --repeats K`) seen by `leaderboard` and `compare`:
the pass@k / pass^k columns, and their paired difference between two runs of the same K, over
the tasks both ran K times (a paired bootstrap that resamples tasks, with the project's task
bootstrap: `medspot.scoring.metrics.resample_counts`, `percentile_intervals`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from medspot.runfolder.live_schema import PASS_AT_K, PASS_HAT_K
from medspot.runfolder.reader import Run, live_view
from medspot.scoring.metrics import percentile_intervals, resample_counts

__all__ = ["PASS_KEYS", "PASS_LABELS", "PassDiff", "pass_diffs", "pass_keys", "task_passes"]

PASS_KEYS = (PASS_AT_K, PASS_HAT_K)
PASS_LABELS = {PASS_AT_K: "pass@k", PASS_HAT_K: "pass^k"}


def pass_keys(runs: Sequence[Run]) -> tuple[str, ...]:
    """The pass keys some run has (live runs with K > 1)."""
    return tuple(k for k in PASS_KEYS if any(r.metric(k) is not None for r in runs))


def task_passes(run: Run) -> dict[str, tuple[bool, bool]]:
    """Per task whose K runs were all scored: (some run succeeded, all succeeded); {} for a
    static run or a live run without repeats."""
    lr = live_view(run)
    if lr is None or lr.info.repeats <= 1:
        return {}
    runs: dict[str, list[bool]] = {}
    for t in lr.tasks:
        if t.status == "scored":
            runs.setdefault(f"{t.app}/{t.task}", []).append(t.live_outcome == "success")
    k = lr.info.repeats
    return {tid: (any(w), all(w)) for tid, w in runs.items() if len(w) == k}


@dataclass(frozen=True)
class PassDiff:
    key: str
    a: float
    b: float
    diff: float  # b - a
    interval: tuple[float, float] | None
    tasks: int  # tasks both ran K times


def pass_diffs(a: Run, b: Run, *, n_boot: int, seed: int) -> tuple[PassDiff, ...]:
    """pass@k and pass^k of `b` minus `a` over the tasks both ran K times ((): none)."""
    pa, pb = task_passes(a), task_passes(b)
    common = [t for t in pa if t in pb]
    if not common:
        return ()
    ma = np.asarray([pa[t] for t in common], dtype=np.float64)
    mb = np.asarray([pb[t] for t in common], dtype=np.float64)
    n = len(common)
    rng = np.random.default_rng(seed)
    sa = np.empty((max(0, n_boot), 2))
    sb = np.empty((max(0, n_boot), 2))
    for rows, counts in resample_counts(n, max(0, n_boot), rng):
        sa[rows] = counts @ ma
        sb[rows] = counts @ mb
    samples = {k: (sb[:, i] - sa[:, i]) / n for i, k in enumerate(PASS_KEYS)}
    cis = percentile_intervals(samples, PASS_KEYS) if n_boot > 0 else dict.fromkeys(PASS_KEYS)
    out = []
    for i, k in enumerate(PASS_KEYS):
        va, vb = float(ma[:, i].mean()), float(mb[:, i].mean())
        out.append(PassDiff(k, va, vb, vb - va, cis[k], n))
    return tuple(out)
