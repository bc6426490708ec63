"""The phantoms' names as check-parameter types: volumes (`CT-ABDOMEN-3D`), structures
(`lesion`, `kidney-left`), landmarks (`axial:lesion.left`) and export file names. Checked when a
task file is read, like the seeded studies' names (`medspot.live.services.names`); whether a
structure belongs to the task's volume is the environment's task check."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from medspot.live.envs.invesalius.geometry import parse_landmark
from medspot.live.envs.invesalius.phantoms import VOLUMES, structure_names

__all__ = [
    "ExportName",
    "ExportPattern",
    "LandmarkName",
    "PhantomStructure",
    "PhantomVolume",
    "export_name_problem",
    "unknown_structure",
    "unknown_volume",
]


def unknown_volume(name: str) -> str | None:
    if name in VOLUMES:
        return None
    return f"no phantom volume {name!r} (known: {', '.join(VOLUMES)})"


def unknown_structure(name: str, vol: str | None = None) -> str | None:
    known = structure_names(vol)
    if name in known:
        return None
    where = f"in {vol}" if vol else "in any phantom"
    return f"no structure {name!r} {where} (known: {', '.join(known)})"


def _volume(v: str) -> str:
    why = unknown_volume(v)
    if why:
        raise ValueError(why)
    return v


def _structure(v: str) -> str:
    why = unknown_structure(v)
    if why:
        raise ValueError(why)
    return v


def _landmark(v: str) -> str:
    lm = parse_landmark(v)  # ValueError with the grammar
    _structure(lm.structure)
    return v


_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.^-]{0,79}")


def export_name_problem(name: str, *, pattern: bool = False) -> str | None:
    """Why `name` is not a file name inside the export folder (no folders, no `..`)."""
    rx = re.compile(r"[A-Za-z0-9*?][A-Za-z0-9 _.^*?\[\]-]{0,79}") if pattern else _SAFE
    if not rx.fullmatch(name) or ".." in name:
        return f"{name!r} is not a plain file name of the export folder"
    return None


def _export(v: str) -> str:
    why = export_name_problem(v)
    if why:
        raise ValueError(why)
    return v


def _export_pattern(v: str) -> str:
    why = export_name_problem(v, pattern=True)
    if why:
        raise ValueError(why)
    return v


PhantomVolume = Annotated[str, AfterValidator(_volume)]
PhantomStructure = Annotated[str, AfterValidator(_structure)]
LandmarkName = Annotated[str, AfterValidator(_landmark)]
ExportName = Annotated[str, AfterValidator(_export)]
ExportPattern = Annotated[str, AfterValidator(_export_pattern)]
