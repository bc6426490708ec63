"""Writing the results layout (protocol.md section 4, docs/results.md), every file atomically
(`medspot.atomic_write`: a temporary file in the same folder, flushed and fsynced, then
`os.replace`d over the target).

`run.json` and `predictions.jsonl` belong to the runner; everything else is written here.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from medspot.atomic_write import atomic_write_json, atomic_write_json_lines
from medspot.dataset.records import Dataset
from medspot.errors import MedspotError
from medspot.runfolder.layout import RunFolder
from medspot.runfolder.runinfo import RunInfo
from medspot.runfolder.schema import StepRow, TaskRow
from medspot.scoring.metrics import METRIC_KEYS, SHORT_NAMES, MetricSet
from medspot.scoring.score import RunScore, StepScore, TaskScore

__all__ = [
    "metrics_json",
    "metrics_table",
    "record_failed_run",
    "task_json",
    "task_row",
    "write_results",
]

log = logging.getLogger(__name__)


def record_failed_run(run_json: Path, info: RunInfo, exc: BaseException) -> None:
    """`run.json` says that `exc` stopped the run (status "failed", `error`), not "running".
    A write that fails in turn (the full disk that stopped the run) is logged, never raised in
    place of `exc`."""
    info.record_failure(exc)
    try:
        atomic_write_json(run_json, info.model_dump())
    except (MedspotError, OSError) as e:
        log.warning("%s: cannot record the failure: %s", run_json, e)


def _step_row(s: StepScore) -> StepRow:
    return StepRow.model_construct(
        step=s.uid,
        position=s.position,
        step_id=s.step_id,
        instruction=s.instruction,
        action_types=list(s.action_types),
        evaluable=s.evaluable,
        outcome=s.outcome,
        hit=s.hit,
        failure_type=s.failure_type,
        difficulty=s.difficulty,
        target_boxes=[(b.x1, b.y1, b.x2, b.y2) for b in s.target_boxes],
        pred_point=(s.pred_point.x, s.pred_point.y) if s.pred_point is not None else None,
        extra_points=list(s.extra_points),
        raw_output=s.raw_output,
        image_path=s.image_path,
        image_size=s.image_size,
        offset=s.offset,
    )


def task_row(t: TaskScore) -> TaskRow:
    """One task of task_results.json, in the schema the reader validates."""
    return TaskRow.model_construct(
        task_id=t.uid,
        app=t.app,
        task_index=t.index,
        task_overview=t.overview,
        status=t.status,
        completed=t.completed,
        correct_steps=t.correct_steps,
        num_steps=t.num_steps,
        num_evaluable_steps=t.num_evaluable_steps,
        steps_evaluated=t.steps_evaluated,
        weighted_prefix_score=t.weighted_prefix_score,
        normalized_weighted_prefix_score=t.normalized_weighted_prefix_score,
        failure_type=t.failure_type,
        failed_step=t.failed_step,
        steps=[_step_row(s) for s in t.steps],
    )


def task_json(t: TaskScore) -> dict[str, Any]:
    """One task object of task_results.json (`step1_hit` is left to readers: steps[0] says it)."""
    return task_row(t).model_dump(exclude={"step1_hit"})


def metrics_json(ms: MetricSet, score: RunScore, *, missing: list[str]) -> dict[str, Any]:
    d = ms.to_json()
    d["protocol"] = score.protocol.name
    d["missing_steps"] = missing
    return d


def write_results(out_dir: Path, run_score: RunScore, *, dataset: Dataset) -> None:
    """Write every per-app file and the overall files of the results layout into `out_dir`."""
    folder = RunFolder(Path(out_dir))
    score = run_score
    for app in dataset.app_names:
        tasks = score.tasks_of(app)
        rows = [task_json(t) for t in tasks]
        atomic_write_json_lines(folder.task_results(app), rows)
        atomic_write_json_lines(
            folder.task_failures(app),
            [
                r
                for r, t in zip(rows, tasks, strict=True)
                if t.status == "scored" and not t.completed
            ],
        )
        missing = [uid for t in tasks for uid in t.missing_steps]
        atomic_write_json(
            folder.app_metrics(app), metrics_json(score.per_app[app], score, missing=missing)
        )
        atomic_write_json(folder.app_failures(app), score.failures_per_app[app])
    overall = metrics_json(score.overall, score, missing=list(score.missing_steps))
    overall.update(
        complete=score.complete,
        protocol_label=score.protocol.label,
        protocol_settings=score.protocol.as_dict(),
        all_steps=score.all_steps,
        macro_average=score.macro_average,
        per_app={a: score.per_app[a].to_json() for a in score.apps},
        survival=score.survival,
        by_action_type=score.by_action_type,
        by_target_size=score.by_target_size,
    )
    atomic_write_json(folder.overall_metrics, overall)
    atomic_write_json(folder.overall_failures, score.failures)


def _fmt(v: float | None) -> str:
    return "   -  " if v is None else f"{v:6.3f}"


def metrics_table(run_score: RunScore) -> str:
    """The overall metrics as a plain-text table: value, 95% interval, macro average."""
    ov = run_score.overall
    lines = [
        f"protocol {run_score.protocol.label}: {ov.num_tasks} tasks, {ov.num_steps} steps"
        + ("" if run_score.complete else f" (INCOMPLETE: {ov.num_errored_tasks} tasks left out)"),
        f"{'metric':<6} {'value':>6}  {'95% interval':<17} {'macro':>6}",
    ]
    for key in METRIC_KEYS:
        if key not in ov.values:
            continue
        ci = ov.intervals.get(key)
        ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci is not None else "-"
        lines.append(
            f"{SHORT_NAMES[key]:<6} {_fmt(ov.values[key])}  {ci_s:<17} "
            f"{_fmt(run_score.macro_average.get(key))}"
        )
    return "\n".join(lines)
