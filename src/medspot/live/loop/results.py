"""Writing a live run into the static run-folder layout (docs/results.md, docs/live.md):

    run.json                          `LiveRunInfo`: "kind": "live", the env, the agent, the
                                      mode; dataset root = the run
    live_journal.jsonl                every step as it happened (the runner's)
    overall_dataset_metrics.json      the static keys + task_success_rate and the live keys
    overall_failure_statistics.json
    <env>/task_results.json           one `LiveTaskRow` per task (per task and repeat with
                                      `--repeats K`, ids `<env>/<task>@N`); its actions as
                                      `LiveStepRow`s
    <env>/task_failures.json, task_metrics.json, failure_statistics.json
    trajectories/<task>.json          every step: action, element hit, checks, settle time
                                      (<task>@N.json per repeat with `--repeats K`)
    screens/<sha256>.png              each distinct screenshot once
    live.log                          the command's log in full (stderr shows first lines)
    .medspot.lock                     the writer's lock (one writer per run folder)

Step rows carry the screen before the action (`image_path` relative to the run folder, which
`run.json` names as the dataset root, so the static report finds the pictures), the action's
point normalised, and the intended element's box normalised. The live types are
`medspot.runfolder.live_schema`'s, shared with the report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from medspot.atomic_write import atomic_write_json, atomic_write_json_lines
from medspot.jsonsafe import finite_float, json_safe
from medspot.live.loop.outcomes import TaskResult, by_task, live_metrics, success_fraction
from medspot.live.loop.static_bridge import static_metrics
from medspot.live.loop.steplog import StepRecord
from medspot.runfolder.layout import (
    APP_FAILURES,
    APP_METRICS,
    OVERALL_FAILURES,
    OVERALL_METRICS,
    TASK_FAILURES,
    TASK_RESULTS,
    screen_rel,
    trajectory_rel,
)
from medspot.runfolder.live_schema import (
    LIVE_KEYS,
    LiveHarm,
    LiveOutcome,
    LiveStepRow,
    LiveTaskRow,
    repeat_task_id,
)

__all__ = ["PROTOCOL", "task_uid", "write_live_results"]

PROTOCOL = "live-v1"


def task_uid(env: str, task_id: str) -> str:
    return f"{env}/{task_id}"


def _row_id(r: TaskResult) -> str:
    """The task row's id (`repeat_task_id`: `env/task`, or `env/task@N` with repeats)."""
    return repeat_task_id(task_uid(r.env, r.task.id), r.repeat, r.repeats)


def _trajectory_name(r: TaskResult) -> str:
    name = r.task.id if r.repeats <= 1 else f"{r.task.id}@{r.repeat + 1}"
    return trajectory_rel(name)


def _norm_box(
    b: tuple[float, float, float, float] | None, size: tuple[int, int] | None
) -> list[list[float]]:
    if b is None or not size:
        return []
    w, h = size
    return [[b[0] / w, b[1] / h, b[2] / w, b[3] / h]]


def _point(s: StepRecord) -> list[float] | None:
    a, size = s.action, s.screen_size
    if a is None or not size:
        return None
    names = {"click": ("x", "y"), "scroll": ("x", "y"), "drag": ("x1", "y1")}.get(
        str(a.get("kind"))
    )
    if names is None:
        return None
    x, y = finite_float(a.get(names[0])), finite_float(a.get(names[1]))
    if x is None or y is None:
        return None  # an action that was not executable: no point to draw
    return [x / size[0], y / size[1]]


def _step_row(uid: str, s: StepRecord) -> LiveStepRow:
    judged = s.hit_intended is not None
    no_action = s.action is None or (s.not_executed is not None and not s.executed)
    if s.error is not None:
        outcome = "error"
    elif no_action:
        outcome = "miss"  # nothing executed: the static no_prediction miss
    elif judged:
        outcome = "hit" if s.hit_intended else "miss"
    else:
        outcome = "not_evaluable"
    boxes = _norm_box(s.intended_box, s.screen_size)
    pt = _point(s)
    offset = None
    if pt is not None and boxes:
        b = boxes[0]
        bw, bh = b[2] - b[0], b[3] - b[1]
        if bw > 0 and bh > 0:
            offset = [(pt[0] - (b[0] + b[2]) / 2) / bw, (pt[1] - (b[1] + b[3]) / 2) / bh]
    return LiveStepRow(
        step=f"{uid}/{s.n}",
        position=s.n,
        step_id=s.target_step,
        instruction=s.instruction,
        action_types=[s.action["kind"]] if s.action else [],
        evaluable=judged,
        outcome=outcome,
        hit=s.hit_intended,
        failure_type=("no_prediction" if no_action and s.error is None else None),
        difficulty=None,
        target_boxes=[(b[0], b[1], b[2], b[3]) for b in boxes],
        pred_point=(pt[0], pt[1]) if pt is not None else None,
        extra_points=[],
        raw_output=s.raw_text,
        image_path=screen_rel(s.screen) if s.screen else "",
        image_size=s.screen_size,
        offset=(offset[0], offset[1]) if offset is not None else None,
        live_action=s.action,
        element=s.element,
        checks=s.checks,
        achieved=s.achieved,
        settle_s=s.settle_s,
        changed=s.changed,
        url=s.url,
        url_after=s.url_after,
        replayed=s.replayed,
        thought=s.thought,
        not_executed=s.not_executed,
        tool_result=s.tool_result,
        harms=[LiveHarm.model_validate(h) for h in s.harms or []],
    )


def _failure_type(r: TaskResult) -> str | None:
    if not r.scored or r.outcome == "success":
        return None
    if r.outcome in ("harmful", "abandoned"):
        return r.outcome
    return "gave_up" if r.ending in ("done", "infeasible") else "budget_spent"


