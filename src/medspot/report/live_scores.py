"""A live run's per-run scores read from its task rows: what `leaderboard --metric` ranks and
`compare --metric` pairs (the safety score, task success, progress, any harm), and each run's
harm events for the report's safety section. A row written before harm events (`harms` None)
has its harm, if it ended harmful, counted as one major event of no dimension
(`medspot.live.core.harm.legacy_events`); a run folder written before the safety score is
ranked on the mean of its rows, with its bootstrap interval over tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from medspot.errors import ConfigError
from medspot.live.core.harm import legacy_events, safety_score
from medspot.runfolder.live_schema import (
    ANY_HARM,
    LIVE_LOWER_IS_BETTER,
    PROGRESS,
    SAFETY,
    SUCCESS,
    LiveHarm,
    LiveTaskRow,
)
from medspot.runfolder.reader import Run, live_view
from medspot.scoring.metrics import percentile_intervals, resample_counts

__all__ = [
    "LIVE_METRIC_LABELS",
    "LiveMetricDiff",
    "is_signed",
    "live_metric_diff",
    "lower_is_better",
    "resolve_live_metric",
    "row_harms",
    "row_value",
    "run_score",
    "run_values",
]

# the live metrics with a value per run (what --metric ranks and pairs), and their labels
LIVE_METRIC_LABELS: Mapping[str, str] = {
    SAFETY: "Safety",
    SUCCESS: "Live success",
    PROGRESS: "Progress",
    ANY_HARM: "Any harm",
}


def resolve_live_metric(name: str) -> str:
    """A live metric key from its key or label (case-insensitive)."""
    low = name.lower().replace(" ", "_")
    for key, label in LIVE_METRIC_LABELS.items():
        if low in (key, label.lower().replace(" ", "_")):
            return key
    raise ConfigError(
        f"unknown live metric {name!r}; one of: {', '.join(LIVE_METRIC_LABELS)} (--metric "
        "ranks and pairs live runs)"
    )


def is_signed(key: str) -> bool:
    """A metric shown as a number, not a share in percent (the safety score lies in -1..1)."""
    return key == SAFETY


def lower_is_better(key: str) -> bool:
    return key in LIVE_LOWER_IS_BETTER


def row_harms(row: LiveTaskRow) -> list[LiveHarm]:
    """The row's harm events; a row written before them, if it ended harmful, one major event
    of no dimension (legacy)."""
    if row.harms is not None:
        return list(row.harms)
    step = row.steps_used or len(row.steps)
    legacy = legacy_events(row.live_outcome == "harmful", [], step)
    return [LiveHarm.model_validate(h.to_json()) for h in legacy]


def row_value(key: str, row: LiveTaskRow) -> float | None:
    """The row's value of a per-run live metric (None: not scored, or not known)."""
    if row.status != "scored":
        return None
    if key == SAFETY:
        if row.safety_score is not None:
            return row.safety_score
        legacy = legacy_events(row.live_outcome == "harmful", [], row.steps_used)
        return safety_score(row.live_outcome == "success", legacy)
    if key == SUCCESS:
        return float(row.live_outcome == "success")
    if key == PROGRESS:
        return row.progress
    if key == ANY_HARM:
        return float(bool(row_harms(row)))
    raise ConfigError(f"{key!r} has no value per run")


def _live_rows(run: Run) -> tuple[LiveTaskRow, ...]:
    lr = live_view(run)
    if lr is None:
        raise ConfigError(f"{run.path} is not a live run: --metric ranks and pairs live runs")
    return lr.tasks


def run_values(run: Run, key: str) -> dict[str, float]:
    """Row id -> the row's value, over the scored rows that have one."""
    out = {}
    for row in _live_rows(run):
        v = row_value(key, row)
        if v is not None:
            out[row.task_id] = v
    return out


def _task_of(row_id: str) -> str:
    return row_id.partition("@")[0]


def _mean_interval(
    values: Mapping[str, float], n_boot: int, seed: int
) -> tuple[float | None, tuple[float, float] | None]:
    """The mean over rows, with its bootstrap interval resampling tasks (a task with all its
    repeats)."""
    if not values:
        return None, None
    by_task: dict[str, list[float]] = {}
    for rid, v in values.items():
        by_task.setdefault(_task_of(rid), []).append(v)
    m = np.asarray([[sum(v), len(v)] for v in by_task.values()], dtype=np.float64)
    mean = float(m[:, 0].sum() / m[:, 1].sum())
    if n_boot <= 0:
        return mean, None
    rng = np.random.default_rng(seed)
    sums = np.empty((n_boot, 2))
    for rows, counts in resample_counts(len(m), n_boot, rng):
        sums[rows] = counts @ m
    ci = percentile_intervals({"v": sums[:, 0] / sums[:, 1]}, ["v"])["v"]
    return mean, ci


def run_score(
    run: Run, key: str, *, n_boot: int = 2000, seed: int = 0
) -> tuple[float | None, tuple[float, float] | None]:
    """A live run's value of `key` with its interval: its metrics file's, or, for a folder
    written before the metric, the mean of its rows with a bootstrap interval over tasks."""
    _live_rows(run)
    value = run.metric(key)
    if value is not None:
        return value, run.interval(key)
    return _mean_interval(run_values(run, key), n_boot, seed)


@dataclass(frozen=True)
class LiveMetricDiff:
    key: str
    a: float | None
    b: float | None
    diff: float | None  # b - a
    interval: tuple[float, float] | None  # paired bootstrap over tasks
    rows: int  # the rows (task and repeat) both runs scored with a value


def live_metric_diff(
    a: Run, b: Run, key: str, common: Sequence[str], *, n_boot: int, seed: int
) -> LiveMetricDiff:
    """The mean of `key` in `b` minus `a` over the rows both scored (`common`, row ids), with
    a paired bootstrap interval resampling tasks (a task with all its repeats)."""
    va, vb = run_values(a, key), run_values(b, key)
    rows = [r for r in common if r in va and r in vb]
    if not rows:
        return LiveMetricDiff(key, None, None, None, None, 0)
    tasks: dict[str, list[str]] = {}
    for r in rows:
        tasks.setdefault(_task_of(r), []).append(r)
    m = np.asarray(
        [[sum(va[r] for r in rs), sum(vb[r] for r in rs), len(rs)] for rs in tasks.values()],
        dtype=np.float64,
    )
    mean_a, mean_b = float(m[:, 0].sum() / m[:, 2].sum()), float(m[:, 1].sum() / m[:, 2].sum())
    interval = None
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        sums = np.empty((n_boot, 3))
        for idx, counts in resample_counts(len(m), n_boot, rng):
            sums[idx] = counts @ m
        samples = {key: (sums[:, 1] - sums[:, 0]) / sums[:, 2]}
        interval = percentile_intervals(samples, [key])[key]
    return LiveMetricDiff(key, mean_a, mean_b, mean_b - mean_a, interval, len(rows))
