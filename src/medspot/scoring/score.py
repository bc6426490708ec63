"""Pure scoring: the sequential walk of a task under a protocol, step judgements, failure types,
task scores and the whole run's score. Everything is computed from journal records alone.

One code path, parameterised by the knobs of `medspot.scoring.protocol.Protocol`.
"""

from __future__ import annotations

import logging
import math
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from medspot.dataset.records import Dataset, Step, Task, size_class
from medspot.geometry import Box, Point, clamp_point, is_finite, point_in_box
from medspot.scoring import metrics
from medspot.scoring.failures import FAILURE_TYPES, UNTYPED
from medspot.scoring.protocol import FailureOrder, Protocol

__all__ = [
    "FAILURE_TYPES",
    "UNTYPED",
    "CallRecord",
    "Judgement",
    "RunScore",
    "StepOutcomeName",
    "StepScore",
    "TaskScore",
    "TaskStatus",
    "classify_failure",
    "judge_step",
    "latest_predictions",
    "next_step",
    "score_run",
    "score_task",
    "steps_to_ask_all",
]

log = logging.getLogger(__name__)


_SMALL_AREA = 4e-4
_NEAR_SCALE = 1.5
_EDGE = 0.05
_TOOLBAR_Y = 0.12
_NEAR_DIST = 0.03
_SMALL_NEAR_DIST = 0.05


# -- failure taxonomy -----------------------------------------------------------------------------
def classify_failure(p: Point | None, box: Box, order: FailureOrder = "v1") -> str:
    """The failure type of a miss of `box` by `p` (normalised), first matching rule wins.

    v1 (protocol 2.5): no_prediction, small_target, near_miss (box scaled 1.5), edge_bias
    (x or y within 5% of an edge), toolbar_confusion (y < 0.12), far_miss. `v1-edge-x`: the same
    with the edge rule on x only. `upstream-b`: no_prediction, small_target, edge_bias (x only),
    toolbar_confusion, near_miss (distance to the box centre < 0.03 in normalised units),
    far_miss. `upstream-e`: as upstream-b, with small targets split into small_target_near /
    small_target_far by distance < 0.05."""
    if p is None:
        return "no_prediction"
    c = box.center
    dist = math.hypot(p.x - c.x, p.y - c.y)
    if box.area < _SMALL_AREA:
        if order == "upstream-e":
            return "small_target_near" if dist < _SMALL_NEAR_DIST else "small_target_far"
        return "small_target"
    edge_x = p.x < _EDGE or p.x > 1.0 - _EDGE
    edge_y = p.y < _EDGE or p.y > 1.0 - _EDGE
    if order in ("v1", "v1-edge-x"):
        if box.scaled(_NEAR_SCALE).contains(p):
            return "near_miss"
        if edge_x or (edge_y and order == "v1"):
            return "edge_bias"
        if p.y < _TOOLBAR_Y:
            return "toolbar_confusion"
        return "far_miss"
    if edge_x:
        return "edge_bias"
    if p.y < _TOOLBAR_Y:
        return "toolbar_confusion"
    if dist < _NEAR_DIST:
        return "near_miss"
    return "far_miss"


# -- one step -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Judgement:
    hit: bool
    point: Point | None  # after the protocol's out-of-image rule; None: no prediction
    failure_type: str | None


def _scored_point(rec: CallRecord, protocol: Protocol) -> Point | None:
    p = rec.prediction_point()
    if p is None or not is_finite(p):
        return None
    inside = 0.0 <= p.x <= 1.0 and 0.0 <= p.y <= 1.0
    if inside or protocol.out_of_image == "kept":
        return p
    if protocol.out_of_image == "clamped":
        return clamp_point(p)
    return None


def judge_step(step: Step, protocol: Protocol, rec: CallRecord) -> Judgement:
    """Hit or miss of one evaluable step from its prediction record."""
    targets = protocol.targets(step)
    if not targets:
        raise ValueError(f"step {step.uid} is not evaluable under {protocol.name}")
    return _judge(targets, protocol, rec)


