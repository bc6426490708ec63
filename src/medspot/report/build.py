"""`medspot report`: runs in, a report folder out (pages, thumbnails, plots)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from medspot.errors import AdapterUnavailable, ConfigError
from medspot.report.html import write_site
from medspot.report.live import is_live, live_images
from medspot.report.plots import PLOT_DIR, write_plots
from medspot.report.thumbs import Thumb, full_images, make_thumbnails
from medspot.runfolder.live_schema import dataset_root
from medspot.runfolder.reader import Run, load_runs

__all__ = ["ReportResult", "build_report"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportResult:
    index: Path
    pages: tuple[Path, ...]
    plots: tuple[Path, ...]
    thumbnails: int
    runs: tuple[Run, ...]
    notes: tuple[str, ...]


def _data_root(run: Run, data: Path | None) -> Path | None:
    """Where a run's screenshots are: `--data`; a live run's own folder, wherever it is now
    (run.json's root is where it was written: a copied folder reads its own screens); else
    the dataset root run.json records."""
    if data is not None:
        return data
    root = dataset_root(run.info, run.path)
    return Path(root) if root else None


def build_report(
    run_dirs: Sequence[Path],
    out_dir: Path,
    *,
    data: Path | None = None,
    plots: bool = True,
    thumb_width: int = 480,
    title: str = "MedSPOT report",
    n_boot: int = 2000,
) -> ReportResult:
    """Read `run_dirs` and write the report site into `out_dir`."""
    if not run_dirs:
        raise ConfigError("no run folder given")
    runs = load_runs(list(run_dirs))
    out_dir = Path(out_dir)
    for r in runs:
        if out_dir.resolve() == r.path.resolve():
            raise ConfigError(f"--out {out_dir} is a run folder; choose another folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot create {out_dir}: {e.strerror or e}") from None
    notes: list[str] = []
    thumbs: list[dict[str, Thumb]] = []
    full: list[dict[str, str]] = []
    for r in runs:
        root = _data_root(r, data)
        paths = [s.image_path for t in r.tasks for s in t.steps] + live_images(r)
        made = make_thumbnails(root, paths, out_dir, max_width=thumb_width)
        full.append(full_images(root, paths, out_dir) if is_live(r) else {})
        wanted = {p for p in paths if p}
        if not made:
            notes.append(
                f"{r.name}: no screenshots found"
                + (f" under {root}" if root else " (run.json names no dataset root; use --data)")
                + ": the report has no pictures"
            )
        elif len(made) < len(wanted):
            notes.append(
                f"{r.name}: {len(wanted) - len(made)} of {len(wanted)} screenshots are missing "
                f"or unreadable under {root}: their frames say so"
            )
        thumbs.append(made)
    plot_paths: list[Path] = []
    if plots:
        try:
            plot_paths = write_plots(runs, out_dir / PLOT_DIR)
        except AdapterUnavailable as e:
            notes.append(f"no plots: {e}")
    plot_rel = [p.relative_to(out_dir).as_posix() for p in plot_paths]
    pages = write_site(
        runs, out_dir, thumbs=thumbs, plot_files=plot_rel, title=title, n_boot=n_boot,
        full_images=full,
    )  # fmt: skip
    return ReportResult(
        index=out_dir / "index.html",
        pages=tuple(pages),
        plots=tuple(plot_paths),
        thumbnails=sum(len(t) for t in thumbs),
        runs=tuple(runs),
        notes=tuple(notes),
    )
