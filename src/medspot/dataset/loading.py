"""Loading a MedSPOT dataset: find the root, parse the annotation files, handle the quirks of
protocol.md 1.2, and collect every problem with its location (file, task, step, field).

`scan` reads everything and returns the problems beside what it could read; `load_dataset`
is `scan` that refuses data with any error. `medspot validate` prints a `scan`.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson

from medspot._gc import gc_paused
from medspot.dataset import hub
from medspot.dataset.appnames import app_name_problem, colliding_names
from medspot.dataset.checks import (
    duplicate_keys,
    step_order_problem,
    tiny_screenshot,
    unknown_action_type,
)
from medspot.dataset.images import ImageStore
from medspot.dataset.records import Action, AppData, Dataset, Step, Task, step_uid
from medspot.errors import ConfigError, DataError, Location
from medspot.geometry import box_from_percent

__all__ = [
    "ANNOTATION_SUFFIX",
    "BBOX_EPSILON",
    "Problem",
    "Scan",
    "find_root",
    "load_dataset",
    "resolve_source",
    "scan",
]

log = logging.getLogger(__name__)

ANNOTATION_SUFFIX = "_Annotation.json"
ANNOTATIONS_DIR = "Annotations"
BBOX_EPSILON = 1e-6  # float noise allowed past 0..100 in a bbox
_SEARCH_DEPTH = 6
_SKIP_DIRS = {"Images", ".git", "blobs", "__pycache__", "node_modules"}


@dataclass(frozen=True)
class Problem:
    """A located error or warning in the data."""

    message: str
    location: Location | None = None

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message

    def error(self) -> DataError:
        return DataError(self.message, self.location)


@dataclass(frozen=True)
class Scan:
    """Everything read from a dataset: the records that could be built and every problem.
    Steps with an error are left out of `dataset`; counts over it are of what could be read."""

    dataset: Dataset
    errors: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    object_instructions: tuple[str, ...]  # step uids whose instruction was {"text": [...]}
    stripped_instructions: tuple[str, ...]  # step uids whose instruction had outer spaces
    images_checked: bool

    @property
    def ok(self) -> bool:
        return not self.errors


# ----------------------------------------------------------------------------- sources


def resolve_source(source: str | Path) -> Path:
    """A local path as given, or the snapshot folder of a hub dataset (`hf://owner/name`,
    `owner/name` when no such local path exists)."""
    path = Path(source)
    if path.exists():
        return path
    text = str(source)
    if text.startswith(hub.HF_PREFIX):
        return hub.snapshot(hub.parse_repo_id(text))
    if hub.is_hub_id(text):
        try:
            return hub.snapshot(hub.parse_repo_id(text))
        except DataError as e:
            raise DataError(f"no local folder {text!r}, and {e.message}") from None
    raise DataError(f"no dataset at {text!r}: not a folder, and not a hub id like owner/name")


def find_root(path: Path) -> Path:
    """The dataset root: the folder holding `Annotations/`. `path` may be the root, its
    `Annotations` folder, or any folder with exactly one shallowest `Annotations/` inside."""
    if not path.is_dir():
        raise DataError(f"{path} is not a folder")
    if (path / ANNOTATIONS_DIR).is_dir():
        return path
    if path.name == ANNOTATIONS_DIR and _has_annotation_files(path):
        return path.parent
    found: list[tuple[int, Path]] = []
    base_depth = len(path.parts)
    for dirpath, dirnames, _ in os.walk(path):
        here = Path(dirpath)
        depth = len(here.parts) - base_depth
        if ANNOTATIONS_DIR in dirnames and _has_annotation_files(here / ANNOTATIONS_DIR):
            found.append((depth, here))
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in _SKIP_DIRS and not d.startswith(".") and depth < _SEARCH_DEPTH
        )
    if not found:
        raise DataError(
            f"no {ANNOTATIONS_DIR}/ folder with *{ANNOTATION_SUFFIX} files under {path}"
        )
    shallowest = min(d for d, _ in found)
    roots = [p for d, p in found if d == shallowest]
    if len(roots) > 1:
        listed = ", ".join(str(p) for p in roots)
        raise DataError(f"several dataset roots under {path}: {listed}; pass one of them")
    return roots[0]


def _has_annotation_files(folder: Path) -> bool:
    try:
        return any(p.name.endswith(ANNOTATION_SUFFIX) for p in folder.iterdir())
    except OSError:
        return False


def _select_apps(
    files: dict[str, Path], apps: Sequence[str] | None, annotations: Path
) -> list[str]:
    known = sorted(files)
    if apps is None:
        return known
    if isinstance(apps, str):
        apps = [apps]
    lower = {a.lower(): a for a in known}
    chosen: set[str] = set()
    unknown: list[str] = []
    for a in apps:
        name = a if a in files else lower.get(a.lower())
        if name is None:
            unknown.append(a)
        else:
            chosen.add(name)
    if unknown or not chosen:
        raise ConfigError(
            f"unknown application(s) {', '.join(unknown) or '(none given)'} in {annotations}; "
            f"known: {', '.join(known)}"
        )
    return sorted(chosen)


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


class _Collector:
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


# ----------------------------------------------------------------------------- entry points


def scan(
    source: str | Path,
    *,
    apps: Sequence[str] | None = None,
    limit: int | None = None,
    check_images: bool = True,
) -> Scan:
    """Read a dataset, collecting every problem. Raises `DataError` only when there is no
    dataset root at all, `ConfigError` for unknown `apps` or a bad `limit`."""
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be 1 or more, got {limit}")
    root = find_root(resolve_source(source))
    annotations = root / ANNOTATIONS_DIR
    col = _Collector(root)
    files: dict[str, Path] = {}
    try:
        entries = sorted(annotations.iterdir())
    except OSError as e:
        raise DataError(f"cannot read {annotations}: {e.strerror or e}") from None
    for p in entries:
        if p.name.endswith(ANNOTATION_SUFFIX) and p.name != ANNOTATION_SUFFIX:
            files[p.name[: -len(ANNOTATION_SUFFIX)]] = p
        elif p.suffix.lower() == ".json":
            col.warn(
                f"ignored: the name does not end in {ANNOTATION_SUFFIX}",
                Location(p.relative_to(root).as_posix()),
            )
    for app in list(files):
        problem = app_name_problem(app)
        if problem is not None:
            col.error(problem, Location(files.pop(app).relative_to(root).as_posix()))
    for first, second in colliding_names(files):
        col.error(
            f"the application names {first!r} and {second!r} differ only in case or white "
            f"space (their results would share a folder); rename one",
            Location(files.pop(second).relative_to(root).as_posix()),
        )
    if not files:
        col.error(f"no annotation files (*{ANNOTATION_SUFFIX})", Location(ANNOTATIONS_DIR))
    chosen = _select_apps(files, apps, annotations) if files else []
    digest = hashlib.sha256()
    app_data: list[AppData] = []
    for app in chosen:
        path = files[app]
        try:
            data = path.read_bytes()
        except OSError as e:
            col.error(
                f"cannot read the file: {e.strerror or e}",
                Location(path.relative_to(root).as_posix()),
            )
            continue
        digest.update(data.removeprefix(codecs.BOM_UTF8))  # a BOM is not a content change
        app_data.append(col.parse_file(app, path, data, limit))
    if check_images and col.first_use and not (root / "Images").exists():
        col.warn(
            "there is no Images/ folder beside Annotations/, so every screenshot is "
            "missing (--no-images checks the annotations alone)",
            Location("Images"),
        )
    col.check_images(check_images)
    ds = Dataset(
        root=root,
        apps=tuple(app_data),
        warnings=tuple(str(w) for w in col.warnings),
        fingerprint=digest.hexdigest(),
        source=str(source),
    )
    log.debug("scanned %s: %d errors, %d warnings", root, len(col.errors), len(col.warnings))
    return Scan(
        ds,
        tuple(col.errors),
        tuple(col.warnings),
        tuple(col.object_instructions),
        tuple(col.stripped),
        check_images,
    )


def load_dataset(
    source: str | Path,
    *,
    apps: Sequence[str] | None = None,
    limit: int | None = None,
    check_images: bool = True,
) -> Dataset:
    """Load a dataset root (or a tree holding its `Annotations/`, or a hub dataset). Raises
    `DataError` for the first problem, saying how many more `medspot validate` would list."""
    with gc_paused():
        result = scan(source, apps=apps, limit=limit, check_images=check_images)
    if result.errors:
        first = result.errors[0]
        more = len(result.errors) - 1
        hint = f"and {more} more problem(s); " if more else ""
        raise DataError(
            f"{first.message} ({hint}`medspot validate {source}` lists every problem)",
            first.location,
        )
    for w in result.warnings:
        log.info("%s", w)
    return result.dataset
