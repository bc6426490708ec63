"""Placeholder screenshots: a dataset root with real annotation files and painted PNGs, for
tests and for trying medspot without the real screenshots.

Each application gets one screen size, chosen deterministically from `sizes`; every image is
a flat background with the step's target boxes drawn faintly, so a human can see them. The
PNGs are palette images (mode "P"): convert them to RGB where a model needs RGB.
"""

from __future__ import annotations

import json
import shutil
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from medspot.dataset.images import resolve_image_path
from medspot.dataset.records import Dataset, Step
from medspot.errors import DataError

__all__ = [
    "DEFAULT_SIZES",
    "make_placeholder_root",
    "paint_placeholders",
    "size_for_app",
    "write_dataset",
]

DEFAULT_SIZES: tuple[tuple[int, int], ...] = ((1920, 1080), (1280, 800), (2560, 1440), (1366, 768))


def size_for_app(
    app: str, sizes: Sequence[tuple[int, int]] = DEFAULT_SIZES, seed: int = 0
) -> tuple[int, int]:
    """The placeholder screen size of `app`: stable across runs and machines."""
    if not sizes:
        raise ValueError("sizes must not be empty")
    return tuple(sizes[zlib.crc32(f"{seed}:{app}".encode()) % len(sizes)])  # type: ignore[return-value]


def _background(app: str, seed: int) -> tuple[int, int, int]:
    h = zlib.crc32(f"bg:{seed}:{app}".encode())
    return (200 + h % 40, 200 + (h >> 8) % 40, 200 + (h >> 16) % 40)


def paint_placeholders(
    root: Path,
    dataset_or_annotations_dir: Dataset | Path,
    *,
    sizes: Sequence[tuple[int, int]] = DEFAULT_SIZES,
    seed: int = 0,
) -> None:
    """Write `root/Annotations/*.json` (copies of the given annotation files) and a PNG for
    every `image_path` they reference, under `root`. Annotation files must be readable enough
    to load without images (`medspot validate --no-images` passes)."""
    from PIL import Image, ImageDraw

    from medspot.dataset.loading import ANNOTATION_SUFFIX, load_dataset

    root = Path(root)
    target = root / "Annotations"
    target.mkdir(parents=True, exist_ok=True)
    if isinstance(dataset_or_annotations_dir, Dataset):
        files = [a.annotation_file for a in dataset_or_annotations_dir.apps]
    else:
        src = Path(dataset_or_annotations_dir)
        files = sorted(src.glob(f"*{ANNOTATION_SUFFIX}"))
        if not files:
            raise DataError(f"no *{ANNOTATION_SUFFIX} files in {src}")
    for f in files:
        if f.resolve() != (target / f.name).resolve():
            shutil.copyfile(f, target / f.name)
    if isinstance(dataset_or_annotations_dir, Dataset):
        ds = dataset_or_annotations_dir
    else:
        ds = load_dataset(root, check_images=False)

    by_image: dict[str, list[Step]] = {}
    for step in ds.steps():
        by_image.setdefault(step.image_path, []).append(step)
    for rel, steps in by_image.items():
        app = steps[0].app
        w, h = size_for_app(app, sizes, seed)
        # A palette image: a quarter of the bytes of RGB, so painting ~600 screens takes ~1 s.
        im = Image.new("P", (w, h), 0)
        im.putpalette([*_background(app, seed), 170, 170, 180, 150, 120, 120, 90, 90, 90])
        draw = ImageDraw.Draw(im)
        draw.rectangle((0, 0, w - 1, max(1, h // 30)), fill=1)  # a title bar
        for s in steps:
            for a in s.actions:
                b = a.box
                x1, y1 = b.x1 * w, b.y1 * h
                draw.rectangle((x1, y1, max(x1, b.x2 * w - 1), max(y1, b.y2 * h - 1)), outline=2)
        draw.text((8, h // 30 + 8), f"{app}: {rel}", fill=3)
        path = resolve_image_path(root, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        im.save(path, format="PNG", compress_level=1)


def make_placeholder_root(
    tmp_path: Path,
    annotations_dir: Path,
    *,
    name: str = "medspot-placeholder",
    sizes: Sequence[tuple[int, int]] = DEFAULT_SIZES,
    seed: int = 0,
) -> Path:
    """A new dataset root `tmp_path/name` with the annotation files of `annotations_dir` and
    placeholder screenshots for all of them. Returns the root."""
    root = Path(tmp_path) / name
    paint_placeholders(root, Path(annotations_dir), sizes=sizes, seed=seed)
    return root


def write_dataset(
    root: Path,
    docs: Mapping[str, object],
    *,
    size: tuple[int, int] = (320, 200),
    paint: bool = True,
) -> Path:
    """A small hand-made dataset: `root/Annotations/<App>_Annotation.json` for each app in
    `docs` (any JSON value, malformed ones included), and with `paint` a plain PNG of `size`
    for every string `image_path` found in them that stays inside `root`. Returns `root`."""
    from PIL import Image

    root = Path(root)
    (root / "Annotations").mkdir(parents=True, exist_ok=True)
    paths: set[str] = set()
    for app, doc in docs.items():
        (root / "Annotations" / f"{app}_Annotation.json").write_text(json.dumps(doc, indent=1))
        tasks = doc.get("tasks") if isinstance(doc, dict) else None
        for task in tasks if isinstance(tasks, list) else []:
            steps = task.get("steps") if isinstance(task, dict) else None
            for step in steps if isinstance(steps, list) else []:
                rel = step.get("image_path") if isinstance(step, dict) else None
                if isinstance(rel, str):
                    paths.add(rel)
    if paint:
        for rel in sorted(paths):
            try:
                path = resolve_image_path(root, rel)
            except DataError:
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.new("P", size, 0).save(path, format="PNG", compress_level=1)
    return root
