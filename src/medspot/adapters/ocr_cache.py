"""The words the OCR engine read on an image, kept on disk by the image's content.

The `ocr` baseline is deterministic: the same image bytes through the same engine (rapidocr's
version, its bundled models, onnxruntime's version, our parameters) give the same words. So a
reader wrapped by `cached_reader` keeps what it read in
`<cache>/ocr/<engine key>/<sha256 of the image>.json` (`medspot.cache.cache_root`) and a later
read of the same bytes (a second `medspot demo`, another `--ocr-min-score` on the same data, the
same screen in two live tasks) takes the words from there instead of running the engine again.
The words come back exactly (floats round-trip through JSON), so scores do not change.

An entry is written atomically; one that cannot be read (a partial copy, another format) is a
miss and is rewritten; a cache that cannot be written never stops a run (one warning). Deleting
the folder is always safe.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from medspot.atomic_write import atomic_write_json
from medspot.cache import cache_root
from medspot.errors import MedspotError

__all__ = ["cached_reader", "engine_key", "words_cache_dir"]

log = logging.getLogger(__name__)

# (text, (x1, y1, x2, y2), score): the fields of `medspot.adapters.ocr.OcrWord`, which this
# module does not import (ocr.py imports it)
Word = tuple[str, tuple[float, float, float, float], float]


def engine_key(versions: Mapping[str, str], params: Mapping[str, Any]) -> str:
    """A folder name that changes whenever the engine could read differently: the packages'
    versions and the engine's parameters."""
    blob = json.dumps({"versions": dict(versions), "params": dict(params)}, sort_keys=True)
    digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
    return f"rapidocr-{versions.get('rapidocr', 'unknown')}-{digest}"


def words_cache_dir(key: str, root: Path | None = None) -> Path:
    return (cache_root() if root is None else root) / "ocr" / key


def _load(path: Path) -> list[Word] | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return [(str(t), (float(b[0]), float(b[1]), float(b[2]), float(b[3])), float(s))
                for t, b, s in raw]  # fmt: skip
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, IndexError) as e:
        log.debug("OCR cache entry %s unreadable (%s): read again", path, e)
        return None


def cached_reader(read: Callable[[Path], list[Word]], folder: Path) -> Callable[[Path], list[Word]]:
    """`read`, with what it returns for an image's bytes kept in `folder`."""
    warned = False

    def cached(path: Path) -> list[Word]:
        nonlocal warned
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        entry = folder / digest[:2] / f"{digest}.json"
        words = _load(entry)
        if words is not None:
            return words
        words = read(path)
        try:
            atomic_write_json(entry, [[t, list(b), s] for t, b, s in words])
        except (MedspotError, OSError, ValueError) as e:  # ValueError: a NaN score
            if not warned:
                log.warning("the OCR words cache cannot be written (%s); reading on", e)
                warned = True
        return words

    return cached