def _judge(targets: tuple[Box, ...], protocol: Protocol, rec: CallRecord) -> Judgement:
    p = _scored_point(rec, protocol)
    if p is None:
        return Judgement(False, None, "no_prediction")
    tol = 0.0
    size = rec.image_size
    if protocol.has_tolerance:
        if size is None:
            log.warning("%s: no image size recorded; scoring without tolerance", rec.step)
        else:
            tol = protocol.tolerance_for(size)
    if any(point_in_box(p, b, tol, size) for b in targets):
        return Judgement(True, p, None)
    return Judgement(False, p, classify_failure(p, targets[0], protocol.failure_order))


# -- journal --------------------------------------------------------------------------------------
class CallRecord(typing.Protocol):
    """What scoring reads of one model call (a journal record): normalised coordinates."""

    @property
    def step(self) -> str: ...
    @property
    def ok(self) -> bool: ...
    @property
    def image_size(self) -> tuple[int, int] | None: ...
    @property
    def extra_points(self) -> Sequence[tuple[float, float]]: ...
    @property
    def raw_text(self) -> str | None: ...
    def prediction_point(self) -> Point | None: ...


StepOutcomeName = Literal["hit", "miss", "not_reached", "not_evaluable", "error", "missing"]
TaskStatus = Literal["scored", "errored", "incomplete", "excluded"]

R = TypeVar("R", bound=CallRecord)


def latest_predictions(records: Iterable[R]) -> tuple[dict[str, R], dict[str, R]]:
    """For each step, the latest successful record; and, for steps with no success, the latest
    error record."""
    ok: dict[str, R] = {}
    errored: dict[str, R] = {}
    for r in records:
        if r.ok:
            ok[r.step] = r
        else:
            errored[r.step] = r
    return ok, {k: v for k, v in errored.items() if k not in ok}


# -- the walk -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepScore:
    uid: str
    position: int
    step_id: int
    instruction: str
    action_types: tuple[str, ...]
    evaluable: bool
    outcome: StepOutcomeName
    hit: bool | None  # for not_reached steps in all-steps mode: the independent hit
    failure_type: str | None
    difficulty: str | None
    target_boxes: tuple[Box, ...]
    pred_point: Point | None
    extra_points: tuple[tuple[float, float], ...]
    raw_output: str | None
    image_path: str
    image_size: tuple[int, int] | None
    offset: tuple[float, float] | None
    rank: int  # position used for alpha^(rank-1) and survival (protocol.wps_position)


@dataclass(frozen=True)
class TaskScore:
    uid: str
    app: str
    index: int
    overview: str
    status: TaskStatus
    completed: bool
    correct_steps: int  # k_t
    num_steps: int  # SHR denominator of this task under the protocol
    num_evaluable_steps: int  # n_t
    steps_evaluated: int  # steps reached
    weighted_prefix_score: float
    normalized_weighted_prefix_score: float
    failure_type: str | None
    failed_step: int | None  # literal 1-based position of the ending step
    step1_hit: bool
    independent_hits: int  # all-steps mode: hits over every evaluable step with a prediction
    independent_steps: int
    histogram_type: str | None  # key for the failure histogram, None: not counted
    failed_difficulty: str | None
    end_rank: int | None  # rank of the ending step (None: not ended)
    max_rank: int
    num_unannotated_steps: int
    missing_steps: tuple[str, ...]
    steps: tuple[StepScore, ...]


def _difficulty(step: Step, targets: tuple[Box, ...]) -> str | None:
    box = targets[0] if targets else (step.boxes[0] if step.boxes else None)
    return size_class(box.area) if box is not None else None


def _offset(p: Point | None, step: Step, targets: tuple[Box, ...]) -> tuple[float, float] | None:
    box = targets[0] if targets else (step.boxes[0] if step.boxes else None)
    if p is None or box is None or box.width <= 0 or box.height <= 0:
        return None
    c = box.center
    return ((p.x - c.x) / box.width, (p.y - c.y) / box.height)


