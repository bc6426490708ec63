"""Loading a MedSPOT dataset: find the root, parse the annotation files, handle the quirks of
protocol.md 1.2, and collect every problem with its location (file, task, step, field).

`scan` reads everything and returns the problems beside what it could read; `load_dataset`
is `scan` that refuses data with any error. `medspot validate` prints a `scan`.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from medspot._gc import gc_paused
from medspot.dataset import hub
from medspot.dataset.appnames import app_name_problem, colliding_names
from medspot.dataset.collector import BBOX_EPSILON, Collector, Problem
from medspot.dataset.records import AppData, Dataset
from medspot.errors import ConfigError, DataError, Location

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
_SEARCH_DEPTH = 6
_SKIP_DIRS = {"Images", ".git", "blobs", "__pycache__", "node_modules"}


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
    col = Collector(root)
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
