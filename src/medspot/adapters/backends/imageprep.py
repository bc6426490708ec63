"""Screenshots as backends send them: the original bytes when nothing needs changing, otherwise
one decode, an optional Qwen-style pre-resize (abs_resized cards) and a PNG or JPEG encode.

Everything is read once per (path, resize, format) and kept in a small LRU cache, so a retried
or re-asked step neither reads nor re-encodes its screenshot again. Sizes are (width, height).
"""

from __future__ import annotations

import base64
import hashlib
import io
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from medspot.adapters.card import ResizeSpec
from medspot.adapters.conventions import smart_resize
from medspot.errors import ConfigError, DataError

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = ["ImagePrep", "PreparedImage", "sniff_mime"]

_MIMES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}
_FORMATS = ("original", "png", "jpeg")


def sniff_mime(data: bytes) -> str | None:
    """The MIME type of PNG, JPEG, WebP or GIF bytes from their magic number, else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return _MIMES["png"]
    if data.startswith(b"\xff\xd8\xff"):
        return _MIMES["jpeg"]
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _MIMES["webp"]
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return _MIMES["gif"]
    return None


@dataclass(frozen=True, slots=True)
class PreparedImage:
    """The bytes to send and what they are. `reencoded` is False when `data` is the file's
    own bytes; `sent_size` is the size of `data` (the resized size for abs_resized cards)."""

    data: bytes
    mime: str
    sent_size: tuple[int, int]
    original_size: tuple[int, int]
    reencoded: bool
    sha256: str

    @property
    def resized(self) -> bool:
        return self.sent_size != self.original_size

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def to_pil(self) -> PILImage:
        """The image decoded to RGB (for in-process models)."""
        from PIL import Image

        with Image.open(io.BytesIO(self.data)) as im:
            return im.convert("RGB")


_Key = tuple[str, int, int, int, str]


class ImagePrep:
    """Prepares screenshots for sending; thread-safe, with an LRU cache of `max_items`."""

    def __init__(self, max_items: int = 64) -> None:
        self.max_items = max_items
        self._cache: OrderedDict[_Key, PreparedImage] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = 0  # file reads, for tests and diagnostics
        self.encodes = 0

    def prepare(
        self,
        path: Path,
        original_size: tuple[int, int],
        resize: ResizeSpec | None = None,
        image_format: str = "original",
    ) -> PreparedImage:
        """The image at `path` ready to send. `original_size` is the header size the caller
        already knows. With `resize`, the screenshot is smart-resized to the card's frame."""
        if image_format not in _FORMATS:
            raise ConfigError(f"unknown image format {image_format!r} (one of {_FORMATS})")
        spec = resize or ResizeSpec(0, 0, 0)
        key: _Key = (str(path), spec.factor, spec.min_pixels, spec.max_pixels, image_format)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        prepared = self._prepare(path, original_size, resize, image_format)
        with self._lock:
            self._cache[key] = prepared
            while len(self._cache) > self.max_items:
                self._cache.popitem(last=False)
        return prepared

    def _prepare(
        self,
        path: Path,
        original_size: tuple[int, int],
        resize: ResizeSpec | None,
        image_format: str,
    ) -> PreparedImage:
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise DataError(f"cannot read image {path}: {e.strerror or e}") from None
        self.reads += 1
        target = smart_resize(*original_size, resize) if resize is not None else original_size
        mime = sniff_mime(raw)
        wanted = _MIMES.get(image_format)
        keep = target == original_size and mime is not None and wanted in (None, mime)
        if keep and mime in (_MIMES["png"], _MIMES["jpeg"]):
            return PreparedImage(
                raw, mime, original_size, original_size, False, hashlib.sha256(raw).hexdigest()
            )
        fmt = "jpeg" if image_format == "jpeg" else "png"
        data = _encode(raw, path, target, fmt)
        self.encodes += 1
        return PreparedImage(
            data, _MIMES[fmt], target, original_size, True, hashlib.sha256(data).hexdigest()
        )


def _encode(raw: bytes, path: Path, size: tuple[int, int], fmt: str) -> bytes:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(raw)) as im:
            rgb = im.convert("RGB")
    except Image.DecompressionBombError as e:
        raise DataError(f"image {path} is too large to decode ({e})") from None
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise DataError(f"image {path} is not a readable image ({e})") from None
    if rgb.size != size:
        rgb = rgb.resize(size, Image.Resampling.BICUBIC)
    out = io.BytesIO()
    if fmt == "jpeg":
        rgb.save(out, format="JPEG", quality=95)
    else:
        rgb.save(out, format="PNG")
    return out.getvalue()
