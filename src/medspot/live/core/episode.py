"""What one live step means: whether an action hit the current step's intended element.

(The `Episode` follows.)
"""

from __future__ import annotations

from medspot.live.core.actions import (
    Drag,
    Key,
    LiveAction,
    Scroll,
    TypeText,
    normalise_key,
    point_of,
)
from medspot.live.core.contract import PixelBox
from medspot.live.core.tasks import StepSpec

__all__ = ["POINT_TOLERANCE_PX", "hit_intended"]


# A locator with `at` or `landmark` names a point (a 1x1 box): an action within this many
# pixels of it counts as hitting it.
POINT_TOLERANCE_PX = 8.0


def _widen(box: PixelBox | None) -> PixelBox | None:
    if box is None or (box.x2 - box.x1 > 2 and box.y2 - box.y1 > 2):
        return box
    cx, cy = box.center
    r = POINT_TOLERANCE_PX
    return PixelBox(cx - r, cy - r, cx + r, cy + r)


def hit_intended(
    step: StepSpec,
    action: LiveAction,
    box: PixelBox | None,
    to_box: PixelBox | None,
) -> bool | None:
    """Whether `action` does what the step intends on its element (the static benchmark's hit:
    the point inside the target's box; for a drag also the release inside `to`'s box; for
    typing and keys the same text / key). None when the step's target was not on screen.
    A point-like target (1x1 box) is hit within `POINT_TOLERANCE_PX`."""
    box, to_box = _widen(box), _widen(to_box)
    if step.action == "type":
        return isinstance(action, TypeText) and action.text.strip() == (step.text or "").strip()
    if step.action == "key":
        return (
            isinstance(action, Key)
            and normalise_key(action.key).lower() == normalise_key(step.key or "").lower()
        )
    if box is None:
        return None
    if step.action == "drag":
        if not isinstance(action, Drag):
            return False
        end_ok = to_box is None or to_box.contains(action.x2, action.y2)
        return box.contains(action.x1, action.y1) and end_ok
    p = point_of(action)
    if p is None:
        return False
    if step.action == "scroll" and not isinstance(action, Scroll):
        return False
    return box.contains(p.x, p.y)
