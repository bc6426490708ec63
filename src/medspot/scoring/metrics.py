"""Metrics of protocol.md 2.4 from task scores: TCA, S1A, SHR, CSA, ACP, WPS, nWPS, ISA and the
propagation gap; pooled and macro; task-level bootstrap intervals; failure statistics and
breakdowns. Only tasks with status "scored" enter the metrics (protocol 2.7)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from medspot.scoring.failures import HISTOGRAM_ORDER

__all__ = [
    "ACP",
    "COLUMNS",
    "CSA",
    "GAP",
    "ISA",
    "LOWER_IS_BETTER",
    "METRIC_KEYS",
    "NWPS",
    "S1A",
    "SEQUENTIAL_KEYS",
    "SHORT_NAMES",
    "SHR",
    "TCA",
    "WPS",
    "MetricSet",
    "StepOutcome",
    "TaskCounts",
    "TaskOutcome",
    "bootstrap_intervals",
    "breakdown",
    "compute_metrics",
    "failure_statistics",
    "macro_average",
    "metrics_from_sums",
    "percentile_intervals",
    "resample_counts",
    "survival",
    "task_matrix",
]

TCA = "task_completion_accuracy"
S1A = "step1_accuracy"
SHR = "step_hit_rate"
ACP = "avg_correct_prefix"
WPS = "avg_weighted_prefix_score"
CSA = "conditional_step_accuracy"
NWPS = "normalized_weighted_prefix_score"
ISA = "independent_step_accuracy"
GAP = "propagation_gap"
SEQUENTIAL_KEYS = (TCA, S1A, SHR, CSA, ACP, WPS, NWPS)
METRIC_KEYS = (*SEQUENTIAL_KEYS, ISA, GAP)
# The metrics of which a smaller value is better (of the others, a larger one): the propagation
# gap, what sequential scoring loses to earlier misses. A diagnostic read beside the others,
# never ranked on its own where a format cannot say which way is better (the hub's leaderboards).
LOWER_IS_BETTER = frozenset({GAP})

_FAILURE_ORDER = HISTOGRAM_ORDER

Array = npt.NDArray[np.float64]


class StepOutcome(Protocol):
    """What the metrics read of a scored step: a `StepScore`, or a step row read back."""

    @property
    def evaluable(self) -> bool: ...
    @property
    def outcome(self) -> str: ...
    @property
    def hit(self) -> bool | None: ...
    @property
    def failure_type(self) -> str | None: ...
    @property
    def difficulty(self) -> str | None: ...
    @property
    def action_types(self) -> Sequence[str]: ...


class TaskCounts(Protocol):
    """The columns of `task_matrix`: what every metric of a task set is computed from (a
    `TaskScore`, or a task row read back through `TaskRow.counts`)."""

    @property
    def completed(self) -> bool: ...
    @property
    def step1_hit(self) -> bool: ...
    @property
    def correct_steps(self) -> int: ...
    @property
    def num_steps(self) -> int: ...
    @property
    def steps_evaluated(self) -> int: ...
    @property
    def weighted_prefix_score(self) -> float: ...
    @property
    def normalized_weighted_prefix_score(self) -> float: ...
    @property
    def independent_hits(self) -> int: ...
    @property
    def independent_steps(self) -> int: ...


class TaskOutcome(TaskCounts, Protocol):
    """What the metrics read of a scored task: a `TaskScore`."""

    @property
    def status(self) -> str: ...
    @property
    def num_unannotated_steps(self) -> int: ...
    @property
    def histogram_type(self) -> str | None: ...
    @property
    def failed_difficulty(self) -> str | None: ...
    @property
    def end_rank(self) -> int | None: ...
    @property
    def max_rank(self) -> int: ...
    @property
    def steps(self) -> Sequence[StepOutcome]: ...


@dataclass(frozen=True)
class MetricSet:
    """Metric values (None where undefined, e.g. no task) with 95% bootstrap intervals."""

    values: dict[str, float | None]
    intervals: dict[str, tuple[float, float] | None]
    num_tasks: int
    num_steps: int
    num_excluded_tasks: int
    num_errored_tasks: int
    num_unannotated_steps: int
    complete: bool

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(self.values)
        d.update(
            num_tasks=self.num_tasks,
            num_steps=self.num_steps,
            num_excluded_tasks=self.num_excluded_tasks,
            num_errored_tasks=self.num_errored_tasks,
            num_unannotated_steps=self.num_unannotated_steps,
            complete=self.complete,
            confidence_intervals={
                k: list(v) if v is not None else None for k, v in self.intervals.items()
            },
        )
        return d


SHORT_NAMES: dict[str, str] = {
    "task_completion_accuracy": "TCA",
    "step1_accuracy": "S1A",
    "step_hit_rate": "SHR",
    "conditional_step_accuracy": "CSA",
    "avg_correct_prefix": "ACP",
    "avg_weighted_prefix_score": "WPS",
    "normalized_weighted_prefix_score": "nWPS",
    "independent_step_accuracy": "ISA",
    "propagation_gap": "gap",
}


# The columns of the task matrix, in order (the fields of `TaskCounts`). Every metric is one
# formula over their sums in `metrics_from_sums`; a new metric needs a formula there (and a new
# column here only if no existing column sum gives it), a key above and its short name.
COLUMNS = (
    "completed",
    "step1_hit",
    "correct_steps",
    "num_steps",
    "steps_evaluated",
    "weighted_prefix_score",
    "normalized_weighted_prefix_score",
    "independent_hits",
    "independent_steps",
)


def task_matrix(tasks: Sequence[TaskCounts]) -> Array:
    """One row per task, one column per name in `COLUMNS`."""
    rows = [
        (
            float(t.completed),
            float(t.step1_hit),
            t.correct_steps,
            t.num_steps,
            t.steps_evaluated,
            t.weighted_prefix_score,
            t.normalized_weighted_prefix_score,
            t.independent_hits,
            t.independent_steps,
        )
        for t in tasks
    ]
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(COLUMNS))


def metrics_from_sums(s: Array, n: int, all_steps: bool) -> dict[str, Array]:
    """Metrics from column sums `s` (shape (..., len(COLUMNS))) over `n` tasks; NaN where
    undefined."""
    with np.errstate(divide="ignore", invalid="ignore"):
        nt = np.float64(n) if n else np.float64(np.nan)
        out = {
            TCA: s[..., 0] / nt,
            S1A: s[..., 1] / nt,
            SHR: s[..., 2] / s[..., 3],
            CSA: s[..., 2] / s[..., 4],
            ACP: s[..., 2] / nt,
            WPS: s[..., 5] / nt,
            NWPS: s[..., 6] / nt,
        }
        if all_steps:
            out[ISA] = s[..., 7] / s[..., 8]
            out[GAP] = out[ISA] - out[SHR]
    return out


def bootstrap_intervals(
    matrix: Array,
    *,
    all_steps: bool,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    method: Literal["auto", "rows", "types"] = "auto",
) -> dict[str, tuple[float, float] | None]:
    """Percentile intervals from resampling tasks (rows) with replacement, vectorised: each
    resample's column sums are its resample counts times the matrix.

    Tasks take few distinct rows, so by default ("auto") the counts are drawn per distinct row
    (a multinomial over the row types, the same distribution as resampling tasks) when that is
    cheaper; "rows" always draws task indices."""
    n = matrix.shape[0]
    keys = METRIC_KEYS if all_steps else SEQUENTIAL_KEYS
    if n == 0 or n_boot <= 0:
        return dict.fromkeys(keys)
    rng = np.random.default_rng(seed)
    uniq, counts_u = np.unique(matrix, axis=0, return_counts=True)
    if method == "types" or (method == "auto" and 4 * len(uniq) <= n):
        draws = rng.multinomial(n, counts_u / n, size=n_boot)
        sums = draws.astype(np.float64) @ uniq
    else:
        sums = _resample_rows(matrix, n_boot, rng)
    return percentile_intervals(metrics_from_sums(sums, n, all_steps), keys, level)


def percentile_intervals(
    samples: Mapping[str, Array], keys: Sequence[str], level: float = 0.95
) -> dict[str, tuple[float, float] | None]:
    """The central `level` percentile interval of each metric's bootstrap samples (undefined
    resamples left out; None when none is defined)."""
    lo_q, hi_q = 100 * (1 - level) / 2, 100 * (1 + level) / 2
    out: dict[str, tuple[float, float] | None] = {}
    for k in keys:
        v = samples[k]
        v = v[np.isfinite(v)]
        if v.size == 0:
            out[k] = None
        else:
            lo, hi = np.percentile(v, [lo_q, hi_q])
            out[k] = (float(lo), float(hi))
    return out


def resample_counts(
    n: int, n_boot: int, rng: np.random.Generator, *, max_cells: int = 4_000_000
) -> Iterator[tuple[slice, Array]]:
    """The task bootstrap: `n_boot` resamples of `n` tasks with replacement, as how often each
    task is drawn, in chunks of at most `max_cells` draws: (rows of the resample, counts of
    shape (rows, n)). A resample's column sums are its counts times the task matrix; the same
    counts applied to two runs' matrices give a paired bootstrap."""
    chunk = max(1, min(n_boot, max_cells // n))
    done = 0
    while done < n_boot:
        c = min(chunk, n_boot - done)
        idx = rng.integers(0, n, size=(c, n))
        idx += np.arange(c)[:, None] * n
        counts = np.bincount(idx.ravel(), minlength=c * n).reshape(c, n)
        yield slice(done, done + c), counts.astype(np.float64)
        done += c


def _resample_rows(matrix: Array, n_boot: int, rng: np.random.Generator) -> Array:
    sums = np.empty((n_boot, matrix.shape[1]), dtype=np.float64)
    for rows, counts in resample_counts(matrix.shape[0], n_boot, rng):
        sums[rows] = counts @ matrix
    return sums


def _finite(x: Any) -> float | None:
    v = float(x)
    return v if np.isfinite(v) else None


def compute_metrics(
    tasks: Sequence[TaskOutcome], *, all_steps: bool, n_boot: int = 2000, seed: int = 0
) -> MetricSet:
    """Metrics over the tasks with status "scored"; the rest are counted."""
    scored = [t for t in tasks if t.status == "scored"]
    m = task_matrix(scored)
    vals = metrics_from_sums(m.sum(axis=0), len(scored), all_steps)
    return MetricSet(
        values={k: _finite(v) for k, v in vals.items()},
        intervals=bootstrap_intervals(m, all_steps=all_steps, n_boot=n_boot, seed=seed),
        num_tasks=len(scored),
        num_steps=int(m[:, 3].sum()),
        num_excluded_tasks=sum(1 for t in tasks if t.status == "excluded"),
        num_errored_tasks=sum(1 for t in tasks if t.status in ("errored", "incomplete")),
        num_unannotated_steps=sum(t.num_unannotated_steps for t in tasks),
        complete=all(t.status in ("scored", "excluded") for t in tasks),
    )


def macro_average(per_app: Mapping[str, MetricSet]) -> dict[str, float | None]:
    """Unweighted mean over applications of each metric (apps where it is undefined skipped)."""
    keys: list[str] = []
    for ms in per_app.values():
        keys.extend(k for k in ms.values if k not in keys)
    out: dict[str, float | None] = {}
    for k in keys:
        vs = [v for ms in per_app.values() if (v := ms.values.get(k)) is not None]
        out[k] = float(np.mean(vs)) if vs else None
    return out


def _ordered(c: Counter[str]) -> dict[str, int]:
    known = [k for k in _FAILURE_ORDER if k in c]
    return {k: c[k] for k in [*known, *sorted(set(c) - set(known))]}


def failure_statistics(tasks: Sequence[TaskOutcome], *, all_steps: bool) -> dict[str, Any]:
    """Histogram of task failure types (the protocol decides which step types a task and which
    failed tasks count), by target size of that step, and in all-steps mode every miss typed."""
    hist: Counter[str] = Counter()
    by_size: defaultdict[str, Counter[str]] = defaultdict(Counter)
    failed = 0
    step_hist: Counter[str] = Counter()
    for t in tasks:
        if t.status != "scored":
            continue
        if not t.completed:
            failed += 1
        if t.histogram_type is not None:
            hist[t.histogram_type] += 1
            by_size[t.failed_difficulty or "unknown"][t.histogram_type] += 1
        if all_steps:
            for s in t.steps:
                if s.evaluable and s.hit is False and s.failure_type is not None:
                    step_hist[s.failure_type] += 1
    out: dict[str, Any] = {
        "failure_type_histogram": _ordered(hist),
        "failure_by_difficulty": {
            k: _ordered(by_size[k]) for k in ("small", "medium", "large", "unknown") if k in by_size
        },
        "total_failed_tasks": failed,
    }
    if all_steps:
        out["step_failure_histogram"] = _ordered(step_hist)
    return out


def survival(tasks: Sequence[TaskOutcome]) -> list[float]:
    """Share of scored tasks still alive (not ended by a miss) after step k, k = 0..max, with k
    counted as the protocol counts positions (among evaluable steps, or among all steps)."""
    scored = [t for t in tasks if t.status == "scored"]
    if not scored:
        return []
    kmax = max(t.max_rank for t in scored)
    ends = np.array(
        [t.end_rank if t.end_rank is not None else np.inf for t in scored], dtype=np.float64
    )
    return [float(np.mean(ends > k)) for k in range(kmax + 1)]


def breakdown(
    tasks: Sequence[TaskOutcome],
    by: Literal["action_type", "target_size"],
    *,
    all_steps: bool = False,
) -> dict[str, dict[str, float | int | None]]:
    """Hit rate of the steps reached (sequential), grouped by action type or target size; in
    all-steps mode also the independent hit rate over every evaluable step."""
    seq: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    ind: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    for t in tasks:
        if t.status != "scored":
            continue
        for s in t.steps:
            if not s.evaluable:
                continue
            keys = s.action_types if by == "action_type" else (s.difficulty or "unknown",)
            for key in keys:
                if s.outcome in ("hit", "miss"):
                    seq[key][0] += 1
                    seq[key][1] += int(s.outcome == "hit")
                if all_steps and s.hit is not None:
                    ind[key][0] += 1
                    ind[key][1] += int(s.hit)
    out: dict[str, dict[str, float | int | None]] = {}
    for key in sorted(set(seq) | set(ind)):
        n, h = seq[key]
        row: dict[str, float | int | None] = {
            "steps": n,
            "hits": h,
            "hit_rate": h / n if n else None,
        }
        if all_steps:
            ni, hi = ind[key]
            row.update(
                independent_steps=ni,
                independent_hits=hi,
                independent_hit_rate=hi / ni if ni else None,
            )
        out[key] = row
    return out
