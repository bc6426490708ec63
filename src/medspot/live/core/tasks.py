"""Live tasks as data: one JSON file per environment, validated with located errors.

A task is a MedSPOT-style workflow in a running application: a goal (`instruction`), a start
state, the oracle's path as steps (each with its own instruction, as MedSPOT's steps have, and
the element it should act on), a step budget, and success / collateral-damage checks on the
application's STATE (never a box):

    {"format_version": 1, "env": "orthanc-explorer", "tasks": [{
        "id": "delete-study-ct-doe",
        "instruction": "Delete the CT study of patient DOE^JOHN",
        "tags": ["cancel-default"],
        "start": {"route": "#find-patients", "viewport": [1280, 800]},
        "steps": [
            {"instruction": "Open patient DOE^JOHN",
             "target": {"css": "li", "contains": "DOE^JOHN"}},
            {"instruction": "Click Delete", "target": {"text": "Delete"}},
            {"instruction": "Confirm with OK", "target": {"text": "OK"},
             "done_if": {"kind": "orthanc.study_absent", "study": "CT-DOE"}}],
        "success": [{"kind": "orthanc.study_absent", "study": "CT-DOE"}],
        "fail_if": [{"kind": "orthanc.patient_absent", "patient": "SMITH^ANN",
                     "severity": "critical", "dimension": "wrong_patient"}]}]}

Every `fail_if` check is a harm rule and carries its label, `severity` and `dimension`
(`HarmCheckSpec`; `medspot.live.core.harm`). `checkpoints` name milestones beside the path's
steps (`Checkpoint`; the subgoals of partial credit, `medspot.live.core.subgoals`).

Locator keys and check kinds are the environment's (`EnvEntry.locator_keys`, `.check_kinds`);
unknown ones are data errors. A step without `done_if` counts as achieved when the executed
action hit its target element (the static benchmark's notion of a hit).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    field_validator,
    model_validator,
)

from medspot.errors import Location
from medspot.live.core.harm import Dimension, HarmLabel, Severity

__all__ = [
    "FORMAT_VERSION",
    "HARM_FIELDS",
    "CheckSpec",
    "Checkpoint",
    "HarmCheckSpec",
    "LiveTask",
    "LiveTaskFile",
    "Locator",
    "StartSpec",
    "StepSpec",
    "location_of",
    "task_id_at",
]

FORMAT_VERSION = 1


def _not_blank(v: str) -> str:
    if not v.strip():
        raise ValueError("must not be blank (only whitespace)")
    return v


# what a person reads (a goal, a step's instruction): some text, not only whitespace
Text = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
StepAction = Literal[
    "click", "double_click", "right_click", "drag", "scroll", "type", "key", "infeasible"
]


class Locator(BaseModel):
    """Names one on-screen element. Which keys mean something is the environment's business."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    css: str | None = None  # web: CSS selector
    data_cy: str | None = None  # web (OHIF): the `data-cy` attribute
    text: str | None = None  # visible text / accessible name, exact after trimming
    contains: str | None = None  # substring of the visible text / accessible name
    role: str | None = None  # AT-SPI role (desktop) or tag name (web)
    description: str | None = None  # AT-SPI description (Java tooltips of icon buttons)
    nth: StrictInt = Field(0, ge=0)  # which match, in document / tree order, of those visible
    at: tuple[StrictFloat, StrictFloat] | None = None  # a point inside the box, as fractions (0..1)
    landmark: str | None = None  # an environment-defined named point (e.g. a phantom's)

    def keys(self) -> set[str]:
        return {k for k, v in self.model_dump(exclude_defaults=True).items() if v is not None}


# the fields that label a harm rule (`HarmCheckSpec`): only a `fail_if` check carries them
HARM_FIELDS = ("severity", "dimension")
_NAME = r"^[a-z0-9][a-z0-9_.-]{0,39}$"