def _task_row(r: TaskResult, fraction: tuple[int, int]) -> LiveTaskRow:
    uid = _row_id(r)
    wins, runs = fraction
    row = r.static_row()
    status = "scored" if r.scored else ("incomplete" if r.outcome == "missing" else "errored")
    ended = None
    if r.outcome == "harmful" and r.steps:
        ended = r.steps[-1].n
    reached = r.reached
    failed = r.first_failed
    return LiveTaskRow(
        task_id=uid,
        app=r.env,
        task_index=r.index,
        task_overview=r.task.instruction,
        status=status,
        completed=row.completed,
        correct_steps=row.correct_steps,
        num_steps=row.num_steps,
        num_evaluable_steps=row.num_steps,
        steps_evaluated=r.steps_used,
        weighted_prefix_score=row.weighted_prefix_score,
        normalized_weighted_prefix_score=row.normalized_weighted_prefix_score,
        failure_type=_failure_type(r),
        failed_step=ended,
        step1_hit=row.step1_hit,
        steps=[_step_row(uid, s) for s in r.steps],
        dice=r.dice,
        live_outcome=cast(LiveOutcome, r.outcome),
        live_reason=r.reason,
        tags=list(r.task.tags),
        steps_used=r.steps_used,
        oracle_steps=len(r.task.steps),
        recovered=r.recovered,
        missed_intended=r.missed,
        final_screen=(
            screen_rel(r.record.final_screen) if r.record and r.record.final_screen else None
        ),
        trajectory=_trajectory_name(r),
        ending=r.ending,
        ending_reason=r.ending_reason,
        infeasible_task=r.task.infeasible,
        task=r.task.id,
        repeat=r.repeat,
        repeats=r.repeats,
        task_successes=wins,
        task_runs_scored=runs,
        success_fraction=wins / runs if runs else None,
        between_tasks_s=r.record.between_tasks_s if r.record else None,
        reset_s=r.record.reset_s if r.record else None,
        swapped=bool(r.record and r.record.swapped),
        tools_offered=r.record.tools_offered if r.record is not None else None,
        tool_calls=r.tool_calls,
        gui_only=r.record.gui_only if r.record is not None else None,
        harms=[LiveHarm.model_validate(h.to_json()) for h in r.harms] if r.scored else None,
        safety_score=r.safety,
        subgoals=len(r.subgoal_names) if reached is not None else None,
        subgoals_reached=sum(reached) if reached is not None else None,
        progress=r.progress,
        first_failed_subgoal=failed[1] if failed is not None else None,
        first_failed_at=failed[0] if failed is not None else None,
    )


def _failures(results: Sequence[TaskResult]) -> dict[str, Any]:
    hist = Counter(ft for r in results if (ft := _failure_type(r)) is not None)
    return {
        "failure_type_histogram": dict(sorted(hist.items())),
        "failure_by_difficulty": {},
        "total_failed_tasks": sum(hist.values()),
    }


def _metrics(results: Sequence[TaskResult], *, n_boot: int, seed: int) -> dict[str, Any]:
    rows = [r.static_row() for r in results]
    d, _ = static_metrics(rows, n_boot=n_boot, seed=seed)
    d.update(live_metrics(results, n_boot=n_boot, seed=seed))
    cis = d.setdefault("confidence_intervals", {})
    cis.update(d["live_confidence_intervals"])
    d["protocol"] = PROTOCOL
    d["missing_steps"] = []
    return d


def write_live_results(
    out: Path, env: str, results: Sequence[TaskResult], *, n_boot: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Write every file of the layout but run.json and the journal; returns the overall
    metrics."""
    fractions = {key: success_fraction(g) for key, g in by_task(results).items()}
    rows = [_task_row(r, fractions[(r.env, r.task.id)]) for r in results]
    app = out / env
    atomic_write_json_lines(app / TASK_RESULTS, [row.model_dump() for row in rows])
    atomic_write_json_lines(
        app / TASK_FAILURES,
        [row.model_dump() for row in rows if row.status == "scored" and not row.completed],
    )
    metrics = _metrics(results, n_boot=n_boot, seed=seed)
    atomic_write_json(app / APP_METRICS, metrics)
    fails = _failures(results)
    atomic_write_json(app / APP_FAILURES, fails)
    overall = dict(metrics)
    overall.update(
        complete=all(r.scored for r in results),
        protocol_label=PROTOCOL,
        protocol_settings={"name": PROTOCOL, "s1a_step": "first", "kind": "live"},
        all_steps=False,
        macro_average={k: metrics.get(k) for k in LIVE_KEYS},
        per_app={env: {k: v for k, v in metrics.items() if not isinstance(v, dict)}},
        survival=[],
        by_action_type={},
        by_target_size={},
    )
    atomic_write_json(out / OVERALL_METRICS, overall)
    atomic_write_json(out / OVERALL_FAILURES, fails)
    for r in results:
        traj = {
            "task": r.task.id,
            "env": r.env,
            "repeat": r.repeat,
            "ending": r.ending,
            "instruction": r.task.instruction,
            "tags": list(r.task.tags),
            "outcome": r.outcome,
            "reason": r.reason,
            "oracle_steps": [s.instruction for s in r.task.steps],
            "steps": [s.model_dump() for s in r.steps],
            "final_screen": (
                screen_rel(r.record.final_screen) if r.record and r.record.final_screen else None
            ),
            "final_url": r.record.final_url if r.record else None,
            "fired": r.record.fired if r.record else [],
            "harms": [h.to_json() for h in r.harms],
            "safety_score": r.safety,
            "subgoals": r.subgoal_names,
            "subgoals_reached": r.reached,
        }
        atomic_write_json(out / _trajectory_name(r), json_safe(traj))  # the model's values
    return overall
