"""Screenshots: safe path resolution and sizes read from file headers, once per image."""

from __future__ import annotations

import threading
from pathlib import Path, PurePosixPath

from medspot.errors import DataError

__all__ = ["MAX_PIXELS", "ImageStore", "resolve_image_path"]

MAX_PIXELS = 80_000_000  # larger images are refused as decompression bombs


def resolve_image_path(root: Path, rel: str) -> Path:
    """Resolve `rel` under `root`, refusing absolute paths and anything that leaves the root,
    symbolic links included. Raises `DataError` (without a location; callers add it)."""
    if not rel or rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise DataError(f"image path {rel!r} must be relative to the dataset root")
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if ".." in parts:
        raise DataError(f"image path {rel!r} climbs out of the dataset root")
    root_r = root.resolve()
    path = (root_r / Path(*parts)).resolve()
    allowed = _link_root(root_r)
    if allowed != path and allowed not in path.parents:
        raise DataError(f"image path {rel!r} leaves the dataset root (through a link)")
    return path


def _link_root(root: Path) -> Path:
    """Where links under `root` may point: `root` itself, or, for a root inside a Hugging Face
    hub cache snapshot (`<cache>/datasets--o--n/snapshots/<commit>/...`, whose files are links
    into `../../blobs/`), that repository's cache folder."""
    for p in (root, *root.parents):
        if p.parent.name == "snapshots" and p.parent.parent.name.startswith(
            ("datasets--", "models--", "spaces--")
        ):
            return p.parent.parent
    return root


class ImageStore:
    """Reads image sizes from headers (no decoding) and image bytes, each at most once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._sizes: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def path(self, rel: str) -> Path:
        return resolve_image_path(self.root, rel)

    def size(self, rel: str) -> tuple[int, int]:
        """(width, height) of the image, from its header; cached."""
        got = self._sizes.get(rel)
        if got is not None:
            return got
        size = read_size(self.path(rel))
        with self._lock:
            self._sizes[rel] = size
        return size

    def read_bytes(self, rel: str) -> bytes:
        return self.path(rel).read_bytes()


def read_size(path: Path) -> tuple[int, int]:
    """Width and height from the image header. Raises `DataError` for a missing, unreadable,
    truncated or enormous image."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            w, h = im.size
    except FileNotFoundError:
        raise DataError(f"image {path} is missing") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise DataError(f"image {path} is not a readable image ({e})") from None
    except Image.DecompressionBombError as e:
        raise DataError(f"image {path} is too large ({e})") from None
    if w <= 0 or h <= 0:
        raise DataError(f"image {path} has no pixels")
    if w * h > MAX_PIXELS:
        raise DataError(f"image {path} is too large: {w}x{h} pixels (limit {MAX_PIXELS})")
    return int(w), int(h)
