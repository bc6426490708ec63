"""Writing a file atomically, for every writer of ours (the run folder's results, run.json, live
screens, the OCR words cache, exported files): a temporary file in the same folder, with the mode
the umask gives a new file, flushed and fsynced, then `os.replace`d over the target, so that a
reader sees the old file or the new one, never a part. A failure is a `RunFolderError` naming
the file.

What a model wrote never makes a JSON file unwritable: values no serializer writes are written
as `medspot.jsonsafe.json_safe` makes them (logged). Imports no medspot module but `errors` and
`jsonsafe`.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

from medspot.errors import RunFolderError
from medspot.jsonsafe import json_safe

__all__ = [
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_json_lines",
    "atomic_write_text",
]

log = logging.getLogger(__name__)


def _file_mode() -> int:
    """The mode a new file gets from the process umask (`mkstemp` would make it 0600). Read
    from /proc where it can be (setting the umask to read it races with other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part:
    a temporary file in the same folder, with the mode the umask gives a new file, fsynced,
    then renamed over `path`. A failure is a `RunFolderError` naming the file."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise RunFolderError(f"cannot write {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _file_mode())
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise RunFolderError(f"cannot write {path}: {e.strerror or e}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """`text` as UTF-8, written atomically (`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _json_text(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_json(path: Path, obj: Any) -> None:
    """`obj` as indented JSON (NaN refused: undefined values are null), written atomically.
    What a model wrote inside `obj` never makes it unwritable: a lone surrogate, an integer
    beyond 64 bits, a non-string key, nesting too deep are written as `json_safe` makes them
    (logged); a NaN is still refused (the harness's own numbers are never NaN)."""
    try:
        text = _json_text(obj)
        text.encode("utf-8")
    except ValueError as e:
        if "Out of range float" in str(e):
            raise
        text = _safe_text(path, obj, e)
    except (TypeError, RecursionError) as e:
        text = _safe_text(path, obj, e)
    atomic_write_text(path, text)


def _safe_text(path: Path, obj: Any, e: BaseException) -> str:
    log.warning("%s: written with values made writable (%s: %s)", path, type(e).__name__, e)
    return _json_text(json_safe(obj))


def _item_line(path: Path, item: Any) -> bytes:
    """One item as orjson writes it; one holding what orjson cannot write (a lone surrogate
    or an integer beyond 64 bits a model wrote, nesting deeper than orjson goes) as
    `json_safe` makes it: a model's value never makes a results file unwritable."""
    try:
        return orjson.dumps(item)
    except TypeError as e:  # orjson.JSONEncodeError is a TypeError
        log.warning("%s: an item written with values made writable (%s)", path, e)
        return orjson.dumps(json_safe(item))


def atomic_write_json_lines(path: Path, items: list[Any]) -> None:
    """A JSON list written one item per line: still one JSON document, readable and diffable,
    and fast (orjson; NaN, which the scorer never writes, would become null)."""
    body = b",\n".join(_item_line(path, x) for x in items).decode("utf-8")
    atomic_write_text(path, "[\n" + body + "\n]\n" if items else "[]\n")
