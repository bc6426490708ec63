"""The problem-collecting parser of annotation files: every task, step, instruction, action
and bbox checked with its location (file, task, step, field), problems collected rather than
raised, so `medspot validate` lists them all. `dataset.loading` finds the files and runs it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from medspot.dataset.checks import (
    duplicate_keys,
    step_order_problem,
    tiny_screenshot,
    unknown_action_type,
)
from medspot.dataset.images import ImageStore
from medspot.dataset.records import Action, AppData, Step, Task, step_uid
from medspot.errors import DataError, Location
from medspot.geometry import box_from_percent

__all__ = ["BBOX_EPSILON", "Collector", "Problem"]

BBOX_EPSILON = 1e-6  # float noise allowed past 0..100 in a bbox


@dataclass(frozen=True)
class Problem:
    """A located error or warning in the data."""

    message: str
    location: Location | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message

    def error(self) -> DataError:
        return DataError(self.message, self.location)


# ----------------------------------------------------------------------------- parsing


def _jtype(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _is_number(v: object) -> bool:
    """A finite JSON number that fits a float (an integer like 10**400 does not)."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


_Loc = Callable[[str | None], Location]


class Collector:
    """Parses annotation files into records, collecting problems as it goes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.object_instructions: list[str] = []
        self.stripped: list[str] = []
        self.first_use: dict[str, Location] = {}  # image path -> first step using it
        self.uses: dict[str, int] = {}

    def error(self, msg: str, loc: Location | None) -> None:
        self.errors.append(Problem(msg, loc))

    def warn(self, msg: str, loc: Location | None) -> None:
        self.warnings.append(Problem(msg, loc))

    def parse_file(self, app: str, path: Path, data: bytes, limit: int | None) -> AppData:
        fname = path.relative_to(self.root).as_posix()
        floc = Location(fname)
        tasks: list[Task] = []
        if not data.strip():
            self.error("the file is empty", floc)
            return AppData(app, path, ())
        try:
            text = data.decode("utf-8-sig")
            try:
                doc = orjson.loads(text)
            except orjson.JSONDecodeError:  # NaN literals, huge integers: let json decide
                doc = json.loads(text)
        except UnicodeDecodeError as e:
            self.error(f"not UTF-8 text ({e.reason} at byte {e.start})", floc)
            return AppData(app, path, ())
        except json.JSONDecodeError as e:
            self.error(f"invalid JSON: {e.msg} at line {e.lineno} column {e.colno}", floc)
            return AppData(app, path, ())
        except ValueError as e:  # an integer too long to read (Python's digit limit)
            self.error(f"invalid JSON: {e}", floc)
            return AppData(app, path, ())
        dups = duplicate_keys(text)
        if dups:
            shown = ", ".join(repr(k) for k in dict.fromkeys(dups))
            self.error(
                f"{len(dups)} key(s) given twice in one object ({shown}): only one value "
                "would be read; remove the other",
                floc,
            )
        if not isinstance(doc, dict):
            self.error(
                f'the top level must be an object {{"tasks": [...]}}, got {_jtype(doc)}', floc
            )
            return AppData(app, path, ())
        if "tasks" not in doc:
            self.error("missing field", Location(fname, field="tasks"))
            return AppData(app, path, ())
        raw_tasks = doc["tasks"]
        if not isinstance(raw_tasks, list):
            self.error(
                f"must be an array of tasks, got {_jtype(raw_tasks)}",
                Location(fname, field="tasks"),
            )
            return AppData(app, path, ())
        if not raw_tasks:
            self.error("the file has no tasks", Location(fname, field="tasks"))
        for ti, raw in enumerate(raw_tasks[:limit] if limit is not None else raw_tasks):
            task = self._task(app, fname, ti, raw)
            if task is not None:
                tasks.append(task)
        return AppData(app, path, tuple(tasks))

    def _task(self, app: str, fname: str, ti: int, raw: object) -> Task | None:
        tloc = Location(fname, ti)
        if not isinstance(raw, dict):
            self.error(f"a task must be an object, got {_jtype(raw)}", tloc)
            return None
        overview = raw.get("task_overview")
        if "task_overview" not in raw:
            self.error("missing field", Location(fname, ti, field="task_overview"))
        elif not isinstance(overview, str):
            self.error(
                f"must be a string, got {_jtype(overview)}",
                Location(fname, ti, field="task_overview"),
            )
        raw_steps = raw.get("steps")
        if "steps" not in raw:
            self.error("missing field", Location(fname, ti, field="steps"))
            return None
        if not isinstance(raw_steps, list):
            self.error(
                f"must be an array of steps, got {_jtype(raw_steps)}",
                Location(fname, ti, field="steps"),
            )
            return None
        if not raw_steps:
            self.error("the task has no steps", Location(fname, ti, field="steps"))
            return None
        steps = [self._step(app, fname, ti, k, s) for k, s in enumerate(raw_steps, start=1)]
        good = tuple(s for s in steps if s is not None)
        order = step_order_problem([s.step_id for s in good])
        if order is not None:
            self.error(order[1], Location(fname, ti, good[order[0] - 1].position, "step_id"))
        return Task(app, ti, overview.strip() if isinstance(overview, str) else "", good)

    def _step(self, app: str, fname: str, ti: int, k: int, raw: object) -> Step | None:
        def loc(field: str | None) -> Location:
            return Location(fname, ti, k, field)

        if not isinstance(raw, dict):
            self.error(f"a step must be an object, got {_jtype(raw)}", loc(None))
            return None
        n_errors = len(self.errors)
        missing = [f for f in ("step_id", "image_path", "instruction", "actions") if f not in raw]
        for f in missing:
            self.error("missing field", loc(f))
        step_id = raw.get("step_id")
        if "step_id" in raw:
            if not isinstance(step_id, int) or isinstance(step_id, bool):
                self.error(f"must be an integer, got {_jtype(step_id)}", loc("step_id"))
            elif step_id != k:
                self.warn(
                    f"step_id {step_id} differs from the step's position {k}; "
                    "steps are identified by position",
                    loc("step_id"),
                )
        image_path = raw.get("image_path")
        if "image_path" in raw:
            if not isinstance(image_path, str):
                self.error(f"must be a string, got {_jtype(image_path)}", loc("image_path"))
            elif not image_path.strip():
                self.error("is empty", loc("image_path"))
            else:
                self.first_use.setdefault(image_path, loc("image_path"))
                self.uses[image_path] = self.uses.get(image_path, 0) + 1
        instruction = (
            self._instruction(app, ti, k, raw["instruction"], loc) if "instruction" in raw else None
        )
        actions = self._actions(raw.get("actions"), loc) if "actions" in raw else None
        if len(self.errors) != n_errors or instruction is None or actions is None:
            return None
        assert isinstance(step_id, int) and isinstance(image_path, str)
        return Step(app, ti, k, step_id, image_path, instruction, actions)

    def _instruction(self, app: str, ti: int, k: int, raw: object, loc: _Loc) -> str | None:
        if isinstance(raw, str):
            text = raw.strip()
            if text != raw:
                self.stripped.append(step_uid(app, ti, k))
            if not text:
                self.error("is empty", loc("instruction"))
                return None
            return text
        if isinstance(raw, dict) and set(raw) == {"text"}:
            parts = raw["text"]
            if isinstance(parts, str):
                parts = [parts]
            if (
                isinstance(parts, list)
                and parts
                and all(isinstance(p, str) and p.strip() for p in parts)
            ):
                text = " ".join(p.strip() for p in parts)
                self.object_instructions.append(step_uid(app, ti, k))
                self.warn(
                    f'an object {{"text": [...]}} instead of a string; its {len(parts)} '
                    f"text(s) are joined with a space: {text!r}",
                    loc("instruction"),
                )
                return text
            self.error(
                'an object instruction must be {"text": [non-empty strings]}', loc("instruction")
            )
            return None
        self.error(f'must be a string or {{"text": [...]}}, got {_jtype(raw)}', loc("instruction"))
        return None

    def _actions(self, raw: object, loc: _Loc) -> tuple[Action, ...] | None:
        if not isinstance(raw, list):
            self.error(f"must be an array of actions, got {_jtype(raw)}", loc("actions"))
            return None
        out: list[Action] = []
        for ai, a in enumerate(raw):
            f = f"actions[{ai}]"
            if not isinstance(a, dict):
                self.error(f"an action must be an object, got {_jtype(a)}", loc(f))
                continue
            ok = True
            for key in ("type", "target", "bbox"):
                if key not in a:
                    self.error("missing field", loc(f"{f}.{key}"))
                    ok = False
            typ, target, bbox = a.get("type"), a.get("target"), a.get("bbox")
            if "type" in a and (not isinstance(typ, str) or not typ.strip()):
                self.error(f"must be a non-empty string, got {_jtype(typ)}", loc(f"{f}.type"))
                ok = False
            if "target" in a and not isinstance(target, str):
                self.error(f"must be a string, got {_jtype(target)}", loc(f"{f}.target"))
                ok = False
            if "bbox" in a:
                problem = _bbox_problem(bbox)
                if problem:
                    self.error(problem, loc(f"{f}.bbox"))
                    ok = False
            if ok and isinstance(typ, str) and (unknown := unknown_action_type(typ.strip())):
                self.warn(unknown, loc(f"{f}.type"))
            if ok:
                assert isinstance(typ, str) and isinstance(target, str)
                assert isinstance(bbox, list)
                x, y, w, h = (float(v) for v in bbox)
                out.append(Action(typ.strip(), target, (x, y, w, h), box_from_percent(x, y, w, h)))
        return tuple(out)

    def check_images(self, check: bool) -> None:
        """Every distinct image path: safe (always) and, with `check`, a sound image: its
        header readable and its data complete (`ImageStore.check`: PNG verified chunk by chunk
        without decoding the pixels, a JPEG's end marker, other formats decoded)."""
        store = ImageStore(self.root)
        for rel, where in self.first_use.items():
            try:
                if check:
                    _, size = store.check(rel)
                    tiny = tiny_screenshot(size)
                    if tiny is not None:
                        self.warn(f"{tiny}: {rel}", where)
                else:
                    store.path(rel)
            except DataError as e:
                n = self.uses.get(rel, 1)
                also = f" (used by {n} steps; the first is named)" if n > 1 else ""
                self.error(e.message + also, where)


def _bbox_problem(bbox: object) -> str | None:
    """Why `bbox` is not a valid `[x, y, w, h]` in percent, or None."""
    if not isinstance(bbox, list):
        return f"must be an array of four numbers [x, y, w, h], got {_jtype(bbox)}"
    if len(bbox) != 4:
        return f"must be four numbers [x, y, w, h], got {len(bbox)} value(s)"
    for i, v in enumerate(bbox):
        if not _is_number(v):
            shown = repr(v) if len(repr(v)) <= 40 else repr(v)[:20] + f"... ({len(repr(v))} chars)"
            return f"value {i} must be a finite number, got {_jtype(v)} {shown}"
    x, y, w, h = (float(v) for v in bbox)
    if w <= 0 or h <= 0:
        return f"width and height must be above 0, got w={w:g}, h={h:g}"
    eps = BBOX_EPSILON
    if x < -eps or y < -eps or x + w > 100 + eps or y + h > 100 + eps:
        return (
            f"box {[x, y, w, h]} lies outside 0..100 percent of the image "
            f"(x+w={x + w:g}, y+h={y + h:g})"
        )
    return None
