"""Reading a replay file (`--model replay --replay-file FILE`) with every problem found up
front and named by line: bad JSON (NaN and Infinity included), a step id that is not a step of
the loaded data, a step given twice, a point that is not two finite numbers (inside 0..1 for
`point`), an empty file. A byte-order mark is skipped, as in annotation files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from medspot.dataset.records import Dataset
from medspot.errors import ConfigError, DataError

__all__ = ["ANSWER_KEYS", "read_replay_file"]

ANSWER_KEYS = ("point", "point_px", "raw_text")
_MAX_SHOWN = 10


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_pair(value: object) -> tuple[float, float] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    try:
        x, y = float(value[0]), float(value[1])
    except OverflowError:
        return None
    return (x, y) if math.isfinite(x) and math.isfinite(y) else None


def _record_problem(obj: object, dataset: Dataset | None) -> str | None:
    if not isinstance(obj, dict):
        return "a record must be a JSON object"
    uid = obj.get("step")
    if not isinstance(uid, str):
        return 'missing "step" (a string "<App>/<task>/<step>")'
    parts = uid.rsplit("/", 2)
    if len(parts) != 3 or not all(p.isdigit() for p in parts[1:]):
        return f'"step" {uid!r} is not a step id "<App>/<task>/<step>"'
    if dataset is not None and not dataset.has_step(uid):
        app, task = parts[0], f"{parts[0]}/{parts[1]}"
        known_task = any(t.uid == task for t in dataset.tasks())
        if app in dataset.app_names and known_task:  # other apps or tasks may be left out
            return f'"step" {uid!r}: task {task} has no such step'
    if not any(k in obj for k in ANSWER_KEYS):
        return f"no answer: give one of {', '.join(ANSWER_KEYS)}"
    point = obj.get("point")
    if point is not None:
        pair = _finite_pair(point)
        if pair is None:
            return f'"point" must be two finite numbers [x, y], got {point!r}'
        if not all(0.0 <= v <= 1.0 for v in pair):
            return f'"point" {point!r} lies outside 0..1 (use "point_px" for pixels)'
    px = obj.get("point_px")
    if px is not None:
        pair = _finite_pair(px)
        if pair is None or min(pair) < 0:
            return f'"point_px" must be two finite numbers >= 0, got {px!r}'
    raw = obj.get("raw_text")
    if raw is not None and not isinstance(raw, str):
        return f'"raw_text" must be a string, got {type(raw).__name__}'
    return None


def read_replay_file(path: Path, dataset: Dataset | None = None) -> dict[str, dict[str, Any]]:
    """The answers of the replay file at `path` by step id. Raises `DataError` listing the
    first problems with their line numbers; `ConfigError` when the file cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read replay file {path}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    answers: dict[str, dict[str, Any]] = {}
    first_line: dict[str, int] = {}
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_no_constant)
        except ValueError as e:
            problems.append(f"line {n}: invalid JSON ({e})")
            continue
        problem = _record_problem(obj, dataset)
        if problem is not None:
            problems.append(f"line {n}: {problem}")
            continue
        uid = obj["step"]
        if uid in first_line:
            problems.append(f"line {n}: step {uid!r} again (first on line {first_line[uid]})")
            continue
        first_line[uid] = n
        answers[uid] = obj
    if problems:
        more = len(problems) - _MAX_SHOWN
        shown = problems[:_MAX_SHOWN] + ([f"... and {more} more"] if more > 0 else [])
        raise DataError(f"replay file {path}: {len(problems)} problem(s):\n  " + "\n  ".join(shown))
    if not answers:
        raise DataError(f"replay file {path} holds no answers (one JSON object per line)")
    return answers