def score_task(
    task: Task,
    protocol: Protocol,
    preds: Mapping[str, CallRecord],
    errored: Mapping[str, CallRecord] | None = None,
    *,
    all_steps: bool = False,
) -> TaskScore:
    """Score one task: the sequential walk (first miss ends the task), and in all-steps mode
    the independent judgement of every evaluable step."""
    errored = errored or {}
    alpha = protocol.alpha
    ended = blocked = False
    end_rank: int | None = None
    failed_step: int | None = None
    ending_type: str | None = None
    ending_difficulty: str | None = None
    last_logged: StepScore | None = None
    k = reached = n_eval = ind_hits = ind_steps = 0
    wps = 0.0
    missing: list[str] = []
    any_error = False
    out: list[StepScore] = []
    for step in task.steps:
        uid = step.uid
        targets = protocol.targets(step)
        rec = preds.get(uid)
        if targets:
            n_eval += 1
        rank = n_eval if protocol.wps_position == "evaluable" else step.position
        j = _judge(targets, protocol, rec) if (targets and rec is not None) else None
        hit: bool | None = j.hit if j else None
        ftype = j.failure_type if j else None
        outcome: StepOutcomeName
        if not targets:
            outcome = "not_evaluable"
            if protocol.non_evaluable == "ends_task" and not ended and not blocked:
                ended, failed_step, end_rank = True, step.position, rank
                ending_difficulty = _difficulty(step, targets)
        elif not ended and not blocked:
            if j is None:
                outcome = "error" if uid in errored else "missing"
                any_error |= uid in errored
                missing.append(uid)
                blocked = True
            else:
                reached += 1
                outcome = "hit" if j.hit else "miss"
                if j.hit:
                    k += 1
                    wps += alpha ** (rank - 1)
                else:
                    ended, failed_step, end_rank = True, step.position, rank
                    ending_type, ending_difficulty = ftype, _difficulty(step, targets)
        else:
            outcome = "not_reached"
            if all_steps and j is None:
                outcome = "error" if uid in errored else "missing"
                any_error |= uid in errored
                missing.append(uid)
            if not all_steps:
                hit, ftype = None, None
        if all_steps and j is not None:
            ind_hits += int(j.hit)
            ind_steps += 1
        s = StepScore(
            uid=uid,
            position=step.position,
            step_id=step.step_id,
            instruction=step.instruction,
            action_types=tuple(dict.fromkeys(a.type for a in step.actions)),
            evaluable=bool(targets),
            outcome=outcome,
            hit=hit,
            failure_type=ftype,
            difficulty=_difficulty(step, targets),
            target_boxes=step.boxes,
            pred_point=j.point if j else None,
            extra_points=tuple(rec.extra_points) if rec is not None else (),
            raw_output=rec.raw_text if rec is not None else None,
            image_path=step.image_path,
            image_size=rec.image_size if rec is not None else None,
            offset=_offset(j.point, step, targets) if j else None,
            rank=rank,
        )
        out.append(s)
        if outcome in ("hit", "miss"):
            last_logged = s

    n_unannotated = sum(1 for s in task.steps if not s.annotated)
    has_non_eval = n_eval < len(task.steps)
    if n_eval == 0:
        completed = protocol.empty_task == "completed"
    else:
        completed = (not ended and not blocked and k == n_eval) and not (
            protocol.non_evaluable == "counted" and has_non_eval
        )
    status: TaskStatus
    if n_eval == 0 and protocol.empty_task == "excluded":
        status = "excluded"
    elif missing:
        status = "errored" if any_error else "incomplete"
    else:
        status = "scored"

    num_steps = {"evaluable": n_eval, "reached": reached, "all_steps": len(task.steps)}[
        protocol.shr_denominator
    ]
    max_wps = protocol.max_weighted_prefix([s.position for s in out if s.evaluable], len(out))
    nwps = wps / max_wps if max_wps > 0 else (1.0 if completed else 0.0)

    if protocol.s1a_step == "first_evaluable":
        first = next((s for s in out if s.evaluable), None)
    else:
        first = out[0] if out else None
    step1_hit = first is not None and first.outcome == "hit"

    # the task's failure type and whether (and under which key) the histogram counts it
    hist: str | None = None
    fdiff: str | None = None
    task_ftype: str | None = None
    if status == "scored" and not completed:
        src = protocol.task_failure_source
        if src == "ending_miss" and ended:
            task_ftype, fdiff = ending_type, ending_difficulty
            hist = task_ftype or UNTYPED
        elif src == "last_logged" and last_logged is not None:
            task_ftype, fdiff = last_logged.failure_type, last_logged.difficulty
            hist = task_ftype or UNTYPED
        elif src == "first_miss" and ending_type is not None:
            task_ftype, fdiff = ending_type, ending_difficulty
            hist = task_ftype

    max_rank = n_eval if protocol.wps_position == "evaluable" else len(task.steps)
    return TaskScore(
        uid=task.uid,
        app=task.app,
        index=task.index,
        overview=task.overview,
        status=status,
        completed=completed,
        correct_steps=k,
        num_steps=num_steps,
        num_evaluable_steps=n_eval,
        steps_evaluated=reached,
        weighted_prefix_score=wps,
        normalized_weighted_prefix_score=nwps,
        failure_type=task_ftype,
        failed_step=failed_step,
        step1_hit=step1_hit,
        independent_hits=ind_hits,
        independent_steps=ind_steps,
        histogram_type=hist,
        failed_difficulty=fdiff,
        end_rank=end_rank,
        max_rank=max_rank,
        num_unannotated_steps=n_unannotated,
        missing_steps=tuple(missing),
        steps=tuple(out),
    )


