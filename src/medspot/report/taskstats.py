"""Per-task metric vectors read back from task rows, and the metrics of protocol.md 2.4 as
functions of their column sums (the same columns as `medspot.scoring.metrics.task_matrix`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from medspot.runfolder.schema import TaskRow
from medspot.scoring import metrics as _metrics

__all__ = ["COLUMNS", "metrics_from_sums", "step1_hit", "task_matrix", "task_vector"]

Array = npt.NDArray[np.float64]

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


def step1_hit(task: TaskRow, s1a_step: str = "first_evaluable") -> bool:
    """Whether the task's S1A step is a hit: the row's `step1_hit` when written, else the first
    evaluable step (or the literal first step under presets that say so)."""
    if task.step1_hit is not None:
        return bool(task.step1_hit)
    if s1a_step == "literal_first":
        first = task.steps[0] if task.steps else None
    else:
        first = next((s for s in task.steps if s.evaluable), None)
    return first is not None and first.outcome == "hit"


def task_vector(task: TaskRow, s1a_step: str = "first_evaluable") -> list[float]:
    ind = [s for s in task.steps if s.evaluable and s.hit is not None]
    return [
        float(task.completed),
        float(step1_hit(task, s1a_step)),
        float(task.correct_steps),
        float(task.num_steps),
        float(task.steps_evaluated),
        float(task.weighted_prefix_score),
        float(task.normalized_weighted_prefix_score),
        float(sum(1 for s in ind if s.hit)),
        float(len(ind)),
    ]


def task_matrix(tasks: Sequence[TaskRow], s1a_step: str = "first_evaluable") -> Array:
    rows = [task_vector(t, s1a_step) for t in tasks]
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(COLUMNS))


def metrics_from_sums(s: Array, n: int, *, all_steps: bool) -> dict[str, Any]:
    """Metric values (arrays, NaN where undefined) from column sums `s` over `n` tasks: the
    scorer's own formulas."""
    return dict(_metrics.metrics_from_sums(s, n, all_steps))
