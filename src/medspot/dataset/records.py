"""Typed records of the benchmark: apps, tasks, steps, actions, target boxes.

Identities: a task is `<App>/<index>` with `index` its 0-based position in the app's annotation
file; a step is `<App>/<index>/<k>` with `k` its 1-based position in the task's `steps` list.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from medspot.geometry import Box

__all__ = [
    "SIZE_LARGE",
    "SIZE_MEDIUM",
    "SIZE_SMALL",
    "Action",
    "AppData",
    "Dataset",
    "Step",
    "Task",
    "size_class",
    "step_uid",
    "task_uid",
]

SIZE_SMALL = "small"
SIZE_MEDIUM = "medium"
SIZE_LARGE = "large"


def size_class(area: float) -> str:
    """Target size class of protocol 2.5: small < 4e-4, medium < 3e-3, large otherwise."""
    if area < 4e-4:
        return SIZE_SMALL
    if area < 3e-3:
        return SIZE_MEDIUM
    return SIZE_LARGE


def task_uid(app: str, index: int) -> str:
    return f"{app}/{index}"


def step_uid(app: str, index: int, position: int) -> str:
    return f"{app}/{index}/{position}"


@dataclass(frozen=True, slots=True)
class Action:
    """One annotated action: its type, the annotator's target text (ground truth, never shown
    to a model), the box in percent as written, and the normalised box."""

    type: str
    target: str
    bbox_percent: tuple[float, float, float, float]
    box: Box


@dataclass(frozen=True, slots=True)
class Step:
    app: str
    task_index: int
    position: int  # 1-based position in the task's `steps` list
    step_id: int  # the `step_id` written in the file
    image_path: str  # relative to the dataset root, as written
    instruction: str  # stripped; object-valued instructions joined with a space
    actions: tuple[Action, ...]

    @property
    def uid(self) -> str:
        return step_uid(self.app, self.task_index, self.position)

    @property
    def task_uid(self) -> str:
        return task_uid(self.app, self.task_index)

    @property
    def annotated(self) -> bool:
        """False for the unannotated steps (an empty `actions` list)."""
        return bool(self.actions)

    @property
    def boxes(self) -> tuple[Box, ...]:
        return tuple(a.box for a in self.actions)


@dataclass(frozen=True, slots=True)
class Task:
    app: str
    index: int  # 0-based position in the annotation file
    overview: str
    steps: tuple[Step, ...]

    @property
    def uid(self) -> str:
        return task_uid(self.app, self.index)


@dataclass(frozen=True, slots=True)
class AppData:
    name: str
    annotation_file: Path
    tasks: tuple[Task, ...]


@dataclass(frozen=True)
class Dataset:
    """A loaded benchmark. `root` holds `Annotations/` and `Images/`."""

    root: Path
    apps: tuple[AppData, ...]
    warnings: tuple[str, ...] = ()
    fingerprint: str = ""  # sha256 over the annotation files' bytes (of the selected apps)
    source: str = ""  # what the user passed (a path, hf://..., owner/name)
    _by_step: dict[str, Step] = field(default_factory=dict, compare=False, repr=False)
    _by_task: dict[str, Task] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for app in self.apps:
            for t in app.tasks:
                self._by_task[t.uid] = t
                for s in t.steps:
                    self._by_step[s.uid] = s

    def tasks(self) -> Iterator[Task]:
        for app in self.apps:
            yield from app.tasks

    def steps(self) -> Iterator[Step]:
        for t in self.tasks():
            yield from t.steps

    def step(self, uid: str) -> Step:
        return self._by_step[uid]

    def task(self, uid: str) -> Task:
        return self._by_task[uid]

    def has_step(self, uid: str) -> bool:
        return uid in self._by_step

    @property
    def app_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.apps)
