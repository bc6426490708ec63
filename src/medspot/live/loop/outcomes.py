"""Live metrics (docs/live.md "Metrics"), from the journal's task results and trajectories.

Task-level rates (success, harmful failure, recovery) and pooled per-step rates (the executed
action hit the intended element) with 95% bootstrap intervals that resample tasks, breakdowns
per environment and per tag, and each task seen through the static formulas (`StaticRow`) so
that the static keys (TCA, S1A, SHR, ...) are filled for `report`, `leaderboard`, `compare`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from medspot.live.core.tasks import LiveTask
from medspot.live.loop.static_bridge import (
    HARMFUL,
    HIT_RATE,
    LIVE_KEYS,
    RECOVERY,
    STEPS_RATIO,
    SUCCESS,
    StaticRow,
    percentile_intervals,
    resample_counts,
)
from medspot.live.loop.steplog import FINAL_OUTCOMES, ResumeState, StepRecord, TaskRecord

__all__ = [
    "HARMFUL",
    "HIT_RATE",
    "LIVE_KEYS",
    "RECOVERY",
    "STEPS_RATIO",
    "SUCCESS",
    "TaskResult",
    "bootstrap_ratios",
    "live_metrics",
    "task_results",
]

# Bootstrap columns; each metric is sum(numerator column) / sum(denominator column).
_COLS = ("scored", "success", "harmful", "missed", "recovered", "hits", "judged", "used", "oracle")
_RATIOS = {
    SUCCESS: ("success", "scored"),
    HARMFUL: ("harmful", "scored"),
    RECOVERY: ("recovered", "missed"),
    HIT_RATE: ("hits", "judged"),
    STEPS_RATIO: ("used", "oracle"),
}
Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class TaskResult:
    """One task's result: `outcome` is success / harmful / failure (scored), or error /
    env_error / missing (left out of the metrics)."""

    task: LiveTask
    env: str
    index: int  # position in the task file
    outcome: str
    reason: str
    record: TaskRecord | None
    steps: tuple[StepRecord, ...]

    @property
    def scored(self) -> bool:
        return self.outcome in FINAL_OUTCOMES

    @property
    def executed(self) -> list[StepRecord]:
        return [s for s in self.steps if s.executed]

    @property
    def judged(self) -> list[bool]:
        """Per executed action whose intended element was on screen: did it hit it."""
        return [bool(s.hit_intended) for s in self.executed if s.hit_intended is not None]

    @property
    def missed(self) -> bool:
        """Some action missed the intended element (the static protocol would stop here)."""
        return any(s.hit_intended is False for s in self.steps if s.executed) or any(
            s.action is None and s.ok and not s.executed for s in self.steps
        )

    @property
    def recovered(self) -> bool:
        return self.outcome == "success" and self.missed

    @property
    def steps_used(self) -> int:
        return len(self.steps)

    @property
    def achieved(self) -> int:
        return self.record.achieved if self.record is not None else 0

    def static_row(self) -> StaticRow:
        k, n = self.achieved, len(self.task.steps)
        wps = sum(0.8**i for i in range(k))
        full = sum(0.8**i for i in range(n))
        first = self.steps[0] if self.steps else None
        return StaticRow(
            completed=self.outcome == "success",
            step1_hit=bool(first is not None and first.hit_intended),
            correct_steps=k,
            num_steps=n,
            steps_evaluated=max(1, self.steps_used),
            weighted_prefix_score=wps,
            normalized_weighted_prefix_score=wps / full if full else 0.0,
            status="scored" if self.scored else "errored",
        )

    def columns(self) -> list[float]:
        ok = self.outcome == "success"
        judged = self.judged
        return [
            1.0,
            float(ok),
            float(self.outcome == "harmful"),
            float(self.missed),
            float(self.recovered),
            float(sum(judged)),
            float(len(judged)),
            float(self.steps_used if ok else 0),
            float(len(self.task.steps) if ok else 0),
        ]


def task_results(tasks: Sequence[LiveTask], state: ResumeState, env: str) -> list[TaskResult]:
    out = []
    for i, t in enumerate(tasks):
        rec = state.last.get(t.id)
        outcome = rec.outcome if rec is not None else "missing"
        reason = rec.reason if rec is not None else "not run yet"
        out.append(TaskResult(t, env, i, outcome, reason, rec, tuple(state.trajectory(t.id))))
    return out


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def bootstrap_ratios(
    matrix: Array, *, n_boot: int, seed: int, level: float = 0.95
) -> dict[str, tuple[float, float] | None]:
    """Percentile intervals of every ratio metric from resampling tasks (rows), with the static
    metrics' task bootstrap (`resample_counts`, `percentile_intervals`)."""
    n = matrix.shape[0]
    if n == 0 or n_boot <= 0:
        return dict.fromkeys(_RATIOS)
    rng = np.random.default_rng(seed)
    sums = np.empty((n_boot, matrix.shape[1]), dtype=np.float64)
    for rows, counts in resample_counts(n, n_boot, rng):
        sums[rows] = counts @ matrix
    samples = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for key, (num, den) in _RATIOS.items():
            samples[key] = sums[:, _COLS.index(num)] / sums[:, _COLS.index(den)]
    return percentile_intervals(samples, list(_RATIOS), level)


def _rates(results: Sequence[TaskResult]) -> dict[str, Any]:
    scored = [r for r in results if r.scored]
    m = np.asarray([r.columns() for r in scored], dtype=np.float64).reshape(-1, len(_COLS))
    s = m.sum(axis=0)
    vals: dict[str, Any] = {
        key: _ratio(float(s[_COLS.index(a)]), float(s[_COLS.index(b)]))
        for key, (a, b) in _RATIOS.items()
    }
    ok = [r for r in scored if r.outcome == "success"]
    vals.update(
        num_tasks=len(scored),
        num_success=len(ok),
        num_harmful=sum(1 for r in scored if r.outcome == "harmful"),
        num_missed=sum(1 for r in scored if r.missed),
        num_recovered=sum(1 for r in scored if r.recovered),
        mean_steps_used=float(np.mean([r.steps_used for r in ok])) if ok else None,
        mean_oracle_steps=float(np.mean([len(r.task.steps) for r in ok])) if ok else None,
        num_env_errors=sum(1 for r in results if r.outcome == "env_error"),
        num_model_errors=sum(1 for r in results if r.outcome == "error"),
        num_missing=sum(1 for r in results if r.outcome == "missing"),
    )
    return vals


def live_metrics(
    results: Sequence[TaskResult], *, n_boot: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """The live keys with intervals, per-env and per-tag breakdowns (no intervals there)."""
    out = _rates(results)
    scored = [r for r in results if r.scored]
    m = np.asarray([r.columns() for r in scored], dtype=np.float64).reshape(-1, len(_COLS))
    out["live_confidence_intervals"] = {
        k: list(v) if v is not None else None
        for k, v in bootstrap_ratios(m, n_boot=n_boot, seed=seed).items()
    }
    groups: dict[str, dict[str, list[TaskResult]]] = {"by_env": defaultdict(list),
                                                      "by_tag": defaultdict(list)}  # fmt: skip
    for r in results:
        groups["by_env"][r.env].append(r)
        for tag in r.task.tags or ("untagged",):
            groups["by_tag"][tag].append(r)
    for name, by in groups.items():
        out[name] = {k: _rates(v) for k, v in sorted(by.items())}
    return out
