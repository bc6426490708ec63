"""Screenshot thumbnails for the report: small JPEG files beside the page (never base64 in the
HTML), read from the dataset root recorded in run.json (or a root given by the user). A missing
or unreadable screenshot gives no thumbnail, and the report draws the step without a picture.
`full_images` puts the screenshots themselves into the report folder (a hard link where the
file system allows, else a copy), for the pages that open a frame at full size."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from medspot.dataset.images import resolve_image_path
from medspot.errors import DataError

__all__ = ["FULL_DIR", "THUMB_DIR", "Thumb", "full_images", "make_thumbnails", "thumb_name"]

log = logging.getLogger(__name__)

THUMB_DIR = "thumbs"
FULL_DIR = "full"


@dataclass(frozen=True)
class Thumb:
    rel: str  # path of the thumbnail relative to the report folder
    size: tuple[int, int]  # thumbnail size in pixels
    original: tuple[int, int]  # the screenshot's size


def thumb_name(root: Path, image_path: str) -> str:
    """A file name that depends on the dataset root and the image path only."""
    h = hashlib.sha256(f"{root}\0{image_path}".encode()).hexdigest()[:20]
    return f"{h}.jpg"


def make_thumbnails(
    root: Path | None,
    image_paths: Iterable[str],
    out_dir: Path,
    *,
    max_width: int = 480,
    quality: int = 80,
) -> dict[str, Thumb]:
    """Write a thumbnail for each distinct image under `out_dir/thumbs/`; returns those made,
    by image path. Images that are missing, unreadable or outside the root are skipped."""
    from PIL import Image, UnidentifiedImageError

    made: dict[str, Thumb] = {}
    if root is None or not root.is_dir():
        return made
    target = out_dir / THUMB_DIR
    skipped = 0
    missing: list[str] = []
    for rel in dict.fromkeys(image_paths):
        if not rel:
            continue
        try:
            src = resolve_image_path(root, rel)
        except DataError as e:
            log.warning("not drawing %s: %s", rel, e)
            skipped += 1
            continue
        if not src.is_file():
            missing.append(rel)
            continue
        name = thumb_name(root, rel)
        try:
            with Image.open(src) as im:
                original = im.size
                im.draft("RGB", (max_width, max_width))
                rgb = im.convert("RGB")
                scale = min(1.0, max_width / max(1, original[0]))
                size = (max(1, round(original[0] * scale)), max(1, round(original[1] * scale)))
                rgb = rgb.resize(size, Image.Resampling.LANCZOS)
                target.mkdir(parents=True, exist_ok=True)
                rgb.save(target / name, format="JPEG", quality=quality, optimize=True)
        except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as e:
            log.warning("cannot read screenshot %s: %s", src, e)
            skipped += 1
            continue
        made[rel] = Thumb(rel=f"{THUMB_DIR}/{name}", size=size, original=original)
    if missing and made:  # some are there: the missing ones are said, each frame says which
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        shown = ", ".join(missing[:5]) + more
        log.warning("%d screenshot(s) missing under %s: %s", len(missing), root, shown)
    if skipped or (missing and not made):
        log.info("%d screenshot(s) not found or unreadable under %s", skipped + len(missing), root)
    return made


def full_images(root: Path | None, image_paths: Iterable[str], out_dir: Path) -> dict[str, str]:
    """Each distinct screenshot under `out_dir/full/` as it is (linked or copied); returns the
    report-relative path by image path. Missing images, or images outside the root, are
    skipped."""
    made: dict[str, str] = {}
    if root is None or not root.is_dir():
        return made
    target = out_dir / FULL_DIR
    for rel in dict.fromkeys(image_paths):
        if not rel:
            continue
        try:
            src = resolve_image_path(root, rel)
        except DataError:
            continue
        if not src.is_file():
            continue
        name = Path(thumb_name(root, rel)).with_suffix(src.suffix.lower() or ".png").name
        dest = target / name
        try:
            target.mkdir(parents=True, exist_ok=True)
            if not dest.exists():
                try:
                    os.link(src, dest)
                except OSError:  # another file system, or links not allowed
                    shutil.copyfile(src, dest)
        except OSError as e:
            log.warning("cannot put %s into the report: %s", src, e)
            continue
        made[rel] = f"{FULL_DIR}/{name}"
    return made
