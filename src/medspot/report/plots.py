"""Figures with matplotlib (Agg, imported lazily), each written as PNG and SVG and readable
alone: per-application bars with intervals, failure types stacked, the survival curve, and the
click offsets from the target centre in units of target size. A figure is drawn only when the
runs have data for it (a live run has no survival curve), never as an empty frame."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medspot.errors import AdapterUnavailable
from medspot.runfolder.reader import Run
from medspot.scoring.metrics import TCA

__all__ = ["PLOT_DIR", "write_plots"]

log = logging.getLogger(__name__)

PLOT_DIR = "plots"
_OFFSET_LIMIT = 4.0  # offsets beyond this many target sizes are drawn at the border


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise AdapterUnavailable("plots need matplotlib: pip install 'medspot[report]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "medspot"  # stable SVG ids
    return plt


def _save(plt: Any, fig: Any, out_dir: Path, stem: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=120, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return paths


def _legend_outside(ax: Any) -> None:
    """The legend right of the axes, where it hides no bar."""
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _integer_locator() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _caption(runs: Sequence[Run]) -> str:
    protos = sorted({r.protocol for r in runs})
    return "protocol " + ", ".join(protos)


def _has_per_app(runs: Sequence[Run], key: str) -> bool:
    return any(isinstance((r.app_metrics.get(a) or {}).get(key), int | float)
               for r in runs for a in r.apps)  # fmt: skip


def _per_app(plt: Any, runs: Sequence[Run], out_dir: Path, key: str) -> list[Path]:
    if not _has_per_app(runs, key):
        return []
    apps = list(dict.fromkeys(a for r in runs for a in r.apps))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(apps) + 2), 4))
    width = 0.8 / max(1, len(runs))
    for i, r in enumerate(runs):
        xs, ys, lo, hi = [], [], [], []
        for j, app in enumerate(apps):
            m = r.app_metrics.get(app) or {}
            v = m.get(key)
            if not isinstance(v, int | float):
                continue
            ci = (m.get("confidence_intervals") or {}).get(key)
            xs.append(j + (i - (len(runs) - 1) / 2) * width)
            ys.append(100 * v)
            lo.append(100 * (v - ci[0]) if ci else 0.0)
            hi.append(100 * (ci[1] - v) if ci else 0.0)
        if xs:
            ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=r.name)
    ax.set_xticks(range(len(apps)), apps, rotation=30, ha="right")
    ax.set_ylabel("task completion accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Task completion by application, 95% intervals ({_caption(runs)})")
    _legend_outside(ax)
    return _save(plt, fig, out_dir, "per_app_tca")


def _failures(plt: Any, runs: Sequence[Run], out_dir: Path) -> list[Path]:
    types: list[str] = []
    for r in runs:
        for app in r.apps:
            hist = (r.app_failures.get(app) or {}).get("failure_type_histogram") or {}
            types.extend(t for t, n in hist.items() if n and t not in types)
    if not types:
        return []  # no failed task: nothing to stack
    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 3.2 * len(runs)), squeeze=False, sharex=True)
    cmap = plt.get_cmap("tab10")
    for ax, r in zip(axes[:, 0], runs, strict=True):
        bottom = [0.0] * len(r.apps)
        for ti, t in enumerate(types):
            counts = [
                float(((r.app_failures.get(a) or {}).get("failure_type_histogram") or {}).get(t, 0))
                for a in r.apps
            ]
            ax.bar(range(len(r.apps)), counts, bottom=bottom, label=t, color=cmap(ti % 10))
            bottom = [b + c for b, c in zip(bottom, counts, strict=True)]
        ax.set_xticks(range(len(r.apps)), list(r.apps), rotation=30, ha="right")
        ax.set_ylabel("failed tasks")
        ax.yaxis.set_major_locator(_integer_locator())  # counts: whole numbers only
        ax.set_title(f"{r.name}: failure type of the step that ended each task")
    _legend_outside(axes[0, 0])
    return _save(plt, fig, out_dir, "failure_types")


def _survival(plt: Any, runs: Sequence[Run], out_dir: Path) -> list[Path]:
    curves = [(r, s) for r in runs if (s := r.overall.get("survival") or [])]
    if not curves:
        return []  # live runs have none
    fig, ax = plt.subplots(figsize=(6, 4))
    for r, s in curves:
        ax.step(range(len(s)), [100 * v for v in s], where="post", marker="o", label=r.name)
    ax.set_xlabel("step k")
    ax.set_ylabel("tasks still alive after step k (%)")
    ax.set_ylim(0, 105)
    ax.set_title(f"Survival ({_caption(runs)})")
    ax.legend(fontsize="small")
    return _save(plt, fig, out_dir, "survival")


def _errors(plt: Any, runs: Sequence[Run], out_dir: Path) -> list[Path]:
    lim = _OFFSET_LIMIT
    points = []
    for r in runs:
        xs, ys = [], []
        for t in r.tasks:
            for s in t.steps:
                if s.outcome == "miss" and s.offset is not None:
                    xs.append(max(-lim, min(lim, s.offset[0])))
                    ys.append(max(-lim, min(lim, s.offset[1])))
        points.append((r, xs, ys))
    if not any(xs for _, xs, _ in points):
        return []  # no miss with a known target: nothing to place
    fig, ax = plt.subplots(figsize=(6, 6))
    for r, xs, ys in points:
        ax.scatter(xs, ys, s=12, alpha=0.6, label=f"{r.name} ({len(xs)} misses)")
    ax.add_patch(plt.Rectangle((-0.5, -0.5), 1, 1, fill=False, linestyle="--", color="black", lw=1))
    ax.set_xlim(-lim - 0.2, lim + 0.2)
    ax.set_ylim(lim + 0.2, -lim - 0.2)  # y grows downwards, as on the screen
    ax.set_aspect("equal")
    ax.set_xlabel("click x minus target centre (target widths)")
    ax.set_ylabel("click y minus target centre (target heights)")
    ax.set_title(f"Where the misses landed; dashed: the target (|offset| > {lim:g} at the edge)")
    ax.legend(fontsize="small")
    return _save(plt, fig, out_dir, "error_offsets")


def write_plots(runs: Sequence[Run], out_dir: Path, *, key: str = TCA) -> list[Path]:
    """Write every figure for `runs` into `out_dir` (PNG and SVG); returns the files."""
    plt = _pyplot()
    paths: list[Path] = []
    paths += _per_app(plt, runs, out_dir, key)
    paths += _failures(plt, runs, out_dir)
    paths += _survival(plt, runs, out_dir)
    paths += _errors(plt, runs, out_dir)
    return paths
