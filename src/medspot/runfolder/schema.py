"""The rows of `<App>/task_results.json` (and `task_failures.json`): one pydantic schema that the
writer dumps and the reader validates, for runs of this harness and imported runs alike."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RowCounts", "StepRow", "TaskRow"]

Pair = tuple[float, float]


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
    steps: list[StepRow] = Field(default_factory=list)

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


@dataclass(frozen=True, slots=True)
class RowCounts:
    """A task row's columns of the metrics' task matrix (`scoring.metrics.TaskCounts`)."""

    completed: bool
    step1_hit: bool
    correct_steps: int
    num_steps: int
    steps_evaluated: int
    weighted_prefix_score: float
    normalized_weighted_prefix_score: float
    independent_hits: int
    independent_steps: int