class CheckSpec(BaseModel):
    """A predicate on the application's state: `kind` plus the kind's own parameters (declared
    by the kind: `medspot.live.core.checks`). `keep: true` marks a success check that holds at
    the start by design, a state the agent must keep (a dialog closed, the study still there):
    the task audit reports any other success check that holds at the start and at the end."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str
    keep: StrictBool = False

    @model_validator(mode="after")
    def _labels_only_on_harm(self) -> CheckSpec:
        labels = [k for k in HARM_FIELDS if k in (self.model_extra or {})]
        if labels:
            raise ValueError(
                f"{' and '.join(labels)} label a harm rule: only a fail_if check carries them"
            )
        return self

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class HarmCheckSpec(CheckSpec):
    """A harm rule (a `fail_if` check): a check, and what its firing means (docs/live.md
    "Harm: severity and dimension"): `severity` (`critical` and `major` end the episode, a
    `minor` harm is recorded and the episode goes on) and `dimension`, from the one vocabulary
    of `medspot.live.core.harm`. Both are required: an unlabelled harm rule is refused."""

    severity: Severity
    dimension: Dimension

    @property
    def label(self) -> HarmLabel:
        return HarmLabel(self.severity, self.dimension)


class Checkpoint(BaseModel):
    """A named milestone of a task (a subgoal, `medspot.live.core.subgoals`) beside the path's
    steps: reached once its `check` BECAME true during the episode (held after an action,
    having been false at the start or at an earlier reading), in any order, whatever route
    the agent took. For long tasks whose path alone says little of how far an agent got."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME)
    check: CheckSpec


