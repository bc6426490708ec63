"""Checks of annotation files beyond their shape, used by `medspot.dataset.loading`: keys
given twice in one object, steps out of step order, action types the benchmark does not
know, screenshots too small to be a screen."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = [
    "ACTION_TYPES",
    "MIN_SCREEN_PX",
    "duplicate_keys",
    "step_order_problem",
    "tiny_screenshot",
    "unknown_action_type",
]

# The action types of MedSPOT's annotations (protocol.md, section 1).
ACTION_TYPES = frozenset({"click", "double_click", "drag", "type", "hover"})
MIN_SCREEN_PX = 32  # a screenshot narrower or lower than this is not a screen


def duplicate_keys(text: str) -> list[str]:
    """The keys given twice in one JSON object of `text` (well-formed JSON), in file order:
    a parser keeps one value silently, so the file does not say what it seems to."""
    found: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                found.append(k)
            seen.add(k)
        return dict(pairs)

    try:
        json.loads(text, object_pairs_hook=hook)
    except ValueError:
        return []  # the caller reports the JSON error itself
    return found


def step_order_problem(step_ids: Sequence[int]) -> tuple[int, str] | None:
    """(1-based position, problem) of the first step whose `step_id` is not above the one
    before it: the file order is the order steps are asked in, so it must be step order."""
    for k in range(1, len(step_ids)):
        prev, cur = step_ids[k - 1], step_ids[k]
        if cur <= prev:
            what = "repeats" if cur == prev else "comes after"
            return k + 1, (
                f"step_id {cur} {what} step_id {prev}: steps must be listed in step order "
                "(they are asked in file order)"
            )
    return None


def unknown_action_type(typ: str) -> str | None:
    if typ in ACTION_TYPES:
        return None
    return f"unknown action type {typ!r} (MedSPOT's are {', '.join(sorted(ACTION_TYPES))})"


def tiny_screenshot(size: tuple[int, int]) -> str | None:
    w, h = size
    if w >= MIN_SCREEN_PX and h >= MIN_SCREEN_PX:
        return None
    return f"the screenshot is only {w}x{h} pixels: not a screen capture"
