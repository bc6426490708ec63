"""Checking the task rows of the authors' `task_results.json` before they are imported: every
field `import-upstream` reads must have a usable type, else a `DataError` names the file, the
task (its row), the step and the field. No row is half imported."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from medspot.errors import DataError, Location

__all__ = ["check_task_row"]

_TASK_NUMBERS = (
    "num_steps",
    "correct_steps",
    "evaluated_steps",
    "weighted_prefix_score",
    "normalised_weighted_score",
)
_MAX_SHOWN = 40


def _show(v: object) -> str:
    text = repr(v)
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."


def _finite(v: object) -> bool:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an integer beyond a float
        return False


def _numbers(v: object, n: int | None) -> bool:
    return (
        isinstance(v, list)
        and (len(v) == n if n is not None else len(v) >= 2)
        and all(_finite(x) for x in v)
    )


def _step_problem(s: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, problem) for the first unusable field of one step log, or None."""
    hit = s.get("hit")
    if hit is not None and hit not in (0, 1):  # True/False compare equal to 1/0
        return "hit", f"must be 0, 1, true, false or null, got {_show(hit)}"
    sid = s.get("step_id")
    if sid is not None and (not isinstance(sid, int) or isinstance(sid, bool)):
        return "step_id", f"must be a whole number, got {_show(sid)}"
    gt = s.get("gt_bbox")
    if gt is not None and not _numbers(gt, 4):
        return "gt_bbox", f"must be four finite numbers, got {_show(gt)}"
    pt = s.get("pred_point")
    if pt is not None and not _numbers(pt, None):
        return "pred_point", f"must be finite numbers [x, y] or null, got {_show(pt)}"
    pts = s.get("pred_points")
    if pts is not None and not (isinstance(pts, list) and all(_numbers(p, None) for p in pts)):
        return "pred_points", f"must be a list of finite [x, y] points, got {_show(pts)}"
    for key in ("image_w", "image_h"):
        v = s.get(key)
        if v is not None and not _finite(v):
            return key, f"must be a number, got {_show(v)}"
    return None


def check_task_row(obj: Mapping[str, Any], file: str, row: int) -> None:
    """Raise `DataError` at the first field of task row `row` of `file` that cannot be read."""
    for key in _TASK_NUMBERS:
        v = obj.get(key)
        if v is not None and not _finite(v):
            raise DataError(f"must be a number, got {_show(v)}", Location(file, row, field=key))
    steps = obj.get("steps")
    if steps is None:
        return
    if not isinstance(steps, list):
        raise DataError(
            f"must be a list of step objects, got {_show(steps)}",
            Location(file, row, field="steps"),
        )
    for k, s in enumerate(steps, 1):
        if not isinstance(s, dict):
            raise DataError(
                f"a step must be an object, got {_show(s)}", Location(file, row, k, "steps")
            )
        problem = _step_problem(s)
        if problem is not None:
            raise DataError(problem[1], Location(file, row, k, problem[0]))
