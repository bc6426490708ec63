"""The rows of `<App>/task_results.json` (and `task_failures.json`): one pydantic schema that the
writer dumps and the reader validates, for runs of this harness and imported runs alike."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["StepRow", "TaskRow"]

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