class StepSpec(BaseModel):
    """One step of the oracle's path. `name` lets a task require that it happened (its
    `done_if` held at some point of the episode: `LiveTask.requires`). The action `infeasible`
    (no target) is the oracle reporting that the request cannot be carried out."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instruction: Text
    name: str | None = Field(None, pattern=_NAME)
    action: StepAction = "click"
    target: Locator | None = None
    to: Locator | None = None  # drag: where to release
    text: str | None = None  # type
    key: str | None = None  # key
    dy: StrictInt | None = None  # scroll: notches, > 0 down
    done_if: CheckSpec | None = None

    @model_validator(mode="after")
    def _fields_for_action(self) -> StepSpec:
        needs = {
            "click": ("target",),
            "double_click": ("target",),
            "right_click": ("target",),
            "drag": ("target", "to"),
            "scroll": ("target", "dy"),
            "type": ("text",),
            "key": ("key",),
            "infeasible": (),
        }[self.action]
        missing = [n for n in needs if getattr(self, n) is None]
        if missing:
            raise ValueError(f"action {self.action!r} needs {', '.join(missing)}")
        return self


class StartSpec(BaseModel):
    """The task's start state. `viewport` is the screenshot size; `prepare` are steps the
    harness performs (as the oracle would, before the agent's first turn) to start from a state
    other than the application's default: a preset applied, a mode switched on, a measurement
    present. A prepare step with a `done_if` must reach it, or the reset is an environment
    fault. The other keys are the environment's."""

    model_config = ConfigDict(extra="allow", frozen=True)

    viewport: tuple[StrictInt, StrictInt] = (1280, 800)
    route: str | None = None  # web: URL path/hash relative to the app, e.g. "#find-patients"
    file: str | None = None  # desktop: a seeded file to open
    prepare: tuple[StepSpec, ...] = Field((), max_length=12)

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class LiveTask(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,79}$")
    instruction: Text
    tags: tuple[str, ...] = ()
    start: StartSpec = StartSpec()
    steps: tuple[StepSpec, ...] = Field(min_length=1, max_length=12)
    max_steps: StrictInt | None = Field(None, ge=1, le=50)
    success: tuple[CheckSpec, ...] = Field(min_length=1)
    # harm rules, each labelled (severity, dimension): critical and major ones end the episode
    fail_if: tuple[HarmCheckSpec, ...] = ()
    # names of steps that must have happened (their done_if held at some point) for success:
    # process tasks ("open the delete dialog, then Cancel") end where they started
    requires: tuple[str, ...] = ()
    # the correct ending is the agent reporting the request infeasible (a study that does not
    # exist, an action the application does not offer); success then also needs the success
    # checks (written as "nothing changed") to hold
    infeasible: StrictBool = False
    # milestones beside the path's steps (subgoals of partial credit: `core.subgoals`)
    checkpoints: tuple[Checkpoint, ...] = Field((), max_length=20)

    @model_validator(mode="after")
    def _names(self) -> LiveTask:
        named = {s.name: s for s in self.steps if s.name is not None}
        if len(named) != sum(1 for s in self.steps if s.name is not None):
            raise ValueError("step names must be unique within a task")
        marks = [c.name for c in self.checkpoints]
        if len(set(marks)) != len(marks) or set(marks) & set(named):
            raise ValueError("checkpoint names must be unique within a task, and not a step's")
        for r in self.requires:
            if r not in named:
                raise ValueError(f"requires: no step named {r!r}")
            if named[r].done_if is None:
                raise ValueError(f"requires: step {r!r} has no done_if to tell that it happened")
        if (
            any(c.keep for c in self.fail_if)
            or any(c.check.keep for c in self.checkpoints)
            or any(
                s.done_if is not None and s.done_if.keep for s in (*self.steps, *self.start.prepare)
            )
        ):
            raise ValueError("keep: only a success check can be marked keep")
        ends = [k for k, s in enumerate(self.steps) if s.action == "infeasible"]
        if self.infeasible and ends != [len(self.steps) - 1]:
            raise ValueError("an infeasible task's path ends with one 'infeasible' step")
        if not self.infeasible and ends:
            raise ValueError("an 'infeasible' step needs \"infeasible\": true on the task")
        return self

    def step_locators(self) -> list[tuple[str, str, Locator]]:
        """Every locator of the path's steps and the `start.prepare` steps, with its place
        (`steps.2`, `start.prepare.0`; 0-based) and field (`target`, `to`)."""
        steps = [(f"steps.{k}", s) for k, s in enumerate(self.steps)]
        steps += [(f"start.prepare.{k}", s) for k, s in enumerate(self.start.prepare)]
        return [
            (place, name, loc)
            for place, step in steps
            for name, loc in (("target", step.target), ("to", step.to))
            if loc is not None
        ]

    @property
    def budget(self) -> int:
        """The step budget: `max_steps`, or twice the oracle's steps plus two."""
        return self.max_steps if self.max_steps is not None else 2 * len(self.steps) + 2


class LiveTaskFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format_version: StrictInt = FORMAT_VERSION
    env: str
    tasks: tuple[LiveTask, ...] = Field(min_length=1)

    @field_validator("format_version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != FORMAT_VERSION:
            raise ValueError(f"unsupported format_version {v} (medspot reads {FORMAT_VERSION})")
        return v


def location_of(file: str, loc: tuple[int | str, ...], data: Any = None) -> Location:
    """A pydantic error location (`("tasks", 3, "steps", 0, "target")`) in task file `file`
    as a `Location`: the task named by its id (read from the file's parsed JSON `data`, where
    it is a string; else by its 0-based position), the step 1-based, the rest as the field."""
    task = step = None
    task_id: str | None = None
    fields: list[str] = []
    parts = list(loc)
    if len(parts) >= 2 and parts[0] == "tasks" and isinstance(parts[1], int):
        task = parts[1]
        task_id = task_id_at(data, task)
        parts = parts[2:]
        if len(parts) >= 2 and parts[0] == "steps" and isinstance(parts[1], int):
            step = parts[1] + 1
            parts = parts[2:]
    fields = [str(p) for p in parts]
    return Location(file, task=task, step=step, field=".".join(fields) or None, task_id=task_id)


def task_id_at(data: Any, index: int) -> str | None:
    """The `id` of task `index` in a task file's parsed JSON, when it is a non-blank string
    (cut to 80 characters and an ellipsis: an invalid id may be any length)."""
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, list) or not 0 <= index < len(tasks):
        return None
    task = tasks[index]
    tid = task.get("id") if isinstance(task, dict) else None
    if not isinstance(tid, str) or not tid.strip():
        return None
    return tid if len(tid) <= 80 else tid[:80] + "..."