def next_step(task: Task, protocol: Protocol, preds: Mapping[str, CallRecord]) -> Step | None:
    """The next step a sequential run must ask for `task`, or None when the task is decided."""
    for step in task.steps:
        targets = protocol.targets(step)
        if not targets:
            if protocol.non_evaluable == "ends_task":
                return None
            continue
        rec = preds.get(step.uid)
        if rec is None:
            return step
        if not _judge(targets, protocol, rec).hit:
            return None
    return None


def steps_to_ask_all(task: Task) -> list[Step]:
    """All-steps mode: every annotated step, so that any protocol can score the predictions."""
    return [s for s in task.steps if s.annotated]


# -- the run --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunScore:
    protocol: Protocol
    all_steps: bool
    apps: tuple[str, ...]
    tasks: tuple[TaskScore, ...]
    overall: metrics.MetricSet
    per_app: dict[str, metrics.MetricSet]
    macro_average: dict[str, float | None]
    failures: dict[str, Any]
    failures_per_app: dict[str, dict[str, Any]]
    survival: list[float]
    by_action_type: dict[str, dict[str, float | int | None]]
    by_target_size: dict[str, dict[str, float | int | None]]
    complete: bool
    missing_steps: tuple[str, ...]
    num_unannotated_steps: int

    def tasks_of(self, app: str) -> tuple[TaskScore, ...]:
        return tuple(t for t in self.tasks if t.app == app)


def score_run(
    dataset: Dataset,
    records: Iterable[CallRecord],
    protocol: Protocol,
    *,
    all_steps: bool,
    n_boot: int = 2000,
    seed: int = 0,
) -> RunScore:
    """Score every task of `dataset` from journal records, with metrics and breakdowns."""
    ok, errored = latest_predictions(records)
    unknown = [uid for uid in ok if not dataset.has_step(uid)]
    if unknown:
        log.warning(
            "%d predictions name steps not in the dataset (ignored), e.g. %s",
            len(unknown),
            unknown[0],
        )
    tasks = tuple(
        score_task(t, protocol, ok, errored, all_steps=all_steps) for t in dataset.tasks()
    )
    apps = dataset.app_names
    per_app = {
        a: metrics.compute_metrics(
            [t for t in tasks if t.app == a], all_steps=all_steps, n_boot=n_boot, seed=seed
        )
        for a in apps
    }
    missing = tuple(uid for t in tasks for uid in t.missing_steps)
    return RunScore(
        protocol=protocol,
        all_steps=all_steps,
        apps=apps,
        tasks=tasks,
        overall=metrics.compute_metrics(tasks, all_steps=all_steps, n_boot=n_boot, seed=seed),
        per_app=per_app,
        macro_average=metrics.macro_average(per_app),
        failures=metrics.failure_statistics(tasks, all_steps=all_steps),
        failures_per_app={
            a: metrics.failure_statistics([t for t in tasks if t.app == a], all_steps=all_steps)
            for a in apps
        },
        survival=metrics.survival(tasks),
        by_action_type=metrics.breakdown(tasks, "action_type", all_steps=all_steps),
        by_target_size=metrics.breakdown(tasks, "target_size", all_steps=all_steps),
        complete=not missing,
        missing_steps=missing,
        num_unannotated_steps=sum(t.num_unannotated_steps for t in tasks),
    )
