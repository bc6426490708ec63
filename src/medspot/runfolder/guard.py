"""Never write into a folder that is not ours: an output folder must be empty, missing, or a
medspot run folder (it holds `run.json`)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from medspot.errors import ConfigError
from medspot.runfolder.layout import JOURNAL, LOCK, RUN_JSON

__all__ = ["make_output_folder", "refuse_foreign_folder"]


def refuse_foreign_folder(
    folder: Path, option: str = "--out", before_run: Collection[str] = ()
) -> None:
    """Raise `ConfigError` when `folder` exists, is not a run folder (it has no run.json)
    and holds anything but its lock and `before_run` (files its command writes before
    run.json) (a file in its place included); a missing or empty folder, or a run folder,
    passes."""
    folder = Path(folder)
    if not folder.exists():
        return
    if not folder.is_dir():
        raise ConfigError(f"{option} {folder} is a file, not a folder")
    if (folder / RUN_JSON).is_file():
        return
    try:
        mine = {LOCK, *before_run}
        foreign = sorted(p.name for p in folder.iterdir() if p.name not in mine)
    except OSError as e:
        raise ConfigError(f"cannot read {option} {folder}: {e.strerror or e}") from None
    if JOURNAL in foreign:
        raise ConfigError(f"{folder} has {JOURNAL} but no {RUN_JSON}; use another {option}")
    if foreign:
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise ConfigError(
            f"{option} {folder} is not empty and not a medspot run folder (it holds {shown}); "
            "medspot does not write into a folder it did not make: choose a new or empty folder"
        )


def make_output_folder(folder: Path, before_run: Collection[str] = ()) -> None:
    """Create `folder` for writing a run (refusing a folder that is not ours first)."""
    refuse_foreign_folder(folder, before_run=before_run)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create the output folder {folder}: {e.strerror or e}") from None
