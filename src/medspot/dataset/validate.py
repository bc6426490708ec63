"""`medspot validate`: every problem of a dataset at once, with its location, and a summary of
the quirks protocol.md 1.2 describes (unannotated steps, object instructions, ...)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.dataset.loading import Problem, scan
from medspot.dataset.records import Dataset
from medspot.errors import DataError

__all__ = ["ValidationReport", "format_report", "report_from_dataset", "validate_dataset"]


@dataclass(frozen=True)
class ValidationReport:
    """What `medspot validate` found. Counts are over what could be read."""

    source: str
    root: str | None
    errors: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    images_checked: bool
    apps: tuple[str, ...] = ()
    tasks: int = 0
    steps: int = 0
    evaluable_steps: int = 0
    distinct_images: int = 0
    shared_image_uses: int = 0  # steps re-using a screenshot already used by an earlier step
    unannotated_steps: tuple[str, ...] = ()
    object_instructions: tuple[str, ...] = ()
    stripped_instructions: int = 0
    multi_action_steps: tuple[str, ...] = ()
    action_types: Mapping[str, int] = field(default_factory=dict)
    tasks_without_click: tuple[str, ...] = ()
    tasks_without_evaluable_step: tuple[str, ...] = ()
    duplicate_overviews: tuple[tuple[str, ...], ...] = ()
    fingerprint: str = ""

    @property
    def ok(self) -> bool:
        """The data can be evaluated (warnings allowed)."""
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "root": self.root,
            "ok": self.ok,
            "images_checked": self.images_checked,
            "errors": [_problem_dict(p) for p in self.errors],
            "warnings": [_problem_dict(p) for p in self.warnings],
            "counts": {
                "apps": len(self.apps),
                "tasks": self.tasks,
                "steps": self.steps,
                "evaluable_steps": self.evaluable_steps,
                "distinct_images": self.distinct_images,
                "shared_image_uses": self.shared_image_uses,
                "unannotated_steps": len(self.unannotated_steps),
                "object_instructions": len(self.object_instructions),
                "stripped_instructions": self.stripped_instructions,
                "multi_action_steps": len(self.multi_action_steps),
                "tasks_without_click": len(self.tasks_without_click),
                "tasks_without_evaluable_step": len(self.tasks_without_evaluable_step),
            },
            "apps": list(self.apps),
            "action_types": dict(self.action_types),
            "unannotated_steps": list(self.unannotated_steps),
            "object_instructions": list(self.object_instructions),
            "multi_action_steps": list(self.multi_action_steps),
            "tasks_without_click": list(self.tasks_without_click),
            "tasks_without_evaluable_step": list(self.tasks_without_evaluable_step),
            "duplicate_overviews": [list(g) for g in self.duplicate_overviews],
            "fingerprint": self.fingerprint,
        }


def _problem_dict(p: Problem) -> dict[str, Any]:
    loc = p.location
    return {
        "message": p.message,
        "file": loc.file if loc else None,
        "task": loc.task if loc else None,
        "step": loc.step if loc else None,
        "field": loc.field if loc else None,
        "text": str(p),
    }


def report_from_dataset(
    ds: Dataset,
    *,
    errors: Sequence[Problem] = (),
    warnings: Sequence[Problem] = (),
    object_instructions: Sequence[str] = (),
    stripped_instructions: int = 0,
    images_checked: bool = True,
) -> ValidationReport:
    """The counts and quirk lists of a (possibly partly read) dataset."""
    steps = list(ds.steps())
    image_uses = Counter(s.image_path for s in steps)
    types: Counter[str] = Counter(a.type for s in steps for a in s.actions)
    no_click: list[str] = []
    no_eval: list[str] = []
    dups: list[tuple[str, ...]] = []
    for app in ds.apps:
        by_overview: dict[str, list[str]] = {}
        for t in app.tasks:
            if not any(a.type == "click" for s in t.steps for a in s.actions):
                no_click.append(t.uid)
            if t.steps and not any(s.annotated for s in t.steps):
                no_eval.append(t.uid)
            by_overview.setdefault(t.overview, []).append(t.uid)
        dups.extend(tuple(u) for u in by_overview.values() if len(u) > 1)
    return ValidationReport(
        source=ds.source,
        root=str(ds.root),
        errors=tuple(errors),
        warnings=tuple(warnings),
        images_checked=images_checked,
        apps=ds.app_names,
        tasks=sum(len(a.tasks) for a in ds.apps),
        steps=len(steps),
        evaluable_steps=sum(1 for s in steps if s.annotated),
        distinct_images=len(image_uses),
        shared_image_uses=sum(n - 1 for n in image_uses.values()),
        unannotated_steps=tuple(s.uid for s in steps if not s.annotated),
        object_instructions=tuple(object_instructions),
        stripped_instructions=stripped_instructions,
        multi_action_steps=tuple(s.uid for s in steps if len(s.actions) > 1),
        action_types=dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
        tasks_without_click=tuple(no_click),
        tasks_without_evaluable_step=tuple(no_eval),
        duplicate_overviews=tuple(dups),
        fingerprint=ds.fingerprint,
    )


def validate_dataset(
    source: str | Path,
    *,
    check_images: bool = True,
    apps: Sequence[str] | None = None,
) -> ValidationReport:
    """Every problem of the dataset at `source`. A missing dataset root becomes the report's
    one error; unknown `apps` raise `ConfigError`."""
    try:
        result = scan(source, apps=apps, check_images=check_images)
    except DataError as e:
        return ValidationReport(
            source=str(source),
            root=None,
            errors=(Problem(e.message, e.location),),
            warnings=(),
            images_checked=check_images,
        )
    return report_from_dataset(
        result.dataset,
        errors=result.errors,
        warnings=result.warnings,
        object_instructions=result.object_instructions,
        stripped_instructions=len(result.stripped_instructions),
        images_checked=check_images,
    )


def _listing(uids: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(uids[:limit])
    return shown + (f", ... ({len(uids) - limit} more)" if len(uids) > limit else "")


def format_report(r: ValidationReport) -> str:
    """The report as readable text: every error and warning, then a summary."""
    lines: list[str] = []
    for p in r.errors:
        lines.append(f"error: {p}")
    for p in r.warnings:
        lines.append(f"warning: {p}")
    if lines:
        lines.append("")
    lines.append(f"dataset: {r.root or r.source}")
    if r.root is not None:
        types = ", ".join(f"{k} {v}" for k, v in r.action_types.items()) or "none"
        lines += [
            f"  {len(r.apps)} apps ({', '.join(r.apps)})",
            f"  {r.tasks} tasks, {r.steps} steps ({r.evaluable_steps} evaluable), "
            f"{r.distinct_images} distinct images ({r.shared_image_uses} re-used)",
            f"  action types: {types}",
            f"  unannotated steps (not evaluable): {len(r.unannotated_steps)}"
            + (f": {_listing(r.unannotated_steps)}" if r.unannotated_steps else ""),
            f"  steps with several actions (a hit on any box counts): "
            f"{len(r.multi_action_steps)}"
            + (f": {_listing(r.multi_action_steps)}" if r.multi_action_steps else ""),
            f"  object-valued instructions (joined): {len(r.object_instructions)}"
            + (f": {_listing(r.object_instructions)}" if r.object_instructions else ""),
            f"  instructions with outer spaces (stripped): {r.stripped_instructions}",
            f"  tasks without a click: {len(r.tasks_without_click)}"
            + (f": {_listing(r.tasks_without_click)}" if r.tasks_without_click else ""),
            f"  tasks without an evaluable step (excluded): "
            f"{len(r.tasks_without_evaluable_step)}"
            + (
                f": {_listing(r.tasks_without_evaluable_step)}"
                if r.tasks_without_evaluable_step
                else ""
            ),
            "  tasks sharing an overview: "
            + ("; ".join(" = ".join(g) for g in r.duplicate_overviews) or "none"),
            f"  images: {'checked' if r.images_checked else 'not checked (--no-images)'}",
        ]
    verdict = (
        "OK: the data can be evaluated"
        if r.ok
        else "NOT OK: the data cannot be evaluated until the errors are fixed"
    )
    lines.append(f"{len(r.errors)} error(s), {len(r.warnings)} warning(s). {verdict}.")
    return "\n".join(lines)
