"""Screenshots: safe path resolution, sizes read from file headers, and an integrity check, each
once per image.

Every image path is resolved under the dataset root: absolute paths, `..` and symbolic links
that lead out of the root are refused. Sizes come from headers without decoding; an image over
`MAX_PIXELS` is refused there (a decompression bomb), and importing this module caps Pillow's
own decoder at the same size for every other decoding path in the process.
"""

from __future__ import annotations

import threading
from pathlib import Path, PurePosixPath

from PIL import Image, UnidentifiedImageError

from medspot.errors import DataError

__all__ = [
    "MAX_PIXELS",
    "ImageStore",
    "check_integrity",
    "read_size",
    "resolve_image_path",
]

MAX_PIXELS = 80_000_000  # larger images are refused as decompression bombs

# Pillow warns above MAX_IMAGE_PIXELS and refuses above twice that: refuse above MAX_PIXELS.
if Image.MAX_IMAGE_PIXELS is None or Image.MAX_IMAGE_PIXELS > MAX_PIXELS // 2:
    Image.MAX_IMAGE_PIXELS = MAX_PIXELS // 2


def resolve_image_path(root: Path, rel: str) -> Path:
    """Resolve `rel` under `root`, refusing absolute paths and anything that leaves the root,
    symbolic links included. Raises `DataError` (without a location; callers add it)."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise DataError(f"image path {rel!r} is not a usable path")
    if rel.startswith(("/", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise DataError(f"image path {rel!r} must be relative to the dataset root")
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if ".." in parts:
        raise DataError(f"image path {rel!r} climbs out of the dataset root")
    root_r = root.resolve()
    try:
        path = (root_r / Path(*parts)).resolve()
    except (OSError, RuntimeError) as e:  # a link loop, a name too long
        raise DataError(f"image path {rel!r} cannot be resolved ({e})") from None
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
    """Resolves paths, reads sizes from headers and checks integrity, each at most once per
    image (thread-safe; the caches hold a few values per image)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: dict[str, Path] = {}
        self._sizes: dict[str, tuple[int, int]] = {}
        self._checked: dict[str, str | None] = {}  # rel -> problem, or None when sound
        self._lock = threading.Lock()

    def path(self, rel: str) -> Path:
        got = self._paths.get(rel)
        if got is not None:
            return got
        path = resolve_image_path(self.root, rel)
        with self._lock:
            self._paths[rel] = path
        return path

    def size(self, rel: str) -> tuple[int, int]:
        """(width, height) of the image, from its header; cached."""
        got = self._sizes.get(rel)
        if got is not None:
            return got
        size = read_size(self.path(rel))
        with self._lock:
            self._sizes[rel] = size
        return size

    def known(self, rel: str) -> bool:
        """Whether `check(rel)` would answer from the cache (no file access)."""
        return rel in self._checked and rel in self._sizes

    def check(self, rel: str) -> tuple[Path, tuple[int, int]]:
        """The resolved path and size of a sound image: its header is readable and not too
        large, and its data is complete (see `check_integrity`). Raises `DataError`; the
        answer, good or bad, is cached."""
        path = self.path(rel)
        size = self.size(rel)
        if rel not in self._checked:
            problem = check_integrity(path)
            with self._lock:
                self._checked[rel] = problem
        problem = self._checked[rel]
        if problem is not None:
            raise DataError(problem)
        return path, size

    def read_bytes(self, rel: str) -> bytes:
        return self.path(rel).read_bytes()


def read_size(path: Path) -> tuple[int, int]:
    """Width and height from the image header. Raises `DataError` for a missing, unreadable,
    truncated or enormous image."""
    try:
        with Image.open(path) as im:
            w, h = im.size
    except FileNotFoundError:
        raise DataError(f"image {path} is missing") from None
    except Image.DecompressionBombError as e:
        raise DataError(f"image {path} is too large ({e})") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise DataError(f"image {path} is not a readable image ({e})") from None
    if w <= 0 or h <= 0:
        raise DataError(f"image {path} has no pixels")
    if w * h > MAX_PIXELS:
        raise DataError(f"image {path} is too large: {w}x{h} pixels (limit {MAX_PIXELS})")
    return int(w), int(h)


def check_integrity(path: Path) -> str | None:
    """Why the image at `path` cannot be sent as it is, or None. A PNG must end with its end
    chunk and pass Pillow's `verify` (every chunk's checksum, no pixel decoding); a JPEG must
    end with its end-of-image marker; other formats are decoded once (their size was already
    checked against `MAX_PIXELS`). A truncated file is caught here, before a paid call."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
            f.seek(0, 2)
            end = f.tell()
            f.seek(max(0, end - 4096))
            tail = f.read()
        if head.startswith(b"\xff\xd8\xff"):
            return None if b"\xff\xd9" in tail else f"image {path} is truncated (no JPEG end)"
        is_png = head == b"\x89PNG\r\n\x1a\n"
        if is_png and b"IEND\xaeB`\x82" not in tail:
            return f"image {path} is truncated (no PNG end chunk)"
        with Image.open(path) as im:
            if is_png:
                im.verify()
            else:
                im.load()
    except Image.DecompressionBombError as e:
        return f"image {path} is too large ({e})"
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as e:
        return f"image {path} is damaged or truncated ({e})"
    except Exception as e:  # a decoder bug on hostile data is still a bad image
        return f"image {path} cannot be checked ({type(e).__name__}: {e})"
    return None
