"""Application names come from annotation file names (`<App>_Annotation.json`) and become
folder names of a run (`<out>/<App>/task_results.json`), so they must be safe as one path
component everywhere and distinct on a case-insensitive file system."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

__all__ = ["app_name_problem", "colliding_names"]

_FORBIDDEN = set('/\\:*?"<>|')


def app_name_problem(name: str) -> str | None:
    """Why `name` cannot be an application (and folder) name, or None."""
    if not name:
        return "the application name is empty"
    if name != name.strip():
        return f"the application name {name!r} begins or ends with white space"
    if name.startswith("."):
        return f"the application name {name!r} begins with '.' (a hidden or parent folder)"
    bad = sorted({c for c in name if c in _FORBIDDEN or unicodedata.category(c).startswith("C")})
    if bad:
        return f"the application name {name!r} holds characters unsafe in a folder name: {bad!r}"
    return None


def colliding_names(names: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of names that would be the same folder on a case-insensitive file system (or
    differ only in white space or Unicode form)."""
    seen: dict[str, str] = {}
    out: list[tuple[str, str]] = []
    for name in names:
        key = unicodedata.normalize("NFKC", name).strip().casefold()
        if key in seen:
            out.append((seen[key], name))
        else:
            seen[key] = name
    return out
