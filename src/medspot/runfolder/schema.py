"""The rows of `<App>/task_results.json` (and `task_failures.json`): one pydantic schema that the
writer dumps and the reader validates, for runs of this harness and imported runs alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["RowCounts", "RowOutcome", "StepRow", "TaskRow", "first_error"]

Pair = tuple[float, float]


def first_error(e: ValidationError) -> str:
    """The first problem pydantic found in a row or run.json, as `field.path: message`."""
    err = e.errors()[0]
    return f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"


class StepRow(BaseModel):
    """One step object of `<App>/task_results.json`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    step: str
    position: int
    step_id: int | None = None
    instruction: str = ""
    action_types: list[str] = Field(default_factory=list)
    evaluable: bool = True
    outcome: str = "not_reached"
    hit: bool | None = None
    failure_type: str | None = None
    difficulty: str | None = None
    target_boxes: list[tuple[float, float, float, float]] = Field(default_factory=list)
    pred_point: Pair | None = None
    extra_points: list[Pair] = Field(default_factory=list)
    raw_output: str | None = None
    image_path: str = ""
    image_size: tuple[int, int] | None = None
    offset: Pair | None = None


class TaskRow(BaseModel):
    """One task object of `<App>/task_results.json`."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task_id: str
    app: str
    task_index: int
    task_overview: str = ""
    status: str = "scored"
    completed: bool = False
    correct_steps: int = 0
    num_steps: int = 0
    num_evaluable_steps: int = 0
    steps_evaluated: int = 0
    weighted_prefix_score: float = 0.0
    normalized_weighted_prefix_score: float = 0.0
    failure_type: str | None = None
    failed_step: int | None = None
    step1_hit: bool | None = None  # not in every writer's output; derived when absent
    steps: Sequence[StepRow] = Field(default_factory=list)  # a list (frozen rows)

    def s1a_hit(self, s1a_step: str = "first_evaluable") -> bool:
        """Whether the task's S1A step is a hit: the row's `step1_hit` when written, else the
        first evaluable step (or the literal first step under presets that say so)."""
        if self.step1_hit is not None:
            return bool(self.step1_hit)
        if s1a_step == "literal_first":
            first = self.steps[0] if self.steps else None
        else:
            first = next((s for s in self.steps if s.evaluable), None)
        return first is not None and first.outcome == "hit"

    def counts(self, s1a_step: str = "first_evaluable") -> RowCounts:
        """The row as the metrics' `TaskCounts` (S1A's step as the run's protocol says)."""
        ind = [s for s in self.steps if s.evaluable and s.hit is not None]
        return RowCounts(
            completed=self.completed,
            step1_hit=self.s1a_hit(s1a_step),
            correct_steps=self.correct_steps,
            num_steps=self.num_steps,
            steps_evaluated=self.steps_evaluated,
            weighted_prefix_score=self.weighted_prefix_score,
            normalized_weighted_prefix_score=self.normalized_weighted_prefix_score,
            independent_hits=sum(1 for s in ind if s.hit),
            independent_steps=len(ind),
        )

    def outcome(self, s1a_step: str = "first_evaluable") -> RowOutcome:
        """The row as the metrics' `TaskOutcome` (failure statistics, survival, breakdowns):
        a failed task's type is its `failure_type`, typed by the size of its last judged step;
        it ends at `failed_step` among all its steps."""
        last = next((s for s in reversed(self.steps) if s.hit is not None), None)
        c = self.counts(s1a_step)
        return RowOutcome(
            **{f: getattr(c, f) for f in RowCounts.__slots__},
            status=self.status,
            num_unannotated_steps=0,
            histogram_type=None if self.completed else self.failure_type,
            failed_difficulty=last.difficulty if last is not None else None,
            end_rank=self.failed_step or None,
            max_rank=len(self.steps),
            steps=tuple(self.steps),
        )


@dataclass(frozen=True, slots=True)
class RowCounts:
    """A task row's columns of the metrics' task matrix (`scoring.metrics.TaskCounts`): a row
    read back (`TaskRow.counts`), and a live task seen through the static metric formulas
    (`live.loop.static_bridge.StaticRow`, which has no independent steps)."""

    completed: bool
    step1_hit: bool
    correct_steps: int
    num_steps: int
    steps_evaluated: int
    weighted_prefix_score: float
    normalized_weighted_prefix_score: float
    independent_hits: int = 0
    independent_steps: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RowOutcome(RowCounts):
    """A task row as the metrics' `TaskOutcome` (`TaskRow.outcome`)."""

    status: str
    num_unannotated_steps: int
    histogram_type: str | None
    failed_difficulty: str | None
    end_rank: int | None
    max_rank: int
    steps: tuple[StepRow, ...]
