"""Pure mappings between medspot's rows and what an Inspect sample carries: the journal records
of a sample (kept in its store), the score of a task (its task-matrix columns as the score's
value, the rest of its row as the score's metadata), and the metrics over the samples' scores,
by the formulas of `medspot.scoring.metrics` (so Inspect's metrics are medspot's); for a live
task, its columns of the live task matrix and the live rates of `medspot.live.loop.outcomes`.

No `inspect_ai` here: plain dicts and lists, as Inspect logs them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from medspot.live.loop.outcomes import BOOTSTRAP_COLUMNS, rates_from_sums
from medspot.runfolder.journal import JournalRecord
from medspot.scoring.metrics import COLUMNS, metrics_from_sums
from medspot.scoring.score import TaskScore

__all__ = [
    "RECORDS_KEY",
    "SCORED",
    "SETTINGS_KEY",
    "live_pooled_metrics",
    "live_value",
    "pooled_metrics",
    "record_rows",
    "records_of",
    "score_answer",
    "score_metadata",
    "score_value",
]

# The key of a sample's store under which the solver keeps the journal records of its calls.
RECORDS_KEY = "medspot_records"
# The key of the task's metadata under which the static task records its run settings (the
# fields of run.json: protocol, prompt style, dataset, adapter, ...).
SETTINGS_KEY = "medspot"
SCORED = "scored"  # the task status whose tasks enter the metrics (protocol 2.7)


def record_rows(records: Iterable[JournalRecord]) -> list[dict[str, Any]]:
    """Journal records as JSON values (a sample's store holds them)."""
    return [r.model_dump(mode="json") for r in records]


def records_of(rows: Iterable[Mapping[str, Any]]) -> list[JournalRecord]:
    """The journal records a sample's store holds, validated as the journal reads them."""
    return [JournalRecord.model_validate(dict(r)) for r in rows]


def score_value(ts: TaskScore) -> dict[str, float]:
    """A task's score as Inspect's value: its columns of the task matrix (`COLUMNS`), the
    numbers every metric of a set of tasks is computed from."""
    return {name: float(getattr(ts, name)) for name in COLUMNS}


def _point(p: Any) -> list[float] | None:
    return [p.x, p.y] if p is not None else None


def score_metadata(ts: TaskScore) -> dict[str, Any]:
    """What else medspot says of a task: its status (only "scored" tasks enter the metrics),
    completion, the failure taxonomy of its ending miss, and each step's outcome."""
    return {
        "task": ts.uid,
        "app": ts.app,
        "status": ts.status,
        "completed": ts.completed,
        "correct_steps": ts.correct_steps,
        "num_evaluable_steps": ts.num_evaluable_steps,
        "failure_type": ts.failure_type,
        "failed_step": ts.failed_step,
        "failed_difficulty": ts.failed_difficulty,
        "histogram_type": ts.histogram_type,
        "missing_steps": list(ts.missing_steps),
        "steps": [
            {
                "step": s.uid,
                "outcome": s.outcome,
                "hit": s.hit,
                "failure_type": s.failure_type,
                "point": _point(s.pred_point),
                "difficulty": s.difficulty,
            }
            for s in ts.steps
        ],
    }


def score_answer(ts: TaskScore) -> str:
    """One line for Inspect's answer column."""
    if ts.status != SCORED:
        return f"{ts.status} ({len(ts.missing_steps)} step(s) without an answer)"
    if ts.completed:
        return f"completed: {ts.correct_steps}/{ts.num_evaluable_steps} steps"
    where = f"step {ts.failed_step}" if ts.failed_step is not None else "a step"
    return f"ended at {where} ({ts.failure_type or 'miss'}): {ts.correct_steps} correct"


def pooled_metrics(
    scores: Sequence[tuple[Mapping[str, Any], str]], *, all_steps: bool
) -> dict[str, float]:
    """medspot's pooled metrics over the scored tasks of (score value, status) pairs: the
    column sums through `metrics_from_sums`; undefined metrics are left out."""
    rows = [[float(v[name]) for name in COLUMNS] for v, status in scores if status == SCORED]
    matrix = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(COLUMNS))
    values = metrics_from_sums(matrix.sum(axis=0), len(rows), all_steps)
    out: dict[str, float] = {}
    for key, v in values.items():
        x = float(v)
        if math.isfinite(x):
            out[key] = x
    return out


# -- MedSPOT-Live -----------------------------------------------------------------------------
def live_value(columns: Sequence[float]) -> dict[str, float]:
    """A live task's score as Inspect's value: its columns of the live task matrix
    (`live.loop.outcomes.BOOTSTRAP_COLUMNS`: scored, success, harmful, ...)."""
    return {name: float(v) for name, v in zip(BOOTSTRAP_COLUMNS, columns, strict=True)}


def live_pooled_metrics(values: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """medspot's live metrics over samples' live values: the column sums through
    `live.loop.outcomes.rates_from_sums` (one run per task); undefined ones left out."""
    sums = [sum(float(v.get(name, 0.0)) for v in values) for name in BOOTSTRAP_COLUMNS]
    return {k: v for k, v in rates_from_sums(sums).items() if v is not None}
