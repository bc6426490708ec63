"""`medspot stats`: per application and overall counts of a loaded dataset. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from medspot.dataset.records import SIZE_LARGE, SIZE_MEDIUM, SIZE_SMALL, Dataset, Task, size_class

__all__ = ["DatasetStats", "GroupStats", "dataset_stats", "format_stats", "group_stats"]

SIZE_ORDER = (SIZE_SMALL, SIZE_MEDIUM, SIZE_LARGE)


@dataclass(frozen=True)
class GroupStats:
    """Counts over a group of tasks (one application, or all of them)."""

    name: str
    tasks: int
    steps: int
    evaluable_steps: int
    steps_per_task_mean: float
    steps_per_task_min: int
    steps_per_task_max: int
    screenshots: int  # distinct image paths
    action_types: Mapping[str, int] = field(default_factory=dict)
    target_sizes: Mapping[str, int] = field(default_factory=dict)  # first box of each step

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "steps": self.steps,
            "evaluable_steps": self.evaluable_steps,
            "steps_per_task": {
                "mean": self.steps_per_task_mean,
                "min": self.steps_per_task_min,
                "max": self.steps_per_task_max,
            },
            "screenshots": self.screenshots,
            "action_types": dict(self.action_types),
            "target_sizes": dict(self.target_sizes),
        }


@dataclass(frozen=True)
class DatasetStats:
    per_app: tuple[GroupStats, ...]
    overall: GroupStats
    fingerprint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "per_app": {g.name: g.to_dict() for g in self.per_app},
            "overall": self.overall.to_dict(),
            "fingerprint": self.fingerprint,
        }


def group_stats(name: str, tasks: Iterable[Task]) -> GroupStats:
    tasks = list(tasks)
    lengths = [len(t.steps) for t in tasks]
    steps = [s for t in tasks for s in t.steps]
    types: Counter[str] = Counter(a.type for s in steps for a in s.actions)
    sizes: Counter[str] = Counter(size_class(s.actions[0].box.area) for s in steps if s.actions)
    return GroupStats(
        name=name,
        tasks=len(tasks),
        steps=len(steps),
        evaluable_steps=sum(1 for s in steps if s.annotated),
        steps_per_task_mean=sum(lengths) / len(lengths) if lengths else 0.0,
        steps_per_task_min=min(lengths, default=0),
        steps_per_task_max=max(lengths, default=0),
        screenshots=len({s.image_path for s in steps}),
        action_types=dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
        target_sizes={k: sizes[k] for k in SIZE_ORDER},
    )


def dataset_stats(ds: Dataset) -> DatasetStats:
    per_app = tuple(group_stats(a.name, a.tasks) for a in ds.apps)
    return DatasetStats(per_app, group_stats("overall", ds.tasks()), ds.fingerprint)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]

    def fmt(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest])

    return [
        fmt(header),
        "  ".join("-" * w for w in widths),
        *map(fmt, rows[:-1]),
        "  ".join("-" * w for w in widths),
        fmt(rows[-1]),
    ]


def format_stats(st: DatasetStats) -> str:
    """A readable table: one row per application and an overall row."""
    groups = [*st.per_app, st.overall]
    types = sorted(
        {t for g in groups for t in g.action_types},
        key=lambda t: (-st.overall.action_types.get(t, 0), t),
    )
    header = [
        "app",
        "tasks",
        "steps",
        "evaluable",
        "steps/task",
        "min",
        "max",
        "screens",
        *SIZE_ORDER,
        *types,
    ]
    rows = [
        [
            g.name,
            str(g.tasks),
            str(g.steps),
            str(g.evaluable_steps),
            f"{g.steps_per_task_mean:.2f}",
            str(g.steps_per_task_min),
            str(g.steps_per_task_max),
            str(g.screenshots),
            *(str(g.target_sizes.get(k, 0)) for k in SIZE_ORDER),
            *(str(g.action_types.get(t, 0)) for t in types),
        ]
        for g in groups
    ]
    lines = _table(header, rows)
    lines.append("")
    lines.append(
        "small/medium/large: target size class of each evaluable step's first box "
        "(area < 4e-4, < 3e-3, else); the last columns count actions by type."
    )
    return "\n".join(lines)
