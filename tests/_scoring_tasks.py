"""Helpers for the scoring, metrics and results tests: hand-made tasks built as records (no
files), and journal records. Boxes are given normalised as (x1, y1, x2, y2)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import EllipsisType

from medspot.dataset.records import Action, AppData, Dataset, Step, Task
from medspot.geometry import Box
from medspot.runfolder.journal import JournalRecord

# a step spec: a list of (action type, box); [] is an unannotated step
StepSpec = Sequence[tuple[str, tuple[float, float, float, float]]]

BOX = (0.4, 0.4, 0.6, 0.6)  # a large box (area 0.04), centre (0.5, 0.5)
IN = (0.5, 0.5)  # a point inside BOX
OUT = (0.3, 0.3)  # a point outside BOX (outside its 1.5x scaling too)
CLICK: StepSpec = [("click", BOX)]


def make_task(app: str, index: int, specs: Sequence[StepSpec]) -> Task:
    steps = []
    for pos, spec in enumerate(specs, 1):
        actions = tuple(
            Action(
                type=t,
                target="ground truth",
                bbox_percent=(b[0] * 100, b[1] * 100, (b[2] - b[0]) * 100, (b[3] - b[1]) * 100),
                box=Box(*b),
            )
            for t, b in spec
        )
        steps.append(
            Step(
                app=app,
                task_index=index,
                position=pos,
                step_id=pos,
                image_path=f"Images/{app}/{index}_{pos}.png",
                instruction=f"do step {pos}",
                actions=actions,
            )
        )
    return Task(app=app, index=index, overview=f"{app} task {index}", steps=tuple(steps))


def make_dataset(apps: dict[str, Sequence[Sequence[StepSpec]]]) -> Dataset:
    return Dataset(
        root=Path("."),
        apps=tuple(
            AppData(
                name=app,
                annotation_file=Path(f"Annotations/{app}_Annotation.json"),
                tasks=tuple(make_task(app, i, specs) for i, specs in enumerate(tasks)),
            )
            for app, tasks in apps.items()
        ),
    )


def rec(
    step_uid: str,
    point: tuple[float, float] | None,
    *,
    size: tuple[int, int] | None = (1000, 1000),
    error: str | None = None,
    raw: str | None = "answer",
) -> JournalRecord:
    task = step_uid.rsplit("/", 1)[0]
    return JournalRecord(
        step=step_uid,
        task=task,
        image_path="x.png",
        image_size=size,
        point=point,
        raw_text=raw,
        error=error,
    )


def preds(
    task: Task,
    points: Sequence[tuple[float, float] | EllipsisType | None],
    **kw: object,
) -> dict[str, JournalRecord]:
    """One record per step of `task`, in order (use ... to leave a step without a record)."""
    out = {}
    for step, p in zip(task.steps, points, strict=False):
        if p is ... or isinstance(p, EllipsisType):
            continue
        out[step.uid] = rec(step.uid, p, **kw)  # type: ignore[arg-type]
    return out
